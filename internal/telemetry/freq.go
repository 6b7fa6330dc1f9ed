package telemetry

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/teldata"
)

// freqMeter is the sampler's frequency source, opened by New.
type freqMeter struct {
	cpu      int
	msr      *hostinfo.MSR
	baseKHz  int64
	baseFrom string
	cur      *hostinfo.File
	note     string
	// APERF/MPERF at the first and last sample, with their times.
	a0, m0, a1, m1 uint64
	t0, t1         int64
	ok0, ok1       bool
	kHz            []uint64 // scaling_cur_freq per sample, 0 = failed read
}

// openFreq picks the best source for cpu: APERF/MPERF when the msr driver
// is there, the registers read and a nominal frequency is known; else
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
		base, from, e3 := hostinfo.BaseFreqKHz(fs, cpu)
		if err := errors.Join(e1, e2, e3); err != nil {
			m.Close()
			why = append(why, fmt.Sprintf("APERF/MPERF: %v", err))
		} else {
			fm.msr, fm.baseKHz, fm.baseFrom = m, base, from
			fm.note = "APERF and MPERF are read at the round's first and last sample only: each read is an IPI to the measured CPU"
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
		fm.note = joinWhy(why)
		return
	}
	fm.cur = f
	fm.kHz = make([]uint64, s.cfg.MaxSamples)
	fm.note = joinWhy(why)
}

func joinWhy(w []string) string {
	out := ""
	for i, s := range w {
		if i > 0 {
			out += "; "
		}
		out += s
	}
	return out
}

// readMSR reads APERF and MPERF into the start (end=false) or end slot.
// It does not allocate.
func (fm *freqMeter) readMSR(end bool) {
	if fm.msr == nil {
		return
	}
	m, e1 := fm.msr.Read(hostinfo.MSRMPERF)
	a, e2 := fm.msr.Read(hostinfo.MSRAPERF)
	t := time.Now().UnixNano()
	ok := e1 == nil && e2 == nil
	if end {
		fm.a1, fm.m1, fm.t1, fm.ok1 = a, m, t, ok
	} else {
		fm.a0, fm.m0, fm.t0, fm.ok0 = a, m, t, ok
	}
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
func (fm *freqMeter) result(n int) *teldata.FreqResult {
	r := &teldata.FreqResult{CPU: fm.cpu, Source: teldata.FreqNone, Note: fm.note}
	switch {
	case fm.msr != nil:
		r.Source = teldata.FreqAPERF
		r.BaseMHz, r.BaseFrom = float64(fm.baseKHz)/1e3, fm.baseFrom
		dm, da := fm.m1-fm.m0, fm.a1-fm.a0
		switch {
		case !fm.ok0 || !fm.ok1:
			r.Source, r.Note = teldata.FreqNone, "reading APERF/MPERF failed at the start or the end of the round"
		case fm.m1 < fm.m0 || fm.a1 < fm.a0:
			r.Source, r.Note = teldata.FreqNone, "APERF/MPERF went backwards during the round (the counters were reset)"
		case dm == 0:
			r.Source, r.Note = teldata.FreqNone, "MPERF did not move: the CPU was idle for the whole round"
		default:
			r.MHz = float64(fm.baseKHz) / 1e3 * float64(da) / float64(dm)
			r.Samples = 2
			if wall := fm.t1 - fm.t0; wall > 0 {
				r.BusyPct = 100 * float64(dm) / (float64(fm.baseKHz) * 1e3 * float64(wall) / 1e9)
			}
		}
	case fm.cur != nil:
		r.Source = teldata.FreqCurFreq
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
			r.Source, r.Note = teldata.FreqNone, "every scaling_cur_freq read failed"
			break
		}
		r.MHz = sum / float64(r.Samples)
	}
	return r
}
