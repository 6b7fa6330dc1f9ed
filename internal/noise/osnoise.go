package noise

import (
	"github.com/rig-project/rig/internal/rundir"

	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/journal"
)

// The osnoise cross-check: the kernel's osnoise tracer with its
// OSNOISE_WORKLOAD option off runs no thread of its own; its tracepoints
// then time every interrupt, softirq, NMI and thread on the CPUs in
// osnoise/cpus, whatever runs there — here the probe's loop, over the
// same window. It runs in a tracefs instance of rig's own (its clock,
// buffer and events go with it); osnoise/cpus and osnoise/options are
// global, so they are host changes: journaled, put back, and refused
// while another osnoise or timerlat user runs.

// tracefsDirs are where tracefs is looked for, in order.
var tracefsDirs = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}

// modeNoWorkload is OSNoise.Mode.
const modeNoWorkload = "tracepoints, no workload (NO_OSNOISE_WORKLOAD): net durations, nested noise subtracted"

// event is one osnoise noise event.
type event struct {
	Kind string // irq, softirq, thread, nmi
	Name string // "local_timer:236", "TIMER:1", "kworker/1:1:55"; "" for nmi
	PID  int    // thread events: the thread
	// EndMono is the event's trace time (the instance's clock, mono: when
	// the noise ended; µs in the trace file); Start its start field, on
	// the tracer's own clock (trace_clock_local); NS its net duration.
	EndMono int64
	Start   uint64
	NS      uint64
	// StartMono is Start on CLOCK_MONOTONIC (see monoStarts).
	StartMono int64
}

// osnoiseCheck finds tracefs and says whether osnoise can run beside the
// probe: its tracefs directory, or why not.
func osnoiseCheck(fs hostfs.FS) (dir, why string) {
	for _, d := range tracefsDirs {
		if fs.Exists(d + "/available_tracers") {
			dir = d
			break
		}
	}
	if dir == "" {
		return "", "tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing)"
	}
	tracers, err := fs.ReadString(dir + "/available_tracers")
	if err != nil {
		return "", fmt.Sprintf("cannot read %s/available_tracers: %v (run as root)", dir, err)
	}
	if !slices.Contains(strings.Fields(tracers), "osnoise") {
		return "", fmt.Sprintf("this kernel has no osnoise tracer (CONFIG_OSNOISE_TRACER; %s/available_tracers: %s)", dir, tracers)
	}
	if opts, _ := fs.ReadString(dir + "/osnoise/options"); workloadToken(opts) == "" {
		return "", "this kernel's osnoise tracer always runs its own workload (no OSNOISE_WORKLOAD in osnoise/options): its thread would spin on the CPU beside the probe"
	}
	users, _ := fs.Glob(dir + "/instances/*/current_tracer")
	for _, p := range append([]string{dir + "/current_tracer"}, users...) {
		if t, _ := fs.ReadString(p); t == "osnoise" || t == "timerlat" {
			return "", fmt.Sprintf("%s runs already (%s): osnoise's settings are shared; stop it first", t, p)
		}
	}
	return dir, ""
}

// workloadToken is the OSNOISE_WORKLOAD option's state in osnoise/options:
// "OSNOISE_WORKLOAD", "NO_OSNOISE_WORKLOAD", or "" when the kernel has none.
func workloadToken(opts string) string {
	for _, f := range strings.Fields(opts) {
		if f == "OSNOISE_WORKLOAD" || f == "NO_OSNOISE_WORKLOAD" {
			return f
		}
	}
	return ""
}

// osnoiseRun is osnoise running for the probe.
type osnoiseRun struct {
	fs   hostfs.FS
	inst string
	cpu  int
	lock *journal.HostLock
	j    *journal.Journal
}

// startOSNoise starts osnoise on cpu in a new instance of tracefs dir,
// with a buffer for d, journaling its global changes in the journal's
// base directory under the host lock. What keeps it from starting is why
// (the host as it was); err is a failure to put back what it changed.
func startOSNoise(ctx context.Context, fs hostfs.FS, dir string, cpu int, d time.Duration) (o *osnoiseRun, why string, err error) {
	base := journal.Dir()
	lock, err := journal.LockHost(base, journal.Self(""))
	if err != nil {
		return nil, err.Error(), nil
	}
	j, err := journal.Open(base, journal.Handlers{journal.KindSysfs: journal.SysfsUndo(fs, fs.Root), journal.KindDir: journal.DirUndo(fs, fs.Root)})
	if err != nil {
		lock.Unlock()
		return nil, err.Error(), nil
	}
	o = &osnoiseRun{fs: fs, inst: fmt.Sprintf("%s/instances/rig-noise-%d", dir, os.Getpid()), cpu: cpu, lock: lock, j: j}
	opts := dir + "/osnoise/options"
	changes := []journal.Change{
		journal.DirChange(fs, fs.Root, o.inst),
		journal.SysfsChange(fs, fs.Root, dir+"/osnoise/cpus", strconv.Itoa(cpu)),
		// The file lists every option but takes one per write: the
		// journal keeps this one's state, which is what undo writes.
		{Kind: journal.KindSysfs, Target: opts, Root: journal.CleanRoot(fs.Root), Value: "NO_OSNOISE_WORKLOAD",
			Read: func(context.Context) (string, error) {
				s, err := fs.ReadString(opts)
				return workloadToken(s), err
			},
			Write: func(_ context.Context, v string) error { return fs.WriteFile(opts, v) }},
	}
	for _, c := range changes {
		if _, err := j.Apply(ctx, c); err != nil {
			return nil, err.Error(), o.undo()
		}
	}
	// About 1 MiB of events a second on a busy CPU; the instance's
	// settings go with it.
	kb := min(4096+1024*int(d/time.Second), 256<<10)
	for _, s := range [][2]string{{"trace_clock", "mono"}, {fmt.Sprintf("per_cpu/cpu%d/buffer_size_kb", cpu), strconv.Itoa(kb)},
		{"events/osnoise/enable", "1"}, {"current_tracer", "osnoise"}} {
		if err := fs.WriteFile(o.inst+"/"+s[0], s[1]); err != nil {
			return nil, fmt.Sprintf("%s/%s: %v", o.inst, s[0], err), o.undo()
		}
	}
	return o, "", nil
}

// stop stops the tracer, reads its events and puts osnoise's settings
// back: an error is a failure to put them back; why says what could not
// be read.
func (o *osnoiseRun) stop() (ev []event, lost uint64, why string, err error) {
	cpu := fmt.Sprintf("%s/per_cpu/cpu%d/", o.inst, o.cpu)
	werr := o.fs.WriteFile(o.inst+"/tracing_on", "0")
	trace, rerr := o.fs.ReadFile(cpu + "trace")
	stats, _ := o.fs.ReadFile(cpu + "stats")
	werr = errors.Join(werr, o.fs.WriteFile(o.inst+"/current_tracer", "nop"))
	if err := o.undo(); err != nil {
		return nil, 0, "", err
	}
	if err := errors.Join(werr, rerr); err != nil {
		return nil, 0, err.Error(), nil
	}
	for _, l := range strings.Split(string(stats), "\n") {
		if v, ok := strings.CutPrefix(l, "overrun: "); ok {
			lost, _ = strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		}
	}
	if ev, err = parseOSNoise(string(trace)); err != nil {
		return nil, 0, err.Error(), nil
	}
	return ev, lost, "", nil
}

// undo puts back what startOSNoise changed and releases the host lock;
// on a failure `rig restore` finishes the job from the journal.
func (o *osnoiseRun) undo() error {
	_, err := o.j.Undo(context.Background()) // Ctrl-C must not stop an undo
	o.j.Close()
	o.lock.Unlock()
	if err != nil {
		return fmt.Errorf("putting osnoise's settings back: %w (run `rig restore`)", err)
	}
	return nil
}

var eventKinds = []string{"irq", "softirq", "thread", "nmi"}

// parseOSNoise reads the osnoise events of a trace file; other lines
// (comments, other events) are skipped. A noise event it cannot read is
// an error naming its line.
func parseOSNoise(trace string) ([]event, error) {
	var out []event
	for n, line := range strings.Split(trace, "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		for _, k := range eventKinds {
			i := strings.Index(line, " "+k+"_noise: ")
			if i < 0 {
				continue
			}
			e, err := parseEvent(k, line[:i], line[i+len(k)+9:])
			if err != nil {
				return nil, fmt.Errorf("osnoise trace line %d: %w: %q", n+1, err, line)
			}
			out = append(out, e)
			break
		}
	}
	return out, nil
}

// parseEvent reads "… 123.456789" (head: the trace time, then ':') and
// "NAME:N start S.NNNNNNNNN duration D ns" (payload; no NAME for nmi).
func parseEvent(kind, head, payload string) (event, error) {
	e := event{Kind: kind}
	hf := strings.Fields(head)
	if len(hf) == 0 {
		return e, errors.New("no trace time")
	}
	t, ok := strings.CutSuffix(hf[len(hf)-1], ":")
	end, err := parseSecs(t, 6)
	if !ok || err != nil {
		return e, errors.New("no trace time")
	}
	e.EndMono = end
	i := strings.LastIndex(" "+payload, " start ") // a thread's name may hold one
	if i < 0 {
		return e, errors.New("want NAME start S.N duration D ns")
	}
	name, f := (" " + payload)[:i], strings.Fields((" " + payload)[i+7:])
	if len(f) != 4 || f[1] != "duration" || f[3] != "ns" {
		return e, errors.New("want NAME start S.N duration D ns")
	}
	start, err := parseSecs(f[0], 9)
	if err != nil || start < 0 {
		return e, errors.New("bad start")
	}
	if e.NS, err = strconv.ParseUint(f[2], 10, 63); err != nil {
		return e, errors.New("bad duration")
	}
	e.Start, e.Name = uint64(start), strings.TrimSpace(name)
	if kind == "thread" {
		_, pid, _ := strings.Cut(e.Name[max(strings.LastIndexByte(e.Name, ':'), 0):], ":")
		// The kernel prints the pid with %d: digits, no sign, no leading zero.
		if e.PID, err = strconv.Atoi(pid); err != nil || e.PID < 0 || strconv.Itoa(e.PID) != pid {
			return e, errors.New("thread without a pid")
		}
	}
	return e, nil
}

// parseSecs reads "S.F" with exactly digits fraction digits as ns.
func parseSecs(s string, digits int) (int64, error) {
	sec, frac, ok := strings.Cut(s, ".")
	if !ok || len(frac) != digits || strings.HasPrefix(sec, "-") || strings.HasPrefix(frac, "-") || strings.HasPrefix(frac, "+") {
		return 0, errors.New("bad time")
	}
	a, err := strconv.ParseInt(sec, 10, 64)
	b, err2 := strconv.ParseInt(frac, 10, 64)
	if err != nil || err2 != nil || a > 1<<32 {
		return 0, errors.New("bad time")
	}
	for range 9 - digits {
		b *= 10
	}
	return a*1e9 + b, nil
}

// monoStarts puts every event's start on CLOCK_MONOTONIC. The start field
// is on the tracer's clock, the trace time on mono at the end: their
// offset is end − start − duration for an event nothing nested in (its
// net duration is its wall time); nesting only adds, so the smallest
// value over the events is the offset.
func monoStarts(ev []event) {
	if len(ev) == 0 {
		return
	}
	off := int64(1<<63 - 1)
	for _, e := range ev {
		off = min(off, e.EndMono-int64(e.Start)-int64(e.NS))
	}
	for i := range ev {
		ev[i].StartMono = int64(ev[i].Start) + off
	}
}

// summarize keeps the events that overlap the window [from, to] (mono),
// the loop's own thread left out, and counts them above each threshold.
func summarize(ev []event, from, to int64, loopTID int, thresholds []uint64, lost uint64) (*rundir.OSNoise, []uint64, []event) {
	o := &rundir.OSNoise{Mode: modeNoWorkload, ByKind: map[string]uint64{}, Lost: lost}
	above := make([]uint64, len(thresholds))
	by := map[[2]string]*rundir.NoiseSource{}
	var kept []event
	for _, e := range ev {
		if e.Kind == "thread" && e.PID == loopTID || e.StartMono+int64(e.NS) < from || e.StartMono > to {
			continue
		}
		kept = append(kept, e)
		o.Events++
		o.ByKind[e.Kind]++
		o.TotalNS += e.NS
		if e.NS > o.LongestNS {
			o.LongestNS, o.LongestName = e.NS, label(e)
		}
		for i, t := range thresholds {
			if e.NS > t {
				above[i]++
			}
		}
		s := by[[2]string{e.Kind, e.Name}]
		if s == nil {
			s = &rundir.NoiseSource{Kind: e.Kind, Name: e.Name}
			by[[2]string{e.Kind, e.Name}] = s
		}
		s.Count++
		s.TotalNS += e.NS
		s.MaxNS = max(s.MaxNS, e.NS)
	}
	for _, s := range by {
		o.Top = append(o.Top, *s)
	}
	slices.SortFunc(o.Top, func(a, b rundir.NoiseSource) int {
		return cmp.Or(cmp.Compare(b.TotalNS, a.TotalNS), cmp.Compare(a.Kind+a.Name, b.Kind+b.Name))
	})
	o.Top = o.Top[:min(len(o.Top), 5)]
	return o, above, kept
}

func label(e event) string { return strings.TrimSpace(e.Kind + " " + e.Name) }

// inside names the events that overlap [from, from+ns], longest first.
func inside(ev []event, from int64, ns uint64) string {
	var in []event
	for _, e := range ev {
		if e.StartMono <= from+int64(ns) && e.StartMono+int64(e.NS) >= from {
			in = append(in, e)
		}
	}
	slices.SortStableFunc(in, func(a, b event) int { return cmp.Compare(b.NS, a.NS) })
	var parts []string
	for _, e := range in[:min(len(in), 3)] {
		parts = append(parts, fmt.Sprintf("%s %.1f µs", label(e), float64(e.NS)/1e3))
	}
	if len(in) > 3 {
		parts = append(parts, fmt.Sprintf("%d more", len(in)-3))
	}
	return strings.Join(parts, ", ")
}
