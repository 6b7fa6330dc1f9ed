package analysis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/rundir"
)

// The fixtures under testdata/telemetry are real telemetry.json files of
// `rig run scenarios/demo.yaml` (arm cpu1), trimmed to 10 intervals and
// shifted in time by trim.py so that the interval holding a virtio block
// IRQ burst covers request seq 100 of the synthetic rounds; error.json is
// the agent's form when telemetry cannot run.
const telFixtures = "testdata/telemetry"

func copyFixture(t *testing.T, name, roundDir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(telFixtures, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(roundDir, rundir.Telemetry), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// telRun writes a run whose arm "busy" has a 50 ms stall at seq 100 of
// each round, with the real fixtures as its telemetry; arm "base" has the
// error form in round 0 and no telemetry.json in round 1.
func telRun(t *testing.T) string {
	dir := t.TempDir()
	spec := genSpec{Arms: []string{"base", "busy"}, Rounds: 2, Count: 200, Warmup: 2, Seed: 7, Capture: true,
		Events: map[string]map[int]map[uint64]string{"busy": {0: {100: "slow"}, 1: {100: "slow"}}}}
	writeRun(t, dir, spec)
	copyFixture(t, "error.json", rundir.RoundDir(dir, "base", 0))
	copyFixture(t, "cpu1-round0.json", rundir.RoundDir(dir, "busy", 0))
	copyFixture(t, "cpu1-round1.json", rundir.RoundDir(dir, "busy", 1))
	return dir
}

func sectionMD(t *testing.T, rep *Report, arm string) string {
	t.Helper()
	i := slices.IndexFunc(rep.Telemetry, func(s TelemetrySection) bool { return s.Arm == arm })
	if i < 0 {
		t.Fatalf("no telemetry section for %s: %+v", arm, rep.Telemetry)
	}
	r := *rep
	r.Telemetry = rep.Telemetry[i : i+1]
	return telemetryText(&r)
}

func TestTelemetrySection(t *testing.T) {
	dir := telRun(t)
	rep, err := Run(dir, Options{}) // DefaultTelemetry
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 0 || rep.TelemetryFiles != 3 || len(rep.Telemetry) != 2 {
		t.Fatalf("problems %v, %d files, %d sections", rep.Problems, rep.TelemetryFiles, len(rep.Telemetry))
	}
	base := sectionMD(t, rep, "base")
	want := "No telemetry for 2 of 2 rounds: round 0: telemetry could not run: telemetry: every online CPU is the responder's or its sibling's; no CPU left to sample from; round 1: no telemetry.json."
	if strings.TrimSpace(strings.TrimPrefix(base, "### base\n\n")) != want {
		t.Fatalf("base section:\n%s", base)
	}

	md := sectionMD(t, rep, "busy")
	// Rates: median [min–max] of the rounds' per_sec, from the fixtures.
	var f0, f1 struct {
		Sources []struct {
			ID     string  `json:"id"`
			PerSec float64 `json:"per_sec"`
		} `json:"sources"`
	}
	for p, v := range map[string]any{"cpu1-round0.json": &f0, "cpu1-round1.json": &f1} {
		b, _ := os.ReadFile(filepath.Join(telFixtures, p))
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	perSec := func(f any, id string) float64 {
		for _, s := range f.(*struct {
			Sources []struct {
				ID     string  `json:"id"`
				PerSec float64 `json:"per_sec"`
			} `json:"sources"`
		}).Sources {
			if s.ID == id {
				return s.PerSec
			}
		}
		return 0
	}
	for _, id := range []string{"LOC", "NET_RX"} {
		a, b := perSec(&f0, id), perSec(&f1, id)
		lo, hi := min(a, b), max(a, b)
		cell := rate(lo) + " [" + rate(lo) + "–" + rate(hi) + "] | 2/2 |"
		if !strings.Contains(md, cell) {
			t.Errorf("no rate cell %q for %s in:\n%s", cell, id, md)
		}
	}
	for _, s := range []string{
		"| cpu1 irq LOC Local timer interrupts |",
		"| responder thread involuntary ctx switches |",
		"| cpu1 idle residency state1 haltpoll idle | ",
		"more moved less and are left out",
		// One scan per fixture round; the responder thread is not listed.
		"2 scans over the rounds",
		"| rig (responder process) |",
		// Both stalls are the worst samples, placed by req_rx_sw in the
		// interval of the block IRQ burst.
		"found by the request's CLOCK_REALTIME stamp (req_rx_sw)",
		"cpu1 irq 36 virtio1-req.0 ×86 (usual 4)",
		"cpu1 irq 36 virtio1-req.0 ×71 (usual 8)",
		"coincide with more than usual: ",
		// A later sample of an interval already shown refers to it.
		"| same interval as #1 | same interval as #1 |",
		"cpu1 irq 36 virtio1-req.0 (",
		"Telemetry notes: round 0: 2 failed reads (first: no such process)",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("busy section lacks %q:\n%s", s, md)
		}
	}
	if n := strings.Count(md, "\n| cpu1 ") + strings.Count(md, "\n| responder thread"); n > telTopSources+3 {
		t.Errorf("rate table not trimmed: %d rows", n)
	}
	// The worst rows are the two stalls, largest first, with round and seq.
	rows := tableRows(md, "| # |")
	if len(rows) != WorstSamples || !strings.Contains(rows[0], " | 100 | ") || !strings.Contains(rows[1], " | 100 | ") {
		t.Fatalf("worst rows: %q", rows)
	}

	// report.md and report.html of the run carry the section.
	if err := WriteAll(dir, rep); err != nil {
		t.Fatal(err)
	}
	rmd, _ := os.ReadFile(filepath.Join(dir, ReportMD))
	html, _ := os.ReadFile(filepath.Join(dir, ReportHTML))
	if !bytes.Contains(rmd, []byte("### busy\n\n")) || !bytes.Contains(rmd, []byte("virtio1-req.0 ×86 (usual 4)")) {
		t.Error("report.md lacks the busy section")
	}
	if !bytes.Contains(html, []byte("<h3>busy</h3>")) || !bytes.Contains(html, []byte("<td>cpu1 irq LOC Local timer interrupts</td>")) ||
		!bytes.Contains(html, []byte("no CPU left to sample from")) {
		t.Error("report.html lacks the telemetry tables")
	}
	if bytes.Contains(html, []byte("<script")) || bytes.Contains(html, []byte("http://")) || bytes.Contains(html, []byte("https://")) {
		t.Error("report.html is not self-contained")
	}
}

// tableRows returns the body rows of the Markdown table whose header
// starts with head.
func tableRows(md, head string) []string {
	var rows []string
	in := false
	for _, l := range strings.Split(md, "\n") {
		switch {
		case strings.HasPrefix(l, head):
			in = true
		case in && strings.HasPrefix(l, "|---"):
		case in && strings.HasPrefix(l, "|"):
			rows = append(rows, l)
		case in:
			return rows
		}
	}
	return rows
}

func TestTelemetryDamaged(t *testing.T) {
	good, err := os.ReadFile(filepath.Join(telFixtures, "cpu1-round0.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(good, &m); err != nil {
		t.Fatal(err)
	}
	iv := m["intervals"].([]any)
	iv[3].(map[string]any)["d"] = []any{1, 2}
	short, _ := json.Marshal(m)
	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"truncated":  {good[:len(good)/2], "damaged: unexpected end of JSON input"},
		"deltas":     {short, "damaged: interval 3 has 2 deltas for 16 sources"},
		"empty":      {[]byte("{}"), "damaged: no CPUs or no intervals"},
		"not json":   {[]byte("null\x00"), "damaged: invalid character"},
		"error form": {[]byte(`{"error": "responder not pinned"}`), "round 0: telemetry could not run: responder not pinned."},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, rundir.Telemetry), tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			bl, err := SummarizeTelemetry(&TelemetryArm{Arm: "a", Metric: Headline, Rounds: []TelemetryRound{{K: 0, Dir: dir}},
				Worst: []WorstSample{{Round: 0, Seq: 5, ValueNS: 1000, At: "req_rx_sw", AtNS: 1}}})
			if err != nil {
				t.Fatal(err)
			}
			if len(bl) != 1 || !strings.HasPrefix(bl[0].Text, "No telemetry for 1 of 1 rounds: round 0: ") || !strings.Contains(bl[0].Text, tc.want) {
				t.Fatalf("got %+v", bl)
			}
		})
	}
}

// Samples without a realtime stamp, outside the sampled time, in a round
// without telemetry, or an arm without the metric: each says so.
func TestTelemetryWorstPlacement(t *testing.T) {
	d0, d1 := t.TempDir(), t.TempDir()
	copyFixture(t, "cpu1-round0.json", d0)
	a := &TelemetryArm{Arm: "a", Metric: Headline, Source: "responder hw", Rounds: []TelemetryRound{{K: 0, Dir: d0}, {K: 1, Dir: d1}},
		Worst: []WorstSample{
			{Round: 0, Seq: 9, ValueNS: 9000},                                   // PHC stamps only
			{Round: 0, Seq: 8, ValueNS: 8000, At: "cap_req_sw", AtNS: t0 - 1e9}, // before the first interval
			{Round: 1, Seq: 7, ValueNS: 7000, At: "due", AtNS: t0 + 10e9},       // round without telemetry
			{Round: 0, Seq: 100, ValueNS: 6005, At: "req_rx_sw", AtNS: t0 + 100e6},
		}}
	bl, err := SummarizeTelemetry(a)
	if err != nil {
		t.Fatal(err)
	}
	var wt *TelemetryBlock
	for i := range bl {
		if len(bl[i].Head) > 0 && bl[i].Head[0] == "#" {
			wt = &bl[i]
		}
	}
	if wt == nil || len(wt.Rows) != 4 {
		t.Fatalf("no worst table: %+v", bl)
	}
	for i, want := range []string{"no CLOCK_REALTIME stamp", "outside the sampled time", "no telemetry: no telemetry.json", "+0.4 s, 100 ms"} {
		if !strings.Contains(strings.Join(wt.Rows[i], " | "), want) {
			t.Errorf("row %d %q lacks %q", i, wt.Rows[i], want)
		}
	}
	if v := wt.Rows[3][3]; v != "6.01" { // rounded as every table rounds (FormatUS)
		t.Errorf("worst value %q, want 6.01", v)
	}
	if !strings.Contains(wt.Text, "(cap_req_sw, due, req_rx_sw)") {
		t.Errorf("stamps used not named: %s", wt.Text)
	}
	if last := bl[len(bl)-2].Text; !strings.Contains(last, "The 1 worst samples placed (in 1 telemetry intervals) coincide with more than usual: cpu1 irq 36 virtio1-req.0 (1 of 1)") {
		t.Errorf("finding: %s", last)
	}
	a.Worst = nil
	bl, _ = SummarizeTelemetry(a)
	if !slices.ContainsFunc(bl, func(b TelemetryBlock) bool {
		return strings.Contains(b.Text, "turnaround was not computed for this arm")
	}) {
		t.Errorf("no-metric arm: %+v", bl)
	}
}

func TestKeepLargest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var all, top []WorstSample
	for i := range 1000 {
		w := WorstSample{Seq: uint64(i), ValueNS: r.Int64N(50)}
		all = append(all, w)
		top = keepLargest(top, w, 5)
	}
	if want := largest(all, 5); !slices.Equal(top, want) {
		t.Fatalf("keepLargest %v, want %v", top, want)
	}
	if got := largest(all[:3], 5); len(got) != 3 {
		t.Fatalf("largest of 3: %v", got)
	}
}

func TestIntervalAt(t *testing.T) {
	ivs := []rundir.TelemetryInterval{{Start: 10, End: 20}, {Start: 20, End: 30}, {Start: 35, End: 40}}
	r := &telResult{TelemetryResult: rundir.TelemetryResult{Intervals: ivs}}
	for tm, want := range map[int64]int{10: -1, 11: 0, 20: 0, 21: 1, 30: 1, 32: -1, 40: 2, 41: -1, 0: -1} {
		if got := r.at(tm); got != want {
			t.Errorf("at(%d) = %d, want %d", tm, got, want)
		}
	}
}

func FuzzDecodeTelemetry(f *testing.F) {
	for _, n := range []string{"cpu1-round0.json", "cpu1-round1.json", "error.json"} {
		b, err := os.ReadFile(filepath.Join(telFixtures, n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, int64(t0+100e6))
	}
	f.Add([]byte(`{"cpus":[1],"sources":[{"kind":"irq"}],"intervals":[{"start_ns":1,"end_ns":2,"d":[3],"threads":[0]}],"threads_seen":[{"tid":1}],"thread":{"tid":1}}`), int64(2))
	f.Fuzz(func(t *testing.T, b []byte, at int64) {
		r, err := decodeTelemetry(b)
		if err != nil {
			return
		}
		med := r.medianRates()
		for i := range r.Intervals {
			_ = r.busiest(i, 3)
			_ = r.unusual(i, med, 4)
		}
		if i := r.at(at); i >= 0 && (at <= r.Intervals[i].Start || at > r.Intervals[i].End) {
			t.Fatalf("at(%d) = interval %d %+v", at, i, r.Intervals[i])
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, rundir.Telemetry), b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := SummarizeTelemetry(&TelemetryArm{Arm: "a", Metric: Headline, Rounds: []TelemetryRound{{K: 0, Dir: dir}},
			Worst: []WorstSample{{Round: 0, ValueNS: 1, At: "req_rx_sw", AtNS: at}}}); err != nil {
			t.Fatal(err)
		}
	})
}

// The thread table says how busy the CPU was over each round — every task
// of the node, the names may cover less — and, from a container's PID
// namespace, that the names are partial and how to complete them.
func TestTelemetryBusyAndNames(t *testing.T) {
	var dirs []TelemetryRound
	for k, share := range []float64{0.42, 0.1} {
		b, err := os.ReadFile(filepath.Join(telFixtures, fmt.Sprintf("cpu1-round%d.json", k)))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		m["cpu_busy"] = []rundir.CPUBusy{{CPU: 1, WindowNS: 1e9, RunNS: share * 1e9, Share: share, Source: hostinfo.BusyStat}}
		if k == 1 {
			m["threads_note"] = "/proc shows only this PID namespace"
		}
		d := t.TempDir()
		b, _ = json.Marshal(m)
		if err := os.WriteFile(filepath.Join(d, rundir.Telemetry), b, 0o644); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, TelemetryRound{K: k, Dir: d})
	}
	bl, err := SummarizeTelemetry(&TelemetryArm{Arm: "a", Metric: Headline, Rounds: dirs})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(bl, func(b TelemetryBlock) bool { return len(b.Head) > 0 && b.Head[0] == "thread (comm)" })
	if i < 0 {
		t.Fatalf("no thread table: %+v", bl)
	}
	for _, want := range []string{"Busy (every task of the node, named or not; /proc/stat): CPU 1 10.0 % [10.0–42.0] in 2 rounds", "Names: /proc shows only this PID namespace."} {
		if !strings.Contains(bl[i].Text, want) {
			t.Errorf("thread table text lacks %q: %s", want, bl[i].Text)
		}
	}
}
