package nicctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
)

// IRQBalanceState is what nicctl knows about the irqbalance daemon.
type IRQBalanceState struct {
	Running bool `json:"running"`
	PID     int  `json:"pid,omitempty"`
	// Systemd is true when the process runs in irqbalance.service.
	Systemd bool `json:"systemd"`
	// BannedCPUs is the cpulist irqbalance leaves alone, from its
	// environment (IRQBALANCE_BANNED_CPULIST, or the deprecated hex
	// IRQBALANCE_BANNED_CPUS); empty when neither is set, in which case
	// irqbalance bans isolated ∪ nohz_full CPUs by default.
	BannedCPUs   string `json:"banned_cpus,omitempty"`
	BannedSource string `json:"banned_source,omitempty"`
	// EnvErr says why the banned CPUs could not be read from the
	// environment (unreadable, or a list that does not parse).
	EnvErr string `json:"env_error,omitempty"`
}

// IRQBalancer reads, stops and starts irqbalance. HostIRQBalance is the
// real one; tests use fakes so no test touches the host's daemon.
type IRQBalancer interface {
	State(ctx context.Context) (IRQBalanceState, error)
	Stop(ctx context.Context) error
	Start(ctx context.Context) error
}

// HostIRQBalance finds irqbalance through /proc (below FS's root) and
// controls it with systemctl. An irqbalance not run by systemd is not
// stopped: nicctl could not start it again with the same arguments and
// environment, so Stop returns an error saying how to ban CPUs instead.
type HostIRQBalance struct {
	FS hostfs.FS
	// Run runs a command (systemctl); nil means os/exec.
	Run func(ctx context.Context, name string, args ...string) error
}

func (h HostIRQBalance) run(ctx context.Context, name string, args ...string) error {
	if h.Run != nil {
		return h.Run(ctx, name, args...)
	}
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// State finds irqbalance in /proc (the first by PID when several run) and
// reads its banned CPUs from its environment. An environment that cannot be
// read or a banned list that does not parse is said in EnvErr, not returned:
// the daemon still runs.
func (h HostIRQBalance) State(context.Context) (IRQBalanceState, error) {
	ps, err := hostinfo.FindProcesses(h.FS, "irqbalance")
	if err != nil || len(ps) == 0 {
		return IRQBalanceState{}, err
	}
	st := IRQBalanceState{Running: true, PID: ps[0].PID}
	dir := fmt.Sprintf("/proc/%d", st.PID)
	if cg, err := h.FS.ReadString(dir + "/cgroup"); err == nil {
		st.Systemd = strings.Contains(cg, "/irqbalance.service")
	}
	env, err := h.FS.ReadFile(dir + "/environ")
	if err != nil {
		st.EnvErr = err.Error()
		return st, nil
	}
	for _, kv := range bytes.Split(env, []byte{0}) {
		k, v, _ := strings.Cut(string(kv), "=")
		var cpus []int
		switch k {
		case "IRQBALANCE_BANNED_CPULIST":
			cpus, err = cpulist.Parse(v)
		case "IRQBALANCE_BANNED_CPUS": // deprecated hex mask
			if st.BannedSource != "" {
				continue
			}
			cpus, err = cpulist.ParseMask(v)
		default:
			continue
		}
		if err != nil {
			st.EnvErr = fmt.Sprintf("%s: %v", k, err)
			continue
		}
		st.BannedCPUs, st.BannedSource = cpulist.Format(cpus), k
	}
	return st, nil
}

// DefaultBanned names where irqbalance's banned CPUs come from when its
// environment sets none.
const DefaultBanned = "default (isolated ∪ nohz_full)"

// Banned returns the CPUs irqbalance leaves alone and where that list comes
// from: its environment, or else its default, the isolated and nohz_full
// CPUs of the host.
func (st IRQBalanceState) Banned(isolated, nohz []int) ([]int, string) {
	if st.BannedSource != "" {
		l, _ := cpulist.Parse(st.BannedCPUs) // State wrote it with cpulist.Format
		return l, st.BannedSource
	}
	from := DefaultBanned
	if st.EnvErr != "" {
		from += "; its environment: " + st.EnvErr
	}
	return cpulist.Union(isolated, nohz), from
}

// ErrNotSystemd is wrapped by Stop when irqbalance runs outside systemd.
var ErrNotSystemd = errors.New("irqbalance is not run by systemd")

// Stop stops irqbalance.service.
func (h HostIRQBalance) Stop(ctx context.Context) error {
	st, err := h.State(ctx)
	if err != nil || !st.Running {
		return err
	}
	if !st.Systemd {
		return fmt.Errorf("pid %d: %w; rig will not kill it (it could not restart it as it was): stop it yourself or restart it with IRQBALANCE_BANNED_CPULIST covering the measured CPUs", st.PID, ErrNotSystemd)
	}
	return h.run(ctx, "systemctl", "stop", "irqbalance.service")
}

// Start starts irqbalance.service.
func (h HostIRQBalance) Start(ctx context.Context) error {
	return h.run(ctx, "systemctl", "start", "irqbalance.service")
}
