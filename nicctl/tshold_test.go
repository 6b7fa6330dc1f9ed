package nicctl

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/nicfake"
	"github.com/rig-project/rig/internal/tstamp"
)

// Hand-run probes of one run on one NIC (played in this process on lo,
// whose timestamping an mlx5 profile answers, each with its own lane):
// whichever exits first, the NIC's config stays in force until the last
// one exits, which puts back every probe's change, newest first.
func TestProbesShareTheNIC(t *testing.T) {
	ctx := context.Background()
	on := tstamp.HWTstampConfig{TxType: tstamp.TxOn, RxFilter: tstamp.FilterAll}
	for _, tt := range []struct {
		name      string
		needs     [2]tstamp.Need
		firstOut  int // which probe exits first
		afterIn   tstamp.HWTstampConfig
		afterOut1 tstamp.HWTstampConfig
		writes    int // SIOCSHWTSTAMP calls in all
	}{
		{"two responders, the writer exits first", [2]tstamp.Need{tstamp.NeedProbe, tstamp.NeedProbe}, 0, on, on, 2},
		{"two responders, the writer exits last", [2]tstamp.Need{tstamp.NeedProbe, tstamp.NeedProbe}, 1, on, on, 2},
		{"capture then responder, the capture exits first", [2]tstamp.Need{tstamp.NeedCapture, tstamp.NeedProbe}, 0, on, on, 4},
		{"capture then responder, the responder exits first", [2]tstamp.Need{tstamp.NeedCapture, tstamp.NeedProbe}, 1, on, on, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			n := nicfake.New(nicfake.MLX5(), "lo")
			env := &Env{NIC: facts.NIC{FS: hostfs.Default(), TS: n}, Clock: nicfake.NewClock()}
			var undo [2]func()
			for i, lane := range []string{"probe-a", "probe-b"} {
				req := TSRequest{Mode: tstamp.Auto, Need: tt.needs[i], AllowMgmt: true}
				_, u, err := HoldTimestamping(ctx, env, "lo", req, TSHold{Base: dir, RunID: "5eed", Lane: lane, Log: t.Logf})
				if err != nil {
					t.Fatal(err)
				}
				undo[i] = u
			}
			if n.Config() != tt.afterIn {
				t.Fatalf("both in: %s, want %s", n.Config(), tt.afterIn)
			}
			undo[tt.firstOut]()
			if n.Config() != tt.afterOut1 {
				t.Fatalf("one out: %s, want %s: the config was put back under the other probe", n.Config(), tt.afterOut1)
			}
			undo[1-tt.firstOut]()
			if n.Config() != (tstamp.HWTstampConfig{}) || n.Writes() != tt.writes {
				t.Fatalf("both out: %s, %d writes (%+v), want OFF/NONE and %d", n.Config(), n.Writes(), n.Sets(), tt.writes)
			}
			if lanes, _ := filepath.Glob(filepath.Join(dir, "lanes", "*")); len(lanes) != 0 {
				t.Fatalf("lanes left: %v", lanes)
			}
			if _, err := os.Stat(filepath.Join(dir, "shares", shareKey("lo")+".lanes")); !os.IsNotExist(err) {
				t.Fatalf("share record left: %v", err)
			}
		})
	}
}
