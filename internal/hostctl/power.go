package hostctl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/power"
	"github.com/rig-project/rig/internal/rundir"
)

// KindTuned is the journal kind of a tuned profile switch. Target is
// "tuned"; Previous is the profile that was active ("" = none: undo turns
// tuning off), power.AutoProfile and the profile when tuned had picked it itself
// (profile_mode auto: undo runs tuned-adm auto_profile, as tuned-adm
// profile would leave the host in manual mode). The profile's own changes
// (sysfs, PM QoS, IRQs) belong to tuned, which takes them back when the
// profile changes again.
const KindTuned = "tuned-profile"

// applyPower makes the changes of power.Plan(fs, s) through j, each read back: a
// value the kernel did not take as written (clamped, snapped to a table,
// refused) is an error naming what it kept. On error the changes made so
// far stay journaled: the caller's undo takes them back. report says what
// each write did.
func applyPower(ctx context.Context, j *journal.Journal, fs hostfs.FS, s power.Settings) (report []string, err error) {
	changes, err := power.Plan(fs, s)
	if err != nil {
		return nil, err
	}
	for _, c := range changes {
		r, err := j.Apply(ctx, journal.SysfsChange(fs, fs.Root, c.Path, c.Value+"\n"))
		prev, eff := strings.TrimSpace(r.Previous), strings.TrimSpace(r.Effective)
		if err != nil {
			return report, fmt.Errorf("power: %s: %s: %w%s", c.What, c.Path, err, refusalHint(c, err))
		}
		report = append(report, fmt.Sprintf("power: %s: %s %s → %s", c.What, strings.TrimPrefix(c.Path, "/sys/devices/system/cpu/"), prev, eff))
		if eff != c.Value {
			return report, fmt.Errorf("power: %s: %s reads %q after writing %q: the kernel did not take the value (a limit clamps it, or another setting overrides it)", c.What, c.Path, eff, c.Value)
		}
	}
	return report, nil
}

func refusalHint(c power.Change, err error) string {
	switch {
	case errors.Is(err, syscall.EPERM) && strings.HasSuffix(c.Path, "no_turbo"):
		return " (intel_pstate refuses turbo on when the BIOS disabled it or the CPU has none)"
	case errors.Is(err, syscall.EBUSY) && strings.HasSuffix(c.Path, "scaling_governor"):
		return " (the policy is busy; another tool may hold it)"
	case errors.Is(err, syscall.EINVAL) && strings.HasSuffix(c.Path, "boost"):
		return " (the driver has no boost range on this CPU)"
	}
	return ""
}

// tunedChange is the journal change that activates profile through t.
// Its value is the profile; reading it back runs `tuned-adm active` and
// `tuned-adm profile_mode` (a profile tuned picked reads as power.AutoProfile
// and the profile).
func tunedChange(t power.Tuned, profile string) journal.Change {
	return journal.Change{
		Kind: KindTuned, Target: "tuned", Value: profile,
		Read: func(ctx context.Context) (string, error) {
			st, err := t.Active(ctx)
			if err != nil {
				return "", err
			}
			if !st.Running {
				return "", fmt.Errorf("tuned does not run (profile %q is only preset): start it (systemctl start tuned)", st.Active)
			}
			return recorded(st), nil
		},
		Write: func(ctx context.Context, v string) error { return t.Switch(ctx, v) },
	}
}

// recorded is the active profile as the journal keeps it.
func recorded(s rundir.TunedState) string {
	if s.Auto && s.Active != "" {
		return power.AutoProfile + s.Active
	}
	return s.Active
}

// tunedUndo is the undo handler of KindTuned: it switches back to the
// previous profile (tuned-adm off when there was none, tuned-adm
// auto_profile when tuned had picked it).
func tunedUndo(t power.Tuned) journal.UndoFunc {
	return func(ctx context.Context, e journal.Entry) (string, error) {
		if err := t.Switch(ctx, e.Previous); err != nil {
			return "", err
		}
		st, err := t.Active(ctx)
		if err != nil {
			return "", err
		}
		if got := recorded(st); got != e.Previous {
			return got, fmt.Errorf("tuned-adm active and profile_mode say %q after switching back to %q", got, e.Previous)
		}
		return recorded(st), nil
	}
}
