package power

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
)

// Change is one sysfs write that puts a setting in force.
type Change struct {
	Path  string // host path
	Value string // without the newline
	What  string // "turbo off", "governor performance on CPU 3", ...
}

// Plan lists the sysfs writes that put s in force on the host behind fs,
// in the order to make them, so that undoing them in reverse puts every
// file back. A turbo write changes other files too: intel_pstate's
// no_turbo 1 squashes min_perf_pct (to the base frequency's share of the
// turbo one, never raised again) and, like amd-pstate's boost 0, clamps
// every policy's scaling_min/max_freq to the base frequency until turbo
// comes back. So with turbo set on intel_pstate, min_perf_pct's current
// value is written first (the journal keeps it for the end), the policies'
// governor and limits are written while turbo is on (before a turbo off,
// after a turbo on: their previous values and read-backs are unclamped),
// and the global perf limits after turbo (no_turbo 1 would squash them).
// A limit pair is written in the order that never has min above max on
// the way. CPUs that share a policy get one write. Errors: the host lacks
// the control (wrapping errors.ErrUnsupported) or a file cannot be read.
func Plan(fs hostfs.FS, s Settings) ([]Change, error) {
	var out, turbo, policies []Change
	if s.Turbo != nil {
		t, err := hostinfo.ReadTurbo(fs)
		if err != nil {
			return nil, fmt.Errorf("turbo: %w (no %s/no_turbo or %s): %w", err, hostinfo.IntelPstateDir, hostinfo.BoostPath, errors.ErrUnsupported)
		}
		v := "1" // boost on
		if t.IntelPstate() == *s.Turbo {
			v = "0" // no_turbo 0 = turbo on; boost 0 = off
		}
		if t.IntelPstate() && t.MinPerfPct > 0 {
			cur := strconv.FormatInt(t.MinPerfPct, 10)
			out = append(out, Change{hostinfo.IntelPstateDir + "/min_perf_pct", cur, "min-perf-pct " + cur + " recorded (no_turbo 1 lowers it: the restore writes it back last)"})
		}
		turbo = []Change{{t.Source, v, "turbo " + onOff(*s.Turbo)}}
	}
	var perf []Change
	if s.MinPerfPct != nil || s.MaxPerfPct != nil {
		cur, err := fs.ReadInt(hostinfo.IntelPstateDir + "/max_perf_pct")
		if err != nil {
			return nil, fmt.Errorf("min/max-perf-pct: %w: %w", err, errors.ErrUnsupported)
		}
		perf = limitPair(hostinfo.IntelPstateDir+"/min_perf_pct", hostinfo.IntelPstateDir+"/max_perf_pct",
			ptr64(s.MinPerfPct), ptr64(s.MaxPerfPct), cur)
		for i := range perf {
			perf[i].What = strings.ReplaceAll(strings.TrimPrefix(perf[i].Path, hostinfo.IntelPstateDir+"/"), "_", "-") + " " + perf[i].Value + " (all CPUs)"
		}
	}
	if s.PerCPU() {
		var err error
		if policies, err = policyChanges(fs, s); err != nil {
			return nil, err
		}
	}
	if s.Turbo != nil && !*s.Turbo {
		return slices.Concat(out, policies, turbo, perf), nil
	}
	return slices.Concat(out, turbo, perf, policies), nil
}

// policyChanges are the governor and frequency limits of s.CPUs' policies.
func policyChanges(fs hostfs.FS, s Settings) ([]Change, error) {
	if len(s.CPUs) == 0 {
		return nil, errors.New("power: governor and frequency limits need CPUs (responder.cpu or power.cpus)")
	}
	var out []Change
	done := map[int]bool{}
	for _, cpu := range s.CPUs {
		if done[cpu] {
			continue
		}
		fr, err := hostinfo.ReadFreq(fs, cpu)
		if err != nil {
			return nil, fmt.Errorf("CPU %d cpufreq: %w: %w", cpu, err, errors.ErrUnsupported)
		}
		done[cpu] = true
		for _, c := range fr.RelatedCPUs {
			done[c] = true
		}
		on := fmt.Sprintf(" on CPU %d", cpu)
		if s.Governor != "" {
			out = append(out, Change{hostinfo.CPUFreqPath(cpu, "scaling_governor"), s.Governor, "governor " + s.Governor + on})
		}
		pair := limitPair(hostinfo.CPUFreqPath(cpu, "scaling_min_freq"), hostinfo.CPUFreqPath(cpu, "scaling_max_freq"),
			s.MinFreqKHz, s.MaxFreqKHz, fr.MaxKHz)
		for i := range pair {
			k, _ := strconv.ParseInt(pair[i].Value, 10, 64)
			name := "min-freq "
			if strings.HasSuffix(pair[i].Path, "max_freq") {
				name = "max-freq "
			}
			pair[i].What = name + KHz(k) + on
		}
		out = append(out, pair...)
	}
	return out, nil
}

// limitPair orders the writes of a min/max pair: max first when the new
// min is above the current max (raising both), else min first.
func limitPair(minPath, maxPath string, newMin, newMax *int64, curMax int64) []Change {
	var out []Change
	if newMin != nil {
		out = append(out, Change{Path: minPath, Value: strconv.FormatInt(*newMin, 10)})
	}
	if newMax != nil {
		out = append(out, Change{Path: maxPath, Value: strconv.FormatInt(*newMax, 10)})
		if newMin != nil && *newMin > curMax {
			out[0], out[1] = out[1], out[0]
		}
	}
	return out
}

func ptr64(p *int) *int64 {
	if p == nil {
		return nil
	}
	v := int64(*p)
	return &v
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
