package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/analysis"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/testbin"
)

const floorArms = `name: itest-floor
emulate: netns
traffic:
  group: 239.66.0.4:7630
  interval: 1ms
  count: 300
  warmup: 2
timestamps: software
rounds: 1
order: sequential
baseline: go
arms:
  - name: floor
    responder: {engine: xdp}
  - name: go
    responder: {poll: block}
`

// TestRunFloor runs the reflector in driver mode beside the Go engine on
// the emulated topology: the lab readies the responder's switch port for
// the floor arm's round only, both arms answer every request, and the
// report labels the floor arm's turnaround as the floor.
func TestRunFloor(t *testing.T) {
	testbin.Integration(t)
	res, log, err := runYAML(t, t.TempDir(), "floor.yaml", floorArms)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log)
	}
	const n, warm = 300, 2
	for arm, engine := range map[string]any{"floor": "xdp", "go": nil} { // the Go engine is the default: no setting
		j, err := samples.JoinDir(rundir.RoundDir(res.Dir, arm, 0), 0)
		if err != nil {
			t.Fatalf("arm %s: %v", arm, err)
		}
		snd, rsp := j.Counters[samples.RoleSender], j.Counters[samples.RoleResponder]
		if e := j.Headers[samples.RoleResponder].Settings["engine"]; snd.Sent != n || snd.Received != n || rsp.Received != n || rsp.Sent != n || e != engine {
			t.Errorf("arm %s: sender %+v, responder %+v, engine %v", arm, snd, rsp, e)
		}
	}
	if got := strings.Count(log, "XDP pass program on"); got != 1 || !strings.Contains(log, "arm floor: XDP pass program on") {
		t.Errorf("the switch port was readied %d times, want once, for the floor arm:\n%s", got, log)
	}
	floor, goArm := res.Report.Arm("floor").Metrics[analysis.Turnaround], res.Report.Arm("go").Metrics[analysis.Turnaround]
	if floor == nil || goArm == nil {
		t.Fatalf("turnaround: floor %+v, go %+v", floor, goArm)
	}
	if floor.Source != "reflector floor: capture sw" || floor.Summary.N != n-warm || strings.HasPrefix(goArm.Source, "reflector") || goArm.Summary.N != n-warm {
		t.Errorf("turnaround: floor %q n %d, go %q n %d", floor.Source, floor.Summary.N, goArm.Source, goArm.Summary.N)
	}
	if md, err := os.ReadFile(filepath.Join(res.Dir, "tables.md")); err != nil || !bytes.Contains(md, []byte("reflector floor: capture sw")) {
		t.Errorf("tables.md does not label the floor: %v", err)
	}
	t.Logf("turnaround medians (software stamps, %d requests): floor %s %d ns, go %s %d ns",
		n-warm, floor.Source, floor.Summary.Median.MedianNS, goArm.Source, goArm.Summary.Median.MedianNS)
}
