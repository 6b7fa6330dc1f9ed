package telemetry

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/rundir"
)

// freqMeter is the sampler's frequency source, opened by New.
type freqMeter struct {
	cpu  int
	msr  *hostinfo.MSR
	cur  *hostinfo.File
	note string
	// ends are the counters at the first and the last sample.
	ends [2]msrSample
	kHz  []uint64 // scaling_cur_freq per sample, 0 = failed read
}

// msrSample is one reading of the effective-frequency counters and the
// TSC, with CLOCK_MONOTONIC_RAW (not slewed by NTP) taken next to the TSC.
type msrSample struct {
	aperf, mperf, tsc uint64
	ns                int64
	ok                bool
}

// openFreq picks the best source for cpu: APERF/MPERF with the TSC when
// the msr driver is there and the three registers read; else
// scaling_cur_freq; else none, with the reasons.
func (s *Sampler) openFreq(cpu int) {
	fs := s.cfg.FS
	fm := &freqMeter{cpu: cpu}
	s.freq = fm
	var why []string
	m, err := hostinfo.OpenMSR(fs, cpu)
	switch {
	case errors.Is(err, os.ErrNotExist):
		why = append(why, fmt.Sprintf("no %s (the msr driver is not loaded: modprobe msr)", hostinfo.MSRPath(cpu)))
	case err != nil:
		why = append(why, fmt.Sprintf("APERF/MPERF: %v", err))
	default:
		_, e1 := m.Read(hostinfo.MSRMPERF)
		_, e2 := m.Read(hostinfo.MSRAPERF)
		_, e3 := m.Read(hostinfo.MSRTSC)
		if err := errors.Join(e1, e2, e3); err != nil {
			m.Close()
			why = append(why, fmt.Sprintf("APERF/MPERF: %v", err))
		} else {
			fm.msr = m
			fm.note = "APERF, MPERF and the TSC are read at the round's first and last sample only: each read is an IPI to the measured CPU"
			return
		}
	}
	p := hostinfo.CPUFreqPath(cpu, "scaling_cur_freq")
	f, err := hostinfo.Open(fs, p)
	if err == nil {
		if _, err = f.ReadAll(s.small); err != nil {
			f.Close()
		}
	}
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			why = append(why, fmt.Sprintf("no cpufreq on CPU %d (%s absent)", cpu, p))
		} else {
			why = append(why, err.Error())
		}
		fm.note = strings.Join(why, "; ")
		return
	}
	fm.cur = f
	fm.kHz = make([]uint64, s.cfg.MaxSamples)
	fm.note = strings.Join(why, "; ")
}

// readMSR reads the TSC, MPERF and APERF into the start (end=false) or
// end slot. It does not allocate.
func (fm *freqMeter) readMSR(end bool) {
	if fm.msr == nil {
		return
	}
	tsc, e0 := fm.msr.Read(hostinfo.MSRTSC)
	ns, e1 := hostinfo.MonotonicRaw()
	m, e2 := fm.msr.Read(hostinfo.MSRMPERF)
	a, e3 := fm.msr.Read(hostinfo.MSRAPERF)
	i := 0
	if end {
		i = 1
	}
	fm.ends[i] = msrSample{aperf: a, mperf: m, tsc: tsc, ns: ns, ok: e0 == nil && e1 == nil && e2 == nil && e3 == nil}
}

// sampleCur reads scaling_cur_freq for sample i. It does not allocate.
func (s *Sampler) sampleCur(i int) {
	fm := s.freq
	if fm == nil || fm.cur == nil {
		return
	}
	b, err := fm.cur.ReadAll(s.small)
	if err != nil {
		s.fail(err)
		return
	}
	v, ok := hostinfo.ParseUint(b)
	if !ok {
		s.fail(errNotNumber)
		return
	}
	fm.kHz[i] = v
}

func (fm *freqMeter) close() {
	if fm.msr != nil {
		fm.msr.Close()
	}
	if fm.cur != nil {
		fm.cur.Close()
	}
}

// result computes the round's frequency from n samples.
func (fm *freqMeter) result(n int) *rundir.FreqResult {
	r := &rundir.FreqResult{CPU: fm.cpu, Source: rundir.FreqNone, Note: fm.note}
	switch {
	case fm.msr != nil:
		// turbostat's Bzy_MHz without a known base frequency, and its Busy%:
		// MPERF counts at the TSC's rate while the CPU is not idle (on AMD,
		// and on hybrid Intel's E-cores, that is not the CPU's own base).
		r.Source, r.Rule = rundir.FreqAPERF, rundir.RuleAPERFTSC
		s0, s1 := fm.ends[0], fm.ends[1]
		da, dm, dt, ns := s1.aperf-s0.aperf, s1.mperf-s0.mperf, s1.tsc-s0.tsc, s1.ns-s0.ns
		switch {
		case !s0.ok || !s1.ok:
			r.Source, r.Rule, r.Note = rundir.FreqNone, "", "reading APERF/MPERF/TSC failed at the start or the end of the round"
		case s1.mperf < s0.mperf || s1.aperf < s0.aperf || s1.tsc <= s0.tsc || ns <= 0:
			r.Source, r.Rule, r.Note = rundir.FreqNone, "", "APERF, MPERF or the TSC went backwards or stood still during the round (the counters were reset)"
		case dm == 0:
			r.Source, r.Rule, r.Note = rundir.FreqNone, "", "MPERF did not move: the CPU was idle for the whole round"
		default:
			r.TSCMHz = float64(dt) / float64(ns) * 1e3
			r.MHz = float64(da) / float64(dm) * r.TSCMHz
			r.BusyPct = 100 * float64(dm) / float64(dt)
			r.Samples = 2
		}
	case fm.cur != nil:
		r.Source, r.Rule = rundir.FreqCurFreq, rundir.RuleCurFreq
		var sum float64
		for _, k := range fm.kHz[:n] {
			if k == 0 {
				continue
			}
			mhz := float64(k) / 1e3
			if r.Samples == 0 || mhz < r.MinMHz {
				r.MinMHz = mhz
			}
			if mhz > r.MaxMHz {
				r.MaxMHz = mhz
			}
			sum += mhz
			r.Samples++
		}
		if r.Samples == 0 {
			r.Source, r.Rule, r.Note = rundir.FreqNone, "", "every scaling_cur_freq read failed"
			break
		}
		r.MHz = sum / float64(r.Samples)
	}
	return r
}
