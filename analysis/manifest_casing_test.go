package analysis

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Knobs as manifests before the snake_case JSON names wrote them (Go field
// names) and as they are written now.
var (
	oldKnobs = map[string]any{"Responder": map[string]any{"CPU": 1, "Poll": map[string]any{"Mode": "busy-poll", "BusyPollUS": 50}},
		"NIC": map[string]any{"Coalesce": map[string]any{"AdaptiveRx": false, "RxUsecs": 0}, "Ring": map[string]any{}}, "SMTSibling": map[string]any{"StressNG": []string{"--cpu", "1"}}}
	newKnobs = map[string]any{"responder": map[string]any{"cpu": 1, "poll": map[string]any{"mode": "busy-poll", "busy_poll_us": 50}},
		"nic": map[string]any{"coalesce": map[string]any{"adaptive_rx": false, "rx_usecs": 0}, "ring": map[string]any{}}, "smt_sibling": map[string]any{"stress_ng": []string{"--cpu", "1"}}}
)

// withKnobs copies the golden run to parent/run with every arm's knobs
// (in the manifest's arms and scenario_effective) set to k.
func withKnobs(t *testing.T, parent string, k map[string]any) string {
	t.Helper()
	dir := filepath.Join(parent, "run")
	if err := os.CopyFS(dir, os.DirFS(goldenRun)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "manifest.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var eff []any
	for _, a := range m["arms"].([]any) {
		a.(map[string]any)["knobs"] = k
		eff = append(eff, map[string]any{"name": a.(map[string]any)["name"], "knobs": k})
	}
	m["scenario_effective"] = map[string]any{"name": "golden", "arms": eff}
	if b, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestManifestKnobCasings: rig report and rig compare read a run whose
// manifest.json has the knobs of older rigs (Go field names: "NIC",
// "AdaptiveRx") as they read one with today's snake_case names, with no
// problem and the same report.
func TestManifestKnobCasings(t *testing.T) {
	old := withKnobs(t, t.TempDir(), oldKnobs)
	cur := withKnobs(t, t.TempDir(), newKnobs)
	var out [2]bytes.Buffer
	var reps [2]*Report
	for i, dir := range []string{old, cur} {
		rep, err := Run(dir, Options{})
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if len(rep.Problems) != 0 {
			t.Errorf("%s: problems %v", dir, rep.Problems)
		}
		if err := WriteJSON(&out[i], rep); err != nil {
			t.Fatal(err)
		}
		reps[i] = rep
	}
	if !bytes.Equal(out[0].Bytes(), out[1].Bytes()) {
		t.Errorf("report.json of the old-cased manifest differs from the snake_case one:\n%s", firstDiff(out[0].Bytes(), out[1].Bytes()))
	}
	cmp, _ := CompareRuns(reps[0], reps[1])
	if len(cmp) == 0 {
		t.Fatal("compare old → new: no comparison rows")
	}
	for _, c := range cmp {
		if strings.Contains(c.Verdict, "not comparable") || strings.Contains(c.Verdict, "no data") {
			t.Errorf("compare old → new: %s %s %s: %s", c.Arm, c.Metric, c.Stat, c.Verdict)
		}
	}
}
