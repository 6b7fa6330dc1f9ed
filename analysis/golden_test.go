package analysis

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

var update = flag.Bool("update", false, "regenerate testdata/run (sample files) and the golden files in testdata/golden")

const goldenRun = "testdata/run"

// TestGolden pins tables.md, tables.csv, report.json and report.md (the
// summary, the plots' captions) of the committed run testdata/run. Run
// `go test ./analysis -run TestGolden -update` after an intended change and
// review the diff.
func TestGolden(t *testing.T) {
	if *update {
		if err := os.RemoveAll(goldenRun); err != nil {
			t.Fatal(err)
		}
		writeRun(t, goldenRun, goldenSpec)
	}
	rep, err := Run(goldenRun, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 0 {
		t.Fatalf("problems: %v", rep.Problems)
	}
	plots, err := Plots(rep)
	if err != nil {
		t.Fatal(err)
	}
	reportMD := func(w io.Writer, r *Report) error { return WriteReportMD(w, r, plots) }
	for _, g := range []struct {
		name string
		gen  func(io.Writer, *Report) error
	}{{TablesMD, WriteTablesMD}, {TablesCSV, WriteTablesCSV}, {ReportJSON, WriteJSON}, {ReportMD, reportMD}} {
		var b bytes.Buffer
		if err := g.gen(&b, rep); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", "golden", g.name)
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create)", err)
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("%s differs from %s (run `go test ./analysis -run TestGolden -update` and review the diff); got:\n%s", g.name, path, firstDiff(b.Bytes(), want))
		}
	}
}

func firstDiff(got, want []byte) string {
	gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := 0; i < max(len(gl), len(wl)); i++ {
		var g, w []byte
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if !bytes.Equal(g, w) {
			return "line " + strconv.Itoa(i+1) + ":\n got: " + string(g) + "\nwant: " + string(w)
		}
	}
	return ""
}

// TestGoldenCounts checks the injected events of the golden run land in the
// right columns, independent of the golden bytes.
func TestGoldenCounts(t *testing.T) {
	dir := t.TempDir()
	writeRun(t, dir, goldenSpec)
	rep, err := Run(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	base := rep.Arm("base").Metrics[Turnaround]
	if base.Source != "capture sw" || base.Formula != "cap_rep_sw − cap_req_sw" {
		t.Fatalf("source %q formula %q", base.Source, base.Formula)
	}
	r1 := base.Rounds[1]
	// 198 after warm-up: seq 5 lost, seq 150 has no cap_rep_sw (missing).
	if r1.Lost != 1 || r1.Duplicated != 1 || r1.Reordered != 1 || r1.Missing != 1 || r1.N != 196 {
		t.Fatalf("base round 1 turnaround counts %+v", r1.Counts)
	}
	if rt := rep.Arm("base").Metrics[RTT].Rounds[1]; rt.N != 197 || rt.Missing != 0 {
		t.Fatalf("base round 1 rtt counts %+v", rt.Counts)
	}
	if r2 := base.Rounds[2]; r2.NotSent != 1 || r2.N != 197 {
		t.Fatalf("base round 2 counts %+v", r2.Counts)
	}
	// isolated round 0: seq 1 is lost but in the warm-up; seq 11 is late:
	// not in the turnaround, but in lateness and rtt_from_due.
	if r0 := rep.Arm("isolated").Metrics[Turnaround].Rounds[0]; r0.Lost != 0 || r0.Late != 1 || r0.Duplicated != 1 || r0.N != 197 {
		t.Fatalf("isolated round 0 counts %+v", r0.Counts)
	}
	for _, m := range []string{Lateness, RTTFromDue} {
		if r0 := rep.Arm("isolated").Metrics[m].Rounds[0]; r0.Late != 1 || r0.N != 198 {
			t.Fatalf("isolated round 0 %s counts %+v: the late reply belongs in n", m, r0.Counts)
		}
	}
	// Every post-warm-up request is in exactly one bucket: n, missing and
	// negative within the metric's population, and the classes outside it.
	for _, a := range rep.Arms {
		for m, mr := range a.Metrics {
			for _, rs := range mr.Rounds {
				tot := rs.N + rs.Missing + rs.Negative + rs.NotSent
				switch m {
				case Lateness:
				case RTTFromDue:
					tot += rs.Lost
				default:
					tot += rs.Lost + rs.Late
				}
				if tot != goldenSpec.Count-goldenSpec.Warmup {
					t.Errorf("%s %s round %d: %+v do not add up to %d", a.Name, m, rs.Round, rs.Counts, goldenSpec.Count-goldenSpec.Warmup)
				}
				// The warm-up samples are 900 µs slow: none may show.
				if m == KernelToUser && *rs.WorstNS >= 900_000 {
					t.Errorf("%s round %d: warm-up sample in the statistics (worst %d)", a.Name, rs.Round, *rs.WorstNS)
				}
			}
		}
	}
	// Software clocks: no network metric, and the notes say why.
	if rep.Arm("base").Metrics[Network] != nil {
		t.Fatal("network computed from software clocks")
	}
	found := false
	for _, n := range rep.Notes {
		found = found || bytes.Contains([]byte(n), []byte("network not computed: needs hardware clocks"))
	}
	if !found {
		t.Fatalf("notes %q", rep.Notes)
	}
}
