package power

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/rundir"
)

// KindTuned is the journal kind of a tuned profile switch. Target is
// "tuned"; Previous is the profile that was active ("" = none: undo turns
// tuning off), AutoProfile and the profile when tuned had picked it itself
// (profile_mode auto: undo runs tuned-adm auto_profile, as tuned-adm
// profile would leave the host in manual mode). The profile's own changes
// (sysfs, PM QoS, IRQs) belong to tuned, which takes them back when the
// profile changes again.
const KindTuned = "tuned-profile"

// AutoProfile prefixes a recorded profile that tuned chose in its auto
// profile_mode.
const AutoProfile = "auto_profile:"

// ErrNoTuned is wrapped when tuned-adm is not installed.
var ErrNoTuned = errors.New("tuned is not installed (no tuned-adm)")

// Tuned is the tuned-adm seam: TunedAdm runs the real one; tests run a
// fake tuned-adm script through it.
type Tuned interface {
	// State lists the profiles and the active one; an error wrapping
	// ErrNoTuned when tuned is not installed.
	State(ctx context.Context) (rundir.TunedState, error)
	// Active returns the active profile ("" = none), whether the daemon
	// runs and the profile_mode.
	Active(ctx context.Context) (rundir.TunedState, error)
	// Switch activates profile (tuned-adm profile), lets tuned pick one
	// for AutoProfile+name (tuned-adm auto_profile), or turns tuning off
	// for "" (tuned-adm off), and waits for tuned to finish.
	Switch(ctx context.Context, profile string) error
}

// EnvTunedAdm names the tuned-adm that HostTuned runs (tests point it at
// a fake one).
const EnvTunedAdm = "RIG_TUNED_ADM"

// HostTuned is the tuned-adm for the host behind fs: $RIG_TUNED_ADM when
// set, else tuned-adm from $PATH on the real host, and none for a fake
// host root (a fake tree must never reach the real tuned).
func HostTuned(fs hostfs.FS) Tuned {
	if p := os.Getenv(EnvTunedAdm); p != "" {
		return TunedAdm{Path: p}
	}
	if fs.IsReal() {
		return TunedAdm{}
	}
	return noTuned{}
}

type noTuned struct{}

func (noTuned) State(context.Context) (rundir.TunedState, error) {
	return rundir.TunedState{}, fmt.Errorf("%w: a fake host root uses tuned only through $%s", ErrNoTuned, EnvTunedAdm)
}
func (n noTuned) Active(ctx context.Context) (rundir.TunedState, error) { return n.State(ctx) }
func (n noTuned) Switch(ctx context.Context, _ string) error {
	_, err := n.State(ctx)
	return err
}

// TunedAdm runs tuned-adm. Path "" looks it up in $PATH.
type TunedAdm struct {
	Path string
	// Timeout bounds one call; 0 means 3 minutes (a profile switch waits
	// for tuned to apply the whole profile).
	Timeout time.Duration
}

var _ Tuned = TunedAdm{}

func (t TunedAdm) run(ctx context.Context, args ...string) (stdout string, err error) {
	path := t.Path
	if path == "" {
		p, err := exec.LookPath("tuned-adm")
		if err != nil {
			return "", fmt.Errorf("%w: %v", ErrNoTuned, err)
		}
		path = p
	}
	to := t.Timeout
	if to == 0 {
		to = 3 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, to)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if err != nil {
		msg := strings.TrimSpace(errb.String() + " " + out.String())
		return out.String(), fmt.Errorf("tuned-adm %s: %w: %s", strings.Join(args, " "), err, msg)
	}
	return out.String(), nil
}

func (t TunedAdm) State(ctx context.Context) (rundir.TunedState, error) {
	out, err := t.run(ctx, "list")
	st, perr := ParseTunedAdm(out)
	if perr != nil {
		return st, errors.Join(err, perr)
	}
	// `tuned-adm list` exits 1 when no profile is active; the text says so.
	if err != nil && !errors.Is(err, ErrNoTuned) && len(st.Profiles) > 0 {
		err = nil
	}
	return st, err
}

func (t TunedAdm) Active(ctx context.Context) (rundir.TunedState, error) {
	out, err := t.run(ctx, "active")
	st, perr := ParseTunedAdm(out)
	if perr != nil {
		return st, errors.Join(err, perr)
	}
	// `tuned-adm active` exits 1 for "No current active profile."
	out, err = t.run(ctx, "profile_mode")
	if err != nil && strings.Contains(err.Error(), "invalid choice") {
		return st, nil // an older tuned-adm without profile_mode has no auto mode
	}
	mode, perr := ParseTunedAdm(out)
	if err = errors.Join(err, perr); err != nil {
		return st, err
	}
	st.Auto = mode.Auto
	return st, nil
}

func (t TunedAdm) Switch(ctx context.Context, profile string) error {
	if profile == "" {
		_, err := t.run(ctx, "off")
		return err
	}
	if strings.HasPrefix(profile, AutoProfile) {
		_, err := t.run(ctx, "auto_profile")
		return err
	}
	_, err := t.run(ctx, append([]string{"profile"}, strings.Fields(profile)...)...)
	return err
}

// ParseTunedAdm reads the text of `tuned-adm active` or `tuned-adm list`:
//
//	Available profiles:
//	- balanced                    - General non-specialized TuneD profile
//	- network-latency             - Optimize for deterministic performance ...
//	Current active profile: network-latency
//	Current post-loaded profile: ...
//
// or of `tuned-adm profile_mode` ("Profile selection mode: auto" or
// "manual"). "No current active profile." means none; "It seems that tuned daemon is
// not running ..." with "Preset profile: X" means X is set but not in
// force. Text with none of these lines is an error.
func ParseTunedAdm(out string) (rundir.TunedState, error) {
	st := rundir.TunedState{Output: strings.TrimSpace(out), Running: true}
	known := false
	inList := false
	for _, line := range strings.Split(out, "\n") {
		l := strings.TrimSpace(line)
		switch {
		case l == "Available profiles:":
			inList, known = true, true
		case inList && strings.HasPrefix(l, "- "):
			if name := strings.Fields(strings.TrimPrefix(l, "- ")); len(name) > 0 {
				st.Profiles = append(st.Profiles, name[0])
			}
		case strings.HasPrefix(l, "Current active profile:"):
			st.Active, known, inList = strings.TrimSpace(strings.TrimPrefix(l, "Current active profile:")), true, false
		case l == "No current active profile.":
			st.Active, known, inList = "", true, false
		case strings.HasPrefix(l, "It seems that tuned daemon is not running"):
			st.Running, known, inList = false, true, false
		case strings.HasPrefix(l, "Profile selection mode:"):
			mode := strings.TrimSpace(strings.TrimPrefix(l, "Profile selection mode:"))
			st.Auto, known = mode == "auto", mode == "auto" || mode == "manual"
		case strings.HasPrefix(l, "Preset profile:"):
			st.Active, known = strings.TrimSpace(strings.TrimPrefix(l, "Preset profile:")), true
		default:
			inList = inList && l != ""
		}
	}
	if !known {
		return st, fmt.Errorf("tuned-adm printed nothing rig knows: %q", clip(st.Output))
	}
	return st, nil
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// TunedChange is the journal change that activates profile through t.
// Its value is the profile; reading it back runs `tuned-adm active` and
// `tuned-adm profile_mode` (a profile tuned picked reads as AutoProfile
// and the profile).
func TunedChange(t Tuned, profile string) journal.Change {
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
		return AutoProfile + s.Active
	}
	return s.Active
}

// TunedUndo is the undo handler of KindTuned: it switches back to the
// previous profile (tuned-adm off when there was none, tuned-adm
// auto_profile when tuned had picked it).
func TunedUndo(t Tuned) journal.UndoFunc {
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

// Handlers are the undo handlers of the kinds this package journals
// besides journal.KindSysfs (which every rig command registers).
func Handlers(t Tuned) journal.Handlers {
	return journal.Handlers{KindTuned: TunedUndo(t)}
}

// hasProfile reports whether every name of a (merged) profile exists.
func hasProfile(s rundir.TunedState, p string) (missing string) {
	for _, n := range strings.Fields(p) {
		if !slices.Contains(s.Profiles, n) {
			return n
		}
	}
	return ""
}
