package power

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/rundir"
)

// ReadState reads cpu's cpufreq policy, the turbo control, its idle
// states and, through t (nil: not asked), tuned-adm active. It never
// fails as a whole: what cannot be read is in Errors.
func ReadState(ctx context.Context, fs hostfs.FS, cpu int, t Tuned) *rundir.PowerState {
	st := &rundir.PowerState{CPU: cpu}
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
