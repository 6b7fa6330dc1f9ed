package power

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
)

// State is one CPU's power state as an arm left it: what a round ran
// under. The telemetry of every round records it, so that an arm that
// set a tuned profile is still explained by the values the profile set.
type State struct {
	CPU   int             `json:"cpu"`
	Freq  *hostinfo.Freq  `json:"cpufreq,omitempty"` // nil: no cpufreq on the CPU
	Turbo *hostinfo.Turbo `json:"turbo,omitempty"`   // nil: no turbo control
	// Idle lists the CPU's idle states in index order, "C6 (disabled)"
	// for the ones turned off.
	Idle []string `json:"idle,omitempty"`
	// Tuned is what `tuned-adm active` printed; "" when tuned is not
	// installed.
	Tuned string `json:"tuned,omitempty"`
	// Errors are the parts that could not be read.
	Errors []string `json:"errors,omitempty"`
}

// ReadState reads cpu's cpufreq policy, the turbo control, its idle
// states and, through t (nil: not asked), tuned-adm active. It never
// fails as a whole: what cannot be read is in Errors.
func ReadState(ctx context.Context, fs hostfs.FS, cpu int, t Tuned) *State {
	st := &State{CPU: cpu}
	fail := func(what string, err error) {
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			st.Errors = append(st.Errors, fmt.Sprintf("%s: %v", what, err))
		}
	}
	if f, err := hostinfo.ReadFreq(fs, cpu); err == nil {
		st.Freq = &f
	} else {
		fail("cpufreq", err)
	}
	if tb, err := hostinfo.ReadTurbo(fs); err == nil {
		st.Turbo = &tb
	} else {
		fail("turbo", err)
	}
	idle, err := hostinfo.ReadIdleStates(fs, cpu)
	fail("cpuidle", err)
	for _, s := range idle {
		n := s.Name
		if s.Disabled {
			n += " (disabled)"
		}
		st.Idle = append(st.Idle, n)
	}
	if t != nil {
		a, err := t.Active(ctx)
		switch {
		case errors.Is(err, ErrNoTuned):
		case err != nil:
			fail("tuned-adm active", err)
		default:
			st.Tuned = a.Output
		}
	}
	return st
}
