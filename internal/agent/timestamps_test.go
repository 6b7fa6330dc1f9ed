package agent

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/nicfake"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/nicctl"
)

// TestTimestampsHeldAsProbesHold: the agent prepares a NIC's timestamping
// for its run the way a hand-run probe does (nicctl.HoldTimestamping, on
// lo, whose timestamping an mlx5 profile answers): a probe of the run
// that relies on the config the agent switched on holds it, the agent's
// cleanup leaves it in force for that probe, and the probe, last to go,
// puts it back; no lane or share record is left.
func TestTimestampsHeldAsProbesHold(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	n := nicfake.New(nicfake.MLX5(), "lo")
	lock, err := journal.LockHost(dir, journal.Self("5eed")) // as Serve takes the run's
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock()
	s := &Server{FS: hostfs.Default(), StateDir: dir, LockDir: dir, RunID: "5eed", lock: lock,
		nic: &nicctl.Env{NIC: facts.NIC{FS: hostfs.Default(), TS: n}, Clock: nicfake.NewClock()}}
	v, err := s.timestamps(ctx, TimestampsArgs{Iface: "lo", Mode: "auto", Need: tstamp.NeedProbe, AllowMgmt: true})
	on := tstamp.HWTstampConfig{TxType: tstamp.TxOn, RxFilter: tstamp.FilterAll}
	if res, _ := v.(nicctl.TSResult); err != nil || !res.Changed || n.Config() != on {
		t.Fatalf("timestamps: %+v, %v; NIC %s, want %s", v, err, n.Config(), on)
	}
	env := &nicctl.Env{NIC: facts.NIC{FS: hostfs.Default(), TS: n}, Clock: nicfake.NewClock()}
	req := nicctl.TSRequest{Mode: tstamp.Auto, Need: tstamp.NeedProbe, AllowMgmt: true}
	_, leave, err := nicctl.HoldTimestamping(ctx, env, "lo", req, nicctl.TSHold{Base: dir, RunID: "5eed", Lane: "probe-1", Log: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	s.cleanup()
	if n.Config() != on {
		t.Fatalf("after the agent's cleanup: %s, want %s in force for the probe that relies on it", n.Config(), on)
	}
	leave()
	if n.Config() != (tstamp.HWTstampConfig{}) {
		t.Fatalf("after the probe left: %s, want OFF/NONE", n.Config())
	}
	for _, pattern := range []string{"lanes/*", "shares/*.lanes"} {
		if left, _ := filepath.Glob(filepath.Join(dir, pattern)); len(left) != 0 {
			t.Errorf("left: %v", left)
		}
	}
	if err := journal.CheckPending(dir); err != nil {
		t.Errorf("pending after both: %v", err)
	}
}
