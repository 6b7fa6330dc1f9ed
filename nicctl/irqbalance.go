package nicctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
)

// IRQBalancer reads, stops and starts irqbalance. HostIRQBalance is the
// real one; tests use fakes so no test touches the host's daemon.
type IRQBalancer interface {
	State(ctx context.Context) (facts.IRQBalanceState, error)
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

// State reads irqbalance's state below FS (facts.ReadIRQBalance).
func (h HostIRQBalance) State(context.Context) (facts.IRQBalanceState, error) {
	return facts.ReadIRQBalance(h.FS)
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
