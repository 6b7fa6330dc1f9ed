package power

import (
	"context"
	"fmt"
	"strings"

	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
)

// Describe says what s and a tuned profile will change, one line per
// change, for `rig run --dry-run`. With fs (the host is this machine) each
// sysfs line carries the current value and the order of the writes; with
// t, the tuned line names the active profile.
func Describe(ctx context.Context, s Settings, tuned string, fs *hostfs.FS, t Tuned) []string {
	var out []string
	if tuned != "" {
		line := fmt.Sprintf("tuned: tuned-adm profile %s, first; at the end of the arm the previous profile comes back (tuned takes back its own changes)", tuned)
		if t != nil {
			if st, err := t.Active(ctx); err == nil {
				line += fmt.Sprintf(" [active now: %s]", orNone(st.Active))
			}
		}
		out = append(out, line)
	}
	if s.IsZero() {
		return out
	}
	if fs != nil {
		changes, err := Plan(*fs, s)
		if err == nil {
			for _, c := range changes {
				cur, _ := fs.ReadString(c.Path)
				out = append(out, fmt.Sprintf("power: %s: %s %s → %s", c.What, strings.TrimPrefix(c.Path, "/sys/devices/system/cpu/"), orNone(cur), c.Value))
			}
			return out
		}
		out = append(out, fmt.Sprintf("power: (current values unreadable here: %v)", err))
	}
	on := ""
	if len(s.CPUs) > 0 {
		on = " on CPU " + cpulist.Format(s.CPUs)
	}
	if s.Turbo != nil {
		out = append(out, fmt.Sprintf("power: turbo %s (%s/no_turbo or %s, whichever the host has; all CPUs)", onOff(*s.Turbo), short(hostinfo.IntelPstateDir), short(hostinfo.BoostPath)))
	}
	for _, x := range []struct {
		name string
		v    *int
	}{{"min-perf-pct", s.MinPerfPct}, {"max-perf-pct", s.MaxPerfPct}} {
		if x.v != nil {
			out = append(out, fmt.Sprintf("power: %s %d (%s/%s; all CPUs)", x.name, *x.v, short(hostinfo.IntelPstateDir), strings.ReplaceAll(x.name, "-", "_")))
		}
	}
	if s.Governor != "" {
		out = append(out, fmt.Sprintf("power: governor %s%s (cpufreq/scaling_governor)", s.Governor, on))
	}
	for _, x := range []struct {
		name, file string
		v          *int64
	}{{"min-freq", "scaling_min_freq", s.MinFreqKHz}, {"max-freq", "scaling_max_freq", s.MaxFreqKHz}} {
		if x.v != nil {
			out = append(out, fmt.Sprintf("power: %s %s%s (cpufreq/%s)", x.name, KHz(*x.v), on, x.file))
		}
	}
	return out
}

func short(p string) string { return strings.TrimPrefix(p, "/sys/devices/system/cpu/") }

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
