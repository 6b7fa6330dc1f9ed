// Package power sets the CPU frequency knobs of one arm on the responder
// host and takes them back: the cpufreq governor and frequency limits of
// chosen CPUs' policies, turbo (intel_pstate's no_turbo, or cpufreq's
// boost), intel_pstate's global performance limits, and a tuned profile.
//
// Every change goes through the journal: sysfs files as journal.KindSysfs
// (undone by the sysfs handler every rig command registers), the tuned
// profile as KindTuned (Handlers). Nothing changes a host that its facts
// (ReadFacts) say it cannot take: Validate refuses it first, with the
// reason, so a VM without cpufreq or a fixed-frequency AWS Graviton never
// gets a write.
//
// The frequency the responder CPU really ran at is measured elsewhere (the
// telemetry sampler, with hostinfo's MSR reader); this package only says
// what was asked for.
package power

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/rundir"
)

// Settings are the frequency knobs of one arm. A nil pointer or "" leaves
// the host's value.
type Settings struct {
	// CPUs whose cpufreq policy the governor and frequency limits change
	// (the responder CPU unless the scenario says otherwise). A policy
	// shared by several CPUs changes for all of them.
	CPUs     []int
	Governor string
	// Turbo, MinPerfPct and MaxPerfPct are global: every CPU.
	Turbo                  *bool
	MinPerfPct, MaxPerfPct *int
	// MinFreqKHz and MaxFreqKHz are scaling_min_freq and scaling_max_freq.
	MinFreqKHz, MaxFreqKHz *int64
}

// IsZero reports settings that change nothing.
func (s Settings) IsZero() bool {
	return s.Governor == "" && s.Turbo == nil && s.MinPerfPct == nil && s.MaxPerfPct == nil && s.MinFreqKHz == nil && s.MaxFreqKHz == nil
}

// PerCPU reports settings that act on CPUs' policies (and so need CPUs).
func (s Settings) PerCPU() bool {
	return s.Governor != "" || s.MinFreqKHz != nil || s.MaxFreqKHz != nil
}

// Facts is what validation needs to know about a host's frequency
// control. It travels from the agent to the controller as JSON.
type Facts struct {
	Arch string `json:"arch,omitempty"` // "x86_64", "aarch64"
	// Virtual is the "hypervisor" CPU flag: a VM, whose hypervisor owns
	// P-states unless it passes them through.
	Virtual bool `json:"virtual,omitempty"`
	// Freq is the cpufreq policy of every online CPU that has one.
	Freq map[int]rundir.Freq `json:"freq,omitempty"`
	// Turbo is the boost control; nil when there is none.
	Turbo *rundir.Turbo `json:"turbo,omitempty"`
	// Tuned is tuned's state; nil when tuned-adm is not installed.
	Tuned *rundir.TunedState `json:"tuned,omitempty"`
}

// ReadFacts reads the cpufreq policies of the online CPUs, the turbo
// control and, through t (nil: not asked), tuned. Missing facilities are
// empty fields, not errors.
func ReadFacts(ctx context.Context, fs hostfs.FS, t Tuned) (Facts, error) {
	var f Facts
	online, err := hostinfo.OnlineCPUs(fs)
	if err != nil {
		return f, err
	}
	f.Arch, _ = hostinfo.Arch(fs)
	flags, _ := hostinfo.CPUFlags(fs)
	f.Virtual = slices.Contains(flags, "hypervisor")
	for _, c := range online {
		fr, err := hostinfo.ReadFreq(fs, c)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return f, fmt.Errorf("cpu%d cpufreq: %w", c, err)
		}
		if f.Freq == nil {
			f.Freq = map[int]rundir.Freq{}
		}
		f.Freq[c] = fr
	}
	if tb, err := hostinfo.ReadTurbo(fs); err == nil {
		f.Turbo = &tb
	} else if !errors.Is(err, os.ErrNotExist) {
		return f, fmt.Errorf("turbo: %w", err)
	}
	if t != nil {
		st, err := t.State(ctx)
		switch {
		case errors.Is(err, ErrNoTuned):
		case err != nil:
			st.Err = err.Error()
			f.Tuned = &st
		default:
			f.Tuned = &st
		}
	}
	return f, nil
}

// noCpufreq says why a host has no cpufreq policy, from what it is.
func (f Facts) noCpufreq() string {
	switch {
	case f.Arch == "aarch64" && f.Virtual:
		return "an arm64 VM: the hypervisor owns the frequency"
	case f.Arch == "aarch64":
		return "an arm64 host without a cpufreq driver (AWS Graviton runs at a fixed frequency)"
	case f.Virtual:
		return "a VM: the hypervisor owns P-states"
	}
	return "no cpufreq driver is loaded (intel_pstate=disable without acpi-cpufreq, or firmware control)"
}
