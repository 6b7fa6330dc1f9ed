package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/analysis"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/testbin"
)

// TestRunFanoutDemo runs scenarios/fanout-demo.yaml (shortened to 1000
// requests a round) with its 2 responders and with 3: every round has a
// file per responder and each responder answered every request, the
// tables have a row per arm × responder and a paired comparison per arm
// and responder pair, stress-ng is gone, nothing is left on the host.
func TestRunFanoutDemo(t *testing.T) {
	testbin.Integration(t)
	testbin.StressNG(t)
	src, err := os.ReadFile("../../scenarios/fanout-demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{2, 3} {
		t.Run(strings.Repeat("r", n), func(t *testing.T) {
			text := strings.Replace(string(src), "count: 5000", "count: 1000", 1)
			if n == 3 {
				text = strings.Replace(text, "responders: 2", "responders: 3", 1)
				text = strings.Replace(text, "    responder1: {responder: {cpu: 1}}\n", "    responder1: {responder: {cpu: 1}}\n    responder2: {responder: {cpu: 1}}\n", 1)
			}
			dir := t.TempDir()
			s := loadYAML(t, dir, "fanout-demo.yaml", text)
			if len(s.Responders) != n {
				t.Fatalf("responders %v", s.Responders)
			}
			state := filepath.Join(dir, "state")
			var log bytes.Buffer
			res, err := Run(context.Background(), runOptions(t, dir, s, &log))
			if err != nil {
				t.Fatalf("run: %v\n%s", err, log.String())
			}
			m, err := rundir.ReadManifest(res.Dir)
			if err != nil || len(m.Responders) != n {
				t.Fatalf("manifest: %v, responders %v", err, m.Responders)
			}
			for _, a := range []string{"quiet", "stress1"} {
				for r := range 2 {
					for id := range n {
						j, err := samples.JoinDir(rundir.RoundDir(res.Dir, a, r), uint32(id))
						if err != nil {
							t.Fatalf("arm %s round %d responder %d: %v", a, r, id, err)
						}
						if j.Responders != n {
							t.Fatalf("arm %s round %d: %d responders", a, r, j.Responders)
						}
						if c := j.Counters[samples.RoleSender]; c.Sent != 1000 || c.Received != 1000 || len(j.Roles) != 3 {
							t.Errorf("arm %s round %d responder %d: sender %+v roles %v", a, r, id, c, j.Roles)
						}
					}
				}
			}
			rep := res.Report
			if rep == nil {
				t.Fatal("no report")
			}
			if len(rep.Arms) != 2*n || len(rep.Paired) != 2*(n-1) {
				t.Fatalf("report: %d arm rows, %d paired comparisons", len(rep.Arms), len(rep.Paired))
			}
			for _, p := range rep.Paired {
				if p.Stats.N < 1900 || p.Source == "" {
					t.Errorf("paired %s %s−%s: n %d source %q verdict %s", p.Arm, p.B, p.A, p.Stats.N, p.Source, p.Verdict)
				}
			}
			md, err := os.ReadFile(filepath.Join(res.Dir, analysis.TablesMD))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"Paired comparison of responders", "| stress1@responder1 |", "| quiet@responder |"} {
				if !bytes.Contains(md, []byte(want)) {
					t.Errorf("tables.md lacks %q", want)
				}
			}
			if testbin.StressNGRuns() {
				t.Error("stress-ng still running after the run")
			}
			if err := journal.CheckPending(state); err != nil {
				t.Errorf("journal left open entries: %v", err)
			}
			ents, _ := os.ReadDir(netlab.Dir())
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), "run") {
					if tp, err := netlab.Load(strings.TrimSuffix(e.Name(), ".json")); err == nil && tp.Responders() == n {
						t.Errorf("lab %s left behind", e.Name())
					}
				}
			}
		})
	}
}
