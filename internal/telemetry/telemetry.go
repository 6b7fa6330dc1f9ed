// Package telemetry samples what happens on the measured CPUs during a
// round: interrupts per source, softirqs per type, local timer ticks,
// cpuidle usage and residency per state, softnet drops, context switches
// of the responder thread, the threads seen on the CPUs, drift of NIC IRQ
// affinity, the NIC's drop counters (through the caller's NICStats hook),
// the responder CPU's frequency over the round and the power state it
// ran under, and the host's RAPL energy. It reads procfs/sysfs only (no
// IPIs to the measured CPUs) from one OS thread pinned to a CPU that is
// not measured, into memory preallocated by New: a sample costs no
// allocation.
//
// The round runner creates a Sampler per round, calls Start before the
// first packet and Stop after the last, and writes the Result as
// telemetry.json. The report lines its worst samples up with
// Result.IntervalAt.
package telemetry

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/rundir"
)

// Config says what to watch.
type Config struct {
	FS hostfs.FS
	// CPUs are the measured CPUs: the responder CPU and its SMT sibling.
	CPUs []int
	// PID and TID name the responder thread whose context switches are
	// counted (/proc/PID/task/TID/status). TID 0: no thread is watched.
	PID, TID int
	// Interval between samples; 0 means 100 ms.
	Interval time.Duration
	// MaxSamples is the preallocated capacity; samples beyond it are
	// counted in Result.Missed. 0 means 1024 (102 s at 100 ms).
	MaxSamples int
	// PinCPU is the CPU the sampler thread runs on. It must not be one of
	// CPUs: the sampler would then perturb what it measures. Negative:
	// unpinned, where no other CPU may be used (a pod whose every CPU is
	// watched); the result says so.
	PinCPU int
	// Watched says what CPUs are, for the report; "" means the responder
	// CPU and its SMT siblings.
	Watched string
	// IRQs are IRQ numbers (the NIC's queues) whose effective affinity is
	// re-read every sample; changes are reported as drift.
	IRQs []int
	// ThreadScanEvery: scan /proc/*/task/*/stat for threads on CPUs every
	// this many samples. 0 means 10 (1 s at 100 ms); negative disables.
	// The scan allocates (directory listings, new thread names); it is the
	// one part of sampling that does, at this lower rate.
	ThreadScanEvery int
	// NICStats, when set, is called every sample to fill dst (one value per
	// NICStatNames entry) with NIC drop and ring-overrun counters (the
	// caller passes nicctl's ethtool -S reader: this package stays free of
	// ethtool); it must not allocate for the sampler to stay
	// allocation-free.
	NICStats     func(dst []uint64) error
	NICStatNames []string
	// MeasureFreq measures FreqCPU's average frequency over the round
	// (Result.Freq): APERF/MPERF where the msr driver is, else
	// scaling_cur_freq at every sample, else it says it cannot.
	MeasureFreq bool
	FreqCPU     int
	// MeasureEnergy reads every RAPL zone's energy counter at every
	// sample (Result.Energy): whole packages, not only the measured CPUs.
	MeasureEnergy bool
	// Power is the power state the round runs under (governor, limits,
	// turbo, tuned profile, idle states), read by the caller before
	// sampling starts (tuned-adm is slow); kept as Result.Power.
	Power *rundir.PowerState
	// Scanned, when set, gets every thread each thread scan found on the
	// watched CPUs, on the sampler's thread (cpurank's tallies).
	Scanned func(sample int, tasks []Task)
	// Wait, when set, paces the samples instead of a ticker of Interval:
	// the sampler calls it before each sample after the first and ends
	// (its last reads taken; Stop returns then) when it returns an error.
	// A ranking's window waits so, and its tests move a fake tree in it.
	Wait func() error
}

// Sampler is one round's telemetry. Use New, Start, Stop.
type Sampler struct {
	cfg     Config
	scanner *threadScanner

	irqF, softF, netF, statusF *hostinfo.File
	irqR, softR                *hostinfo.CounterReader
	irqTab, softTab            *hostinfo.CounterTable
	buf                        []byte
	small                      []byte
	softnet                    []hostinfo.Softnet
	idle                       []idleFiles
	thermal                    []thermalFile
	aff                        []affWatch
	freq                       *freqMeter
	energy                     *energyMeter
	// use are the per-CPU time counters at the first and the last sample,
	// read outside sample() (they allocate); useErr is the first failure.
	use    [2]hostinfo.CPUUse
	useT   [2]time.Time
	useErr error

	// Preallocated sample storage, [sample][...] flat.
	n, missed int
	t         []int64
	irq       []uint64
	soft      []uint64
	idleU     []uint64
	idleT     []uint64
	therm     []uint64
	net       []uint64 // [sample][cpu][processed, dropped, squeeze]
	vol, inv  []uint64
	nic       []uint64

	errCount int
	firstErr error
	drift    []rundir.AffinityChange

	stop    chan struct{}
	done    chan struct{}
	tid     int
	started bool
	stopped bool
	mu      sync.Mutex
}

// thermalFile is one CPU's thermal-throttle counter (x86 therm_throt:
// how often the core or its package crossed the throttling threshold).
type thermalFile struct {
	cpu int
	id  string
	f   *hostinfo.File
}

// thermalCounters are the counters of /sys/devices/system/cpu/cpuN/thermal_throttle.
var thermalCounters = []string{"core_throttle_count", "package_throttle_count"}

type idleFiles struct {
	cpu, state  int
	name        string
	latency     uint64
	usage, time *hostinfo.File
}

type affWatch struct {
	irq     int
	f       *hostinfo.File
	initial string
	last    []byte
	lastN   int
	changes int
}

const netCols = 3

// New validates cfg, opens every file it will re-read and preallocates the
// sample memory. It fails when PinCPU is a measured CPU, when a measured
// CPU has no column in /proc/interrupts (offline), or when a file is
// missing; optional sources (cpuidle, softnet, the watched thread) fail
// only if asked for explicitly (TID, IRQs).
func New(cfg Config) (*Sampler, error) {
	if len(cfg.CPUs) == 0 {
		return nil, errors.New("telemetry: no CPUs to watch (want the responder CPU and its SMT sibling)")
	}
	if slices.Contains(cfg.CPUs, cfg.PinCPU) {
		return nil, fmt.Errorf("telemetry: PinCPU %d is a measured CPU %v; pin the sampler to a housekeeping CPU", cfg.PinCPU, cfg.CPUs)
	}
	if cfg.Interval == 0 {
		cfg.Interval = 100 * time.Millisecond
	}
	if cfg.Interval < time.Millisecond {
		return nil, fmt.Errorf("telemetry: interval %v is below 1 ms; procfs reads cost more than that", cfg.Interval)
	}
	if cfg.MaxSamples == 0 {
		cfg.MaxSamples = 1024
	}
	if cfg.ThreadScanEvery == 0 {
		cfg.ThreadScanEvery = 10
	}
	if len(cfg.NICStatNames) > 0 && cfg.NICStats == nil {
		return nil, errors.New("telemetry: NICStatNames given without NICStats")
	}
	s := &Sampler{cfg: cfg, small: make([]byte, 4096), stop: make(chan struct{}), done: make(chan struct{})}
	if err := s.open(); err != nil {
		s.close()
		return nil, err
	}
	m := cfg.MaxSamples
	s.t = make([]int64, m)
	s.irq = make([]uint64, m*s.irqR.Len())
	s.soft = make([]uint64, m*s.softR.Len())
	s.idleU = make([]uint64, m*len(s.idle))
	s.idleT = make([]uint64, m*len(s.idle))
	s.therm = make([]uint64, m*len(s.thermal))
	s.net = make([]uint64, m*len(cfg.CPUs)*netCols)
	s.vol = make([]uint64, m)
	s.inv = make([]uint64, m)
	s.nic = make([]uint64, m*len(cfg.NICStatNames))
	s.drift = make([]rundir.AffinityChange, 0, 64)
	if cfg.ThreadScanEvery > 0 {
		s.scanner = newThreadScanner(cfg.FS, cfg.CPUs, cfg.Scanned)
	}
	if cfg.MeasureFreq {
		s.openFreq(cfg.FreqCPU)
	}
	if cfg.MeasureEnergy {
		s.openEnergy()
	}
	return s, nil
}

func (s *Sampler) open() error {
	fs, cfg := s.cfg.FS, s.cfg
	var err error
	if s.irqF, err = hostinfo.Open(fs, "/proc/interrupts"); err != nil {
		return err
	}
	if s.softF, err = hostinfo.Open(fs, "/proc/softirqs"); err != nil {
		return err
	}
	s.buf = make([]byte, 64<<10)
	for _, x := range []struct {
		f   *hostinfo.File
		r   **hostinfo.CounterReader
		tab **hostinfo.CounterTable
	}{{s.irqF, &s.irqR, &s.irqTab}, {s.softF, &s.softR, &s.softTab}} {
		b, err := x.f.ReadGrow(&s.buf)
		if err != nil {
			return fmt.Errorf("read %s: %w", x.f.Path, err)
		}
		if *x.r, *x.tab, err = hostinfo.NewCounterReader(b, cfg.CPUs); err != nil {
			return fmt.Errorf("%s: %w", x.f.Path, err)
		}
		if len(s.buf) < 2*len(b) {
			s.buf = make([]byte, 2*len(b))
		}
	}
	// softnet_stat is per network namespace view of per-CPU data; absent
	// only without CONFIG_NET.
	if s.netF, err = hostinfo.Open(fs, "/proc/net/softnet_stat"); err != nil {
		return err
	}
	s.softnet = make([]hostinfo.Softnet, 4096)
	for _, cpu := range cfg.CPUs {
		states, err := hostinfo.ReadIdleStates(fs, cpu)
		if err != nil {
			continue // no cpuidle (driver none, idle=poll): nothing to count
		}
		for _, st := range states {
			d := hostinfo.IdleStatePath(cpu, st.Index)
			u, err := hostinfo.Open(fs, d+"/usage")
			if err != nil {
				return err
			}
			tm, err := hostinfo.Open(fs, d+"/time")
			if err != nil {
				u.Close()
				return err
			}
			s.idle = append(s.idle, idleFiles{cpu: cpu, state: st.Index, name: st.Name, latency: st.LatencyUS, usage: u, time: tm})
		}
	}
	// Thermal throttling is Intel's and AMD's therm_throt (absent in VMs
	// and on arm64): counted where the kernel has it.
	for _, cpu := range cfg.CPUs {
		for _, id := range thermalCounters {
			if f, err := hostinfo.Open(fs, fmt.Sprintf("/sys/devices/system/cpu/cpu%d/thermal_throttle/%s", cpu, id)); err == nil {
				s.thermal = append(s.thermal, thermalFile{cpu: cpu, id: id, f: f})
			}
		}
	}
	if cfg.TID != 0 {
		if s.statusF, err = hostinfo.Open(fs, fmt.Sprintf("/proc/%d/task/%d/status", cfg.PID, cfg.TID)); err != nil {
			return err
		}
	}
	for _, irq := range cfg.IRQs {
		p := fmt.Sprintf("/proc/irq/%d/effective_affinity_list", irq)
		f, err := hostinfo.Open(fs, p)
		if err != nil {
			// Kernels before 4.15 have no effective_affinity_list.
			if f, err = hostinfo.Open(fs, fmt.Sprintf("/proc/irq/%d/smp_affinity_list", irq)); err != nil {
				return err
			}
		}
		b, err := f.ReadAll(s.small)
		if err != nil {
			f.Close()
			return fmt.Errorf("read %s: %w", f.Path, err)
		}
		w := affWatch{irq: irq, f: f, initial: string(trim(b)), last: make([]byte, len(s.small))}
		w.lastN = copy(w.last, b)
		s.aff = append(s.aff, w)
	}
	return nil
}

func (s *Sampler) close() {
	for _, f := range []*hostinfo.File{s.irqF, s.softF, s.netF, s.statusF} {
		if f != nil {
			f.Close()
		}
	}
	for _, i := range s.idle {
		i.usage.Close()
		i.time.Close()
	}
	for _, t := range s.thermal {
		t.f.Close()
	}
	for _, a := range s.aff {
		a.f.Close()
	}
	if s.freq != nil {
		s.freq.close()
	}
	if s.energy != nil {
		s.energy.close()
	}
}

// Start starts sampling on a new OS thread pinned to PinCPU and takes the
// first sample. It returns the error of sched_setaffinity (e.g. EINVAL when
// PinCPU is outside the process's cpuset).
func (s *Sampler) Start() error {
	if s.started {
		return errors.New("telemetry: Start called twice")
	}
	s.started = true
	ready := make(chan error, 1)
	go s.run(ready)
	return <-ready
}

func (s *Sampler) run(ready chan<- error) {
	// The thread's affinity is put back before it is unlocked; if that
	// fails it stays locked and exits with the goroutine, so the pinning
	// never leaks into the Go runtime's thread pool.
	runtime.LockOSThread()
	unpin := func() bool { return true }
	var err error
	if s.cfg.PinCPU >= 0 {
		var u func() bool
		if u, err = cpusched.PinThreadFor(s.cfg.PinCPU); err == nil {
			unpin = u
		} else {
			err = fmt.Errorf("telemetry: sampler on CPU %d: %w", s.cfg.PinCPU, err)
		}
	}
	defer func() {
		if unpin() {
			runtime.UnlockOSThread()
		}
		close(s.done)
	}()
	if err != nil {
		ready <- err
		return
	}
	s.mu.Lock()
	s.tid = cpusched.Tid()
	s.mu.Unlock()
	tick := time.NewTicker(s.cfg.Interval)
	defer tick.Stop()
	s.sample()
	s.readUse(0)
	if s.freq != nil {
		s.freq.readMSR(false)
	}
	s.readEnergyEnd()
	ready <- nil
	defer func() {
		s.readUse(1)
		if s.freq != nil {
			s.freq.readMSR(true)
		}
		s.readEnergyEnd()
	}()
	for s.cfg.Wait != nil {
		if s.cfg.Wait() != nil {
			return
		}
		s.sample()
	}
	for {
		select {
		case <-tick.C:
			s.sample()
		case <-s.stop:
			s.sample()
			return
		}
	}
}

// Stop takes a last sample, stops the sampler, closes its files and
// returns the result.
func (s *Sampler) Stop() (*rundir.TelemetryResult, error) {
	if s.stopped {
		return nil, errors.New("telemetry: Stop called twice")
	}
	s.stopped = true
	if !s.started {
		s.close()
		return nil, errors.New("telemetry: Stop before Start")
	}
	close(s.stop)
	<-s.done
	s.close()
	if s.n == 0 {
		return nil, errors.New("telemetry: the sampler never ran (see Start's error)")
	}
	return s.result(), nil
}

// sample reads every source into slot s.n. It must not allocate (except
// the thread scan every ThreadScanEvery samples and affinity changes).
func (s *Sampler) sample() {
	if s.n == len(s.t) {
		s.missed++
		return
	}
	i := s.n
	s.t[i] = time.Now().UnixNano()
	var prevIRQ, prevSoft []uint64
	if i > 0 {
		prevIRQ = s.irq[(i-1)*s.irqR.Len() : i*s.irqR.Len()]
		prevSoft = s.soft[(i-1)*s.softR.Len() : i*s.softR.Len()]
	}
	s.readTable(s.irqF, s.irqR, s.irq[i*s.irqR.Len():(i+1)*s.irqR.Len()], prevIRQ)
	s.readTable(s.softF, s.softR, s.soft[i*s.softR.Len():(i+1)*s.softR.Len()], prevSoft)
	for k, f := range s.idle {
		s.idleU[i*len(s.idle)+k] = s.readUint(f.usage)
		s.idleT[i*len(s.idle)+k] = s.readUint(f.time)
	}
	for k, f := range s.thermal {
		s.therm[i*len(s.thermal)+k] = s.readUint(f.f)
	}
	if b, err := s.netF.ReadAll(s.buf); err != nil {
		s.fail(err)
	} else if n, err := hostinfo.ParseSoftnetInto(b, s.softnet); err != nil {
		s.fail(err)
	} else {
		row := s.net[i*len(s.cfg.CPUs)*netCols:]
		for c, cpu := range s.cfg.CPUs {
			for _, sn := range s.softnet[:n] {
				if sn.CPU == cpu {
					row[c*netCols], row[c*netCols+1], row[c*netCols+2] = sn.Processed, sn.Dropped, sn.TimeSqueeze
				}
			}
		}
	}
	if s.statusF != nil {
		if b, err := s.statusF.ReadAll(s.small); err != nil {
			s.fail(err) // ESRCH: the thread exited
		} else if v, iv, ok := hostinfo.ParseCtxSwitches(b); ok {
			s.vol[i], s.inv[i] = v, iv
		} else {
			s.fail(errNoCtx)
		}
	}
	for k := range s.aff {
		a := &s.aff[k]
		b, err := a.f.ReadAll(s.small)
		if err != nil {
			s.fail(err)
			continue
		}
		if string(b) != string(a.last[:a.lastN]) {
			s.recordDrift(a, b, i)
		}
	}
	if n := len(s.cfg.NICStatNames); n > 0 {
		if err := s.cfg.NICStats(s.nic[i*n : (i+1)*n]); err != nil {
			s.fail(err)
		}
	}
	s.sampleCur(i)
	if s.energy != nil && !s.energy.endsOnly {
		s.energy.sample(s.t[i], s.small)
	}
	if s.scanner != nil && i%s.cfg.ThreadScanEvery == 0 {
		s.scanner.scan(i)
	}
	s.n++
}

// CPUUse is the per-CPU busy counters at the first and the last sample,
// after Stop; err says why they could not be read.
func (s *Sampler) CPUUse() (first, last hostinfo.CPUUse, err error) {
	return s.use[0], s.use[1], s.useErr
}

// readUse reads the per-CPU busy counters, the whole node's.
func (s *Sampler) readUse(i int) {
	u, err := hostinfo.ReadCPUUse(s.cfg.FS)
	if err != nil && s.useErr == nil {
		s.useErr = err
	}
	s.use[i], s.useT[i] = u, time.Now()
}

var errNoCtx = errors.New("status has no voluntary_ctxt_switches/nonvoluntary_ctxt_switches")

func (s *Sampler) readTable(f *hostinfo.File, r *hostinfo.CounterReader, dst, prev []uint64) {
	b, err := f.ReadAll(s.buf)
	if err == hostinfo.ErrShortBuffer {
		b, err = f.ReadGrow(&s.buf) // the file grew a lot; rare allocation
	}
	if err != nil {
		s.fail(err)
		copy(dst, prev)
		return
	}
	if _, err := r.Read(b, dst, prev); err != nil {
		s.fail(err)
		copy(dst, prev)
	}
}

func (s *Sampler) readUint(f *hostinfo.File) uint64 {
	b, err := f.ReadAll(s.small)
	if err != nil {
		s.fail(err)
		return 0
	}
	v, ok := hostinfo.ParseUint(b)
	if !ok {
		s.fail(errNotNumber)
	}
	return v
}

var errNotNumber = errors.New("sysfs value is not a number")

func (s *Sampler) fail(err error) {
	s.errCount++
	if s.firstErr == nil {
		s.firstErr = err
	}
}

func (s *Sampler) recordDrift(a *affWatch, b []byte, i int) {
	from := string(trim(a.last[:a.lastN]))
	a.lastN = copy(a.last, b)
	a.changes++
	if len(s.drift) == cap(s.drift) {
		return // bounded: the count of changes is still in the result
	}
	s.drift = append(s.drift, rundir.AffinityChange{T: s.t[i], IRQ: a.irq, From: from, To: string(trim(b))})
}

func trim(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}
