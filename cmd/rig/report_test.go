package main

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/analysis"
	"github.com/rig-project/rig/internal/hostfs/hostfstest"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/testbin"
)

// TestReportCompareExitCodes drives `rig report` and `rig compare` through
// the binary's entry point: 0 clean, 1 unreadable, 2 bad usage, 3 reported
// with problems.
func TestReportCompareExitCodes(t *testing.T) {
	dir := hostfstest.CopyTree(t, "../../analysis/testdata/run")
	broken := hostfstest.CopyTree(t, "../../analysis/testdata/run")
	if err := os.WriteFile(filepath.Join(broken, "manifest.json"), []byte("not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	// An interrupted run: reported, and exit 3 (a script must not take it
	// for a clean one).
	interrupted := hostfstest.CopyTree(t, "../../analysis/testdata/run")
	m, err := rundir.ReadManifest(interrupted)
	if err != nil {
		t.Fatal(err)
	}
	m.Interrupted = "arm base round 2: interrupt"
	if err := rundir.WriteJSON(filepath.Join(interrupted, rundir.ManifestFile), m); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"report", interrupted}, 3},
		{[]string{"report", dir}, 0},
		{[]string{"report", dir, "--format", "csv", "--metric", "rtt"}, 0},
		{[]string{"report", "--format", "json", dir}, 0},
		{[]string{"report", dir, "--write"}, 0},
		{[]string{"report", dir, "--format", "xml"}, 2},
		{[]string{"report", dir, "--metric", "bogus"}, 2},
		{[]string{"report", dir, "--warmup", "-5"}, 2},
		{[]string{"report"}, 2},
		{[]string{"report", filepath.Join(dir, "no-such")}, 1},
		{[]string{"report", broken}, 3},
		{[]string{"compare", dir, dir}, 0},
		{[]string{"compare", dir, dir, "--format", "json"}, 0},
		{[]string{"compare", dir}, 2},
		{[]string{"compare", dir, broken}, 3},
	} {
		if code := run(c.args); code != c.want {
			t.Errorf("rig %s: exit %d, want %d", strings.Join(c.args, " "), code, c.want)
		}
	}
	for _, f := range []string{"tables.md", "tables.csv", "report.json", "report.md", "report.html", "hist.hlog", "plots/percentiles-turnaround.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("--write: %v", err)
		}
	}
}

// TestReportForgedStamps: a sample file with valid CRCs and stamps no clock
// gives (tx_sw = 2^63−1, rx_sw = −(2^63−1): rx_sw − tx_sw overflows int64
// to 2 ns) is a problem counted and shown, never an rtt sample, and
// `rig report` exits 3.
func TestReportForgedStamps(t *testing.T) {
	dir := hostfstest.CopyTree(t, testRun)
	p := filepath.Join(dir, "arms", "base", "round-0", samples.FileName(samples.RoleSender))
	f, err := samples.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	w := f.Header.Warmup
	r := &f.Records[w+3]
	r.T[samples.TxSW], r.T[samples.RxSW] = math.MaxInt64, -math.MaxInt64
	if err := samples.WriteFile(p, f.Header, f.Records, *f.Footer); err != nil {
		t.Fatal(err)
	}
	code, out, errs := rigIn(t, "report", dir, "--format", "json")
	if code != 3 || !strings.Contains(errs, "round 0: rtt (sender sw, rx_sw − tx_sw): 1 overflowing values, beyond int64") {
		t.Fatalf("rig report: exit %d, stderr:\n%s", code, errs)
	}
	var rep analysis.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	rtt := rep.Arm("base").Metrics[analysis.RTT]
	if rs := rtt.Rounds[0]; rs.Overflow != 1 || *rs.MinNS < 1000 || rtt.Summary.Overflow != 1 {
		t.Fatalf("rtt round 0 %+v min %d ns: want the forged record counted as overflow, never a sample", rs.Counts, *rs.MinNS)
	}
}

// TestSamplesDanglingSymlink: a round whose responder.samples is a symlink
// to a file that is gone is not a round without a responder: rig samples
// names the file and why, and exits 1, for responder 0's file and for
// another responder's.
func TestSamplesDanglingSymlink(t *testing.T) {
	for _, name := range []string{samples.FileName(samples.RoleResponder), samples.ResponderFileName(1)} {
		dir := hostfstest.CopyTree(t, testRound)
		link, gone := filepath.Join(dir, name), filepath.Join(t.TempDir(), "moved.samples")
		if err := os.Remove(link); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := os.Symlink(gone, link); err != nil {
			t.Fatal(err)
		}
		code, out, errs := rigIn(t, "samples", dir)
		if code != 1 || out != "" || !strings.Contains(errs, link+" is a symlink to "+gone+", which cannot be read") {
			t.Errorf("rig samples with %s dangling: exit %d, stdout %d bytes, stderr:\n%s", name, code, len(out), errs)
		}
	}
}

// TestCompareNoiseJSON: rig compare --format json sets the noise windows
// of the arm both runs measured side by side, with the rule.
func TestCompareNoiseJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the rig binary")
	}
	var dirs [2]string
	for i, rate := range []float64{100, 40} {
		dirs[i] = hostfstest.CopyTree(t, "../../analysis/testdata/run")
		n := rundir.Noise{CPU: 1, DurationNS: 2e8, LongestNS: uint64(rate) * 1000, Rule: "r",
			Counter: rundir.NoiseCounter{Name: "TSC"}, Gaps: []rundir.NoiseRow{{AboveNS: 1000, Count: uint64(rate / 5), PerSec: rate}}}
		if err := rundir.WriteJSON(filepath.Join(rundir.RoundDir(dirs[i], "isolated", 0), rundir.NoiseFile), n); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(testbin.Rig(t), "compare", dirs[0], dirs[1], "--format", "json").Output()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	var got struct {
		Noise []analysis.NoiseDelta `json:"noise"`
		Rule  string                `json:"noise_rule"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(got.Noise) != 1 || got.Noise[0].Arm != "isolated" || got.Noise[0].PerSecA[0] != 100 || got.Noise[0].PerSecB[0] != 40 ||
		got.Noise[0].LongestB != 40000 || got.Rule != analysis.NoiseRule {
		t.Errorf("noise %+v rule %q", got.Noise, got.Rule)
	}
}
