// Package noise is the platform-noise probe (docs/noise.md): a native loop
// on one CPU that only reads the CPU's counter and records every gap
// between two reads above 1, 5, 20 and 100 µs (native/noise.c), with
// telemetry of the window sampled from another CPU and, where the kernel
// has it, the osnoise tracer's view of the same window as a cross-check.
// Run measures one window; Result is what it found, one row per threshold
// for a per-arm table.
package noise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/native"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/telemetry"
)

// Config is one window of the probe.
type Config struct {
	CPU      int
	Sched    cpusched.Sched
	Duration time.Duration
	// Prog is the loop's program (native.Find(native.NoiseProgram)).
	Prog string
	FS   hostfs.FS
	// Stderr takes the program's own messages.
	Stderr io.Writer
}

// keep is how many of the longest gaps the loop keeps for matching.
const keep = 64

// CheckCPU refuses a CPU that is offline or outside the CPUs this process
// may run on (its cpuset, taskset): the loop could not be pinned there.
func CheckCPU(fs hostfs.FS, cpu int) error {
	if err := cpusched.CheckCPU(fs, cpu); err != nil {
		return err
	}
	allowed, err := hostinfo.ProcessCPUsAllowed(fs, "self")
	if err != nil {
		return fmt.Errorf("cannot tell whether CPU %d is one this process may use: %w", cpu, err)
	}
	if !cpulist.Contains(allowed, cpu) {
		return fmt.Errorf("CPU %d is outside the CPUs this process may run on (%s: its cpuset or taskset): %w", cpu, cpulist.Format(allowed), os.ErrNotExist)
	}
	return nil
}

// Run measures one window. A CPU that is offline, outside the allowed set
// or claimed by a rig responder's loop is refused (journal.ErrCPUBusy);
// an error after the loop ran is a failure to put osnoise's settings back
// or of the program. Ctrl-C (ctx) ends the loop early: the Result says so.
func Run(ctx context.Context, cfg Config) (res *rundir.Noise, err error) {
	if err := CheckCPU(cfg.FS, cfg.CPU); err != nil {
		return nil, err
	}
	var notes []string
	var unlock func()
	unlock, err = journal.LockCPU(journal.Dir(), cfg.CPU, true)
	switch {
	case errors.Is(err, journal.ErrCPUBusy):
		return nil, err
	case err != nil:
		notes = append(notes, fmt.Sprintf("cannot tell whether a rig responder spins on CPU %d (its claim on the CPU cannot be checked: %v)", cfg.CPU, err))
	default:
		defer unlock()
	}
	var on *osnoiseRun
	dir, osWhy := osnoiseCheck(cfg.FS)
	if osWhy == "" {
		if on, osWhy, err = startOSNoise(ctx, cfg.FS, dir, cfg.CPU, cfg.Duration); err != nil {
			return nil, err
		}
	}
	stopOS := func() ([]event, uint64, error) {
		if on == nil {
			return nil, 0, nil
		}
		ev, lost, why, err := on.stop()
		on, osWhy = nil, why
		return ev, lost, err
	}
	defer func() { // on the early returns; a no-op after the call below
		if _, _, uerr := stopOS(); uerr != nil {
			res, err = nil, errors.Join(err, uerr)
		}
	}()
	// rig's own threads would be measured as noise: they go elsewhere,
	// and the loop's process, started by one of them, pins itself.
	back, err := cpusched.AvoidCPU(cfg.CPU)
	defer back()
	if err != nil {
		notes = append(notes, fmt.Sprintf("rig's own threads may run on CPU %d and show as gaps (moving them: %v)", cfg.CPU, err))
	}
	tel, telWhy := startTelemetry(cfg.FS, cfg.CPU)

	args := []string{"--cpu", strconv.Itoa(cfg.CPU), "--fifo", strconv.Itoa(cfg.Sched.Priority),
		"--duration-ns", strconv.FormatInt(int64(cfg.Duration), 10), "--keep", strconv.Itoa(keep)}
	p, line, err := native.StartLine(cfg.Prog, args, native.Launch{}, cfg.Stderr)
	if err != nil {
		stopTelemetry(tel)
		return nil, err
	}
	rd, err := native.ParseNoiseReady(line)
	if err != nil {
		p.Close()
		stopTelemetry(tel)
		return nil, err
	}
	h, err := p.WaitNoise(ctx)
	p.Close()
	telRes, terr := stopTelemetry(tel)
	ev, lost, oserr := stopOS()
	if err != nil {
		return nil, errors.Join(err, oserr)
	}
	if oserr != nil {
		return nil, oserr
	}
	r := build(h, cfg.Sched.String())
	r.Notes = append(notes, hostNotes(cfg.FS, r, rd, cfg.Sched)...)
	r.OSNoiseMissing = osWhy
	var kept []event
	if osWhy == "" {
		monoStarts(ev)
		thr := make([]uint64, len(r.Gaps))
		for i, g := range r.Gaps {
			thr[i] = g.AboveNS
		}
		var above []uint64
		r.OSNoise, above, kept = summarize(ev, h.StartMono, h.EndMono, rd.TID, thr, lost)
		for i := range r.Gaps {
			r.Gaps[i].OSNoise = &above[i]
		}
	}
	switch {
	case telWhy != "":
		r.TelemetryMissing = telWhy
	case terr != nil:
		r.TelemetryMissing = terr.Error()
	default:
		r.Telemetry = telRes
	}
	for i, g := range r.Longest {
		r.Longest[i].Who = who(r, kept, g, rd.TID)
	}
	return r, nil
}

// who says who took the CPU during gap g, as far as telemetry (its
// interval around the gap: the sources that moved most, the threads seen
// but the loop's own) and osnoise (the events inside it) tell.
func who(r *rundir.Noise, ev []event, g rundir.NoiseGap, loopTID int) string {
	var parts []string
	if t := r.Telemetry; t != nil {
		if iv := t.IntervalAt(g.StartNS); iv != nil {
			var seen []string
			for _, d := range t.Top(iv, 3) {
				seen = append(seen, fmt.Sprintf("%s ×%d", d.Label(), d.Delta))
			}
			for _, k := range iv.Threads {
				if th := t.Threads[k]; th.TID != loopTID && !slices.Contains(seen, "thread "+th.Comm) {
					seen = append(seen, "thread "+th.Comm)
				}
			}
			if len(seen) == 0 {
				seen = append(seen, "nothing counted")
			}
			parts = append(parts, "telemetry: "+strings.Join(seen, ", "))
		}
	}
	if r.OSNoise != nil {
		s := inside(ev, g.StartMonoNS, g.NS)
		if s == "" {
			s = "no event: the hypervisor, or hardware (SMI)"
		}
		parts = append(parts, "osnoise: "+s)
	}
	if len(parts) == 0 {
		return "not sampled"
	}
	return strings.Join(parts, "; ")
}

// startTelemetry samples the CPU from another CPU this process may use;
// why says why it does not.
func startTelemetry(fs hostfs.FS, cpu int) (*telemetry.Sampler, string) {
	allowed, err := hostinfo.ProcessCPUsAllowed(fs, "self")
	if err != nil {
		return nil, err.Error()
	}
	pin := slices.IndexFunc(allowed, func(c int) bool { return c != cpu })
	if pin < 0 {
		return nil, fmt.Sprintf("no CPU but %d to sample it from: a sampler there would be measured as noise", cpu)
	}
	s, err := telemetry.New(telemetry.Config{FS: fs, CPUs: []int{cpu}, PinCPU: allowed[pin], ThreadScanEvery: 1})
	if err == nil {
		err = s.Start()
	}
	if err != nil {
		return nil, err.Error()
	}
	return s, ""
}

func stopTelemetry(s *telemetry.Sampler) (*rundir.TelemetryResult, error) {
	if s == nil {
		return nil, nil
	}
	return s.Stop()
}

// hostNotes are what the reader of a Result must know about how the
// host treated the loop.
func hostNotes(fs hostfs.FS, r *rundir.Noise, rd native.NoiseReady, sched cpusched.Sched) []string {
	var out []string
	if rd.MlockAll != 0 {
		out = append(out, "mlockall failed ("+rd.MlockAll.Error()+"): the loop's pages may fault (raise RLIMIT_MEMLOCK or grant CAP_IPC_LOCK)")
	}
	if sched.Policy == cpusched.FIFO {
		rt, err := fs.ReadInt("/proc/sys/kernel/sched_rt_runtime_us")
		period, err2 := fs.ReadInt("/proc/sys/kernel/sched_rt_period_us")
		switch {
		case err != nil || err2 != nil:
			out = append(out, "cannot tell whether RT throttling applies (reading /proc/sys/kernel/sched_rt_*: "+errors.Join(err, err2).Error()+")")
		case rt >= 0:
			out = append(out, fmt.Sprintf("RT throttling is on (sched_rt_runtime_us %d of sched_rt_period_us %d): the kernel may take the CPU from a SCHED_FIFO loop for up to %d µs every period, which shows as gaps (sched_rt_runtime_us -1 turns it off, and lets the loop starve the CPU's other tasks)", rt, period, period-rt))
		}
	}
	if c := r.Counter; c.CheckPPM > 100 || c.CheckPPM < -100 {
		out = append(out, fmt.Sprintf("the counter's rate over the loop differed from its calibration by %+.0f ppm: does it run at a constant rate (constant_tsc)?", c.CheckPPM))
	}
	if c := r.Counter; c.HzNominal > 0 {
		if ppm := (c.HzCalibrated/float64(c.HzNominal) - 1) * 1e6; ppm > 1000 || ppm < -1000 {
			out = append(out, fmt.Sprintf("the counter's calibrated rate is %+.0f ppm from CNTFRQ_EL0's %d Hz", ppm, c.HzNominal))
		}
	}
	return out
}
