package nicctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"strconv"
	"strings"

	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/hostfs"
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

// State scans /proc/*/comm for irqbalance.
func (h HostIRQBalance) State(context.Context) (IRQBalanceState, error) {
	comms, err := h.FS.Glob("/proc/[0-9]*/comm")
	if err != nil {
		return IRQBalanceState{}, err
	}
	for _, c := range comms {
		comm, err := h.FS.ReadString(c)
		if err != nil || comm != "irqbalance" {
			continue // processes come and go while we scan
		}
		dir := path.Dir(c)
		pid, _ := strconv.Atoi(path.Base(dir))
		st := IRQBalanceState{Running: true, PID: pid}
		if cg, err := h.FS.ReadString(dir + "/cgroup"); err == nil {
			st.Systemd = strings.Contains(cg, "/irqbalance.service")
		}
		if env, err := h.FS.ReadFile(dir + "/environ"); err == nil {
			for _, kv := range bytes.Split(env, []byte{0}) {
				k, v, _ := strings.Cut(string(kv), "=")
				switch k {
				case "IRQBALANCE_BANNED_CPULIST":
					st.BannedCPUs, st.BannedSource = v, k
				case "IRQBALANCE_BANNED_CPUS":
					if st.BannedSource == "" {
						if cpus, err := cpulist.ParseMask(v); err == nil {
							st.BannedCPUs, st.BannedSource = cpulist.Format(cpus), k
						}
					}
				}
			}
		}
		return st, nil
	}
	return IRQBalanceState{}, nil
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
