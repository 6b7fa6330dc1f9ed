package analysis

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/rundir"
)

// TestHostChangesSection: the rounds' host-changes.txt are a Host changes
// section per arm and host, identical rounds on one row and a round that
// differs on its own, in tables.md, report.md, report.html and
// report.json; a run without them has neither; a damaged file is a
// problem and its round shows nothing.
func TestHostChangesSection(t *testing.T) {
	dir := t.TempDir()
	spec := goldenSpec
	spec.Events = nil
	writeRun(t, dir, spec)
	rep, err := Run(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.HostChanges) != 0 || strings.Contains(js.String(), "host_changes") || len(hostChangesTable(rep).Rows) != 0 {
		t.Fatalf("a run without host-changes.txt: %+v", rep.HostChanges)
	}
	held := "[rsp1] IRQ 27 (eth1-rx-0): CPU 2 → CPUs 0-1\n[rsp2] CPU 3 offline\n[rsp1] held to the end of the arm\n[rsp2] held to the end of the arm\n"
	back := "[rsp1] IRQ 27 (eth1-rx-0): CPU 2 → CPUs 0-1\n[rsp2] CPU 3 offline\n[rsp1] came back: IRQ 27 on CPU 2\n[rsp2] held to the end of the arm\n"
	for k, s := range []string{held, back, held} {
		if err := os.WriteFile(filepath.Join(rundir.RoundDir(dir, "isolated", k), rundir.HostChanges), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep, err = Run(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []HostChanges{
		{Arm: "isolated", Host: "rsp1", Rounds: []int{0, 2}, Lines: []string{"IRQ 27 (eth1-rx-0): CPU 2 → CPUs 0-1", "held to the end of the arm"}},
		{Arm: "isolated", Host: "rsp1", Rounds: []int{1}, Lines: []string{"IRQ 27 (eth1-rx-0): CPU 2 → CPUs 0-1", "came back: IRQ 27 on CPU 2"}},
		{Arm: "isolated", Host: "rsp2", Rounds: []int{0, 1, 2}, Lines: []string{"CPU 3 offline", "held to the end of the arm"}},
	}
	if !slices.EqualFunc(rep.HostChanges, want, func(a, b HostChanges) bool {
		return a.Arm == b.Arm && a.Host == b.Host && slices.Equal(a.Rounds, b.Rounds) && slices.Equal(a.Lines, b.Lines)
	}) || len(rep.Problems) != 0 {
		t.Fatalf("host changes %+v, problems %q", rep.HostChanges, rep.Problems)
	}
	js.Reset()
	if err := WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	var back2 struct {
		HostChanges []HostChanges `json:"host_changes"`
	}
	if err := json.Unmarshal(js.Bytes(), &back2); err != nil || len(back2.HostChanges) != 3 || back2.HostChanges[1].Rounds[0] != 1 {
		t.Errorf("report.json host_changes %+v, %v", back2.HostChanges, err)
	}
	var md, rmd, page bytes.Buffer
	if err := WriteTablesMD(&md, rep); err != nil {
		t.Fatal(err)
	}
	if err := WriteReportMD(&rmd, rep, nil); err != nil {
		t.Fatal(err)
	}
	if err := WriteReportHTML(&page, rep, nil); err != nil {
		t.Fatal(err)
	}
	for file, out := range map[string]string{"tables.md": md.String(), "report.md": rmd.String()} {
		for _, w := range []string{"## Host changes",
			"| isolated | rsp1 | rounds 0, 2 | IRQ 27 (eth1-rx-0): CPU 2 → CPUs 0-1 · held to the end of the arm |",
			"| isolated | rsp1 | round 1 | IRQ 27 (eth1-rx-0): CPU 2 → CPUs 0-1 · came back: IRQ 27 on CPU 2 |",
			"| isolated | rsp2 | rounds 0–2 | CPU 3 offline · held to the end of the arm |"} {
			if !strings.Contains(out, w) {
				t.Errorf("%s lacks %q:\n%s", file, w, out)
			}
		}
	}
	if !strings.Contains(page.String(), "<h2>Host changes</h2>") || !strings.Contains(page.String(), "came back: IRQ 27 on CPU 2") {
		t.Errorf("report.html lacks the Host changes section")
	}
	if err := os.WriteFile(filepath.Join(rundir.RoundDir(dir, "isolated", 1), rundir.HostChanges), []byte("IRQ 27 moved\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, err = Run(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.HostChanges) != 2 || !strings.Contains(strings.Join(rep.Problems, "\n"), `arm "isolated" round 1: `) {
		t.Errorf("with round 1 damaged: %+v, problems %q", rep.HostChanges, rep.Problems)
	}
}
