package noise

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostctl"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/nicctl"
)

// fakeTracefs models the tracefs stores rig writes, as of Linux 6.3's
// kernel/trace/trace_osnoise.c: osnoise_options_write takes one option
// (NAME or NO_NAME) per write and osnoise/options lists them all;
// instances_mkdir makes an instance, which instance_rmdir removes whole.
type fakeTracefs struct {
	root   string
	writes []string
}

func (k *fakeTracefs) WriteFile(p, v string) error {
	k.writes = append(k.writes, strings.TrimPrefix(p, "/sys/kernel/tracing/")+"="+v)
	full := filepath.Join(k.root, p)
	if strings.HasSuffix(p, "/osnoise/options") {
		b, err := os.ReadFile(full)
		if err != nil {
			return err
		}
		opt := strings.TrimPrefix(v, "NO_")
		s := strings.Replace(strings.Replace(string(b), "NO_"+opt, opt, 1), opt, v, 1)
		return os.WriteFile(full, []byte(s), 0o644)
	}
	if _, err := os.Stat(filepath.Dir(full)); err != nil {
		if !strings.Contains(p, "/instances/") {
			return err
		}
		os.MkdirAll(filepath.Dir(full), 0o755) // an instance's own files
	}
	return os.WriteFile(full, []byte(v), 0o644)
}

func (k *fakeTracefs) Mkdir(p string) error { return os.Mkdir(filepath.Join(k.root, p), 0o755) }
func (k *fakeTracefs) Rmdir(p string) error { return os.RemoveAll(filepath.Join(k.root, p)) }

// tracefsTree is a host with tracefs at /sys/kernel/tracing; tracers and
// options as the files hold them ("" options: no osnoise directory).
func tracefsTree(t *testing.T, tracers, options string) (hostfs.FS, *fakeTracefs) {
	t.Helper()
	root := t.TempDir()
	d := filepath.Join(root, "sys/kernel/tracing")
	os.MkdirAll(filepath.Join(d, "instances"), 0o755)
	os.WriteFile(filepath.Join(d, "available_tracers"), []byte(tracers+"\n"), 0o644)
	os.WriteFile(filepath.Join(d, "current_tracer"), []byte("nop\n"), 0o644)
	if options != "" {
		os.MkdirAll(filepath.Join(d, "osnoise"), 0o755)
		os.WriteFile(filepath.Join(d, "osnoise/options"), []byte(options+"\n"), 0o644)
		os.WriteFile(filepath.Join(d, "osnoise/cpus"), []byte("0-3\n"), 0o644)
	}
	k := &fakeTracefs{root: root}
	return hostfs.FS{Root: root, Kernel: k}, k
}

const options63 = "DEFAULTS OSNOISE_WORKLOAD NO_PANIC_ON_STOP NO_OSNOISE_PREEMPT_DISABLE NO_OSNOISE_IRQ_DISABLE"

// TestOSNoiseCheck: osnoise runs beside the probe only where tracefs is
// mounted, the kernel has the tracer and its OSNOISE_WORKLOAD option, and
// no other osnoise or timerlat user runs; each refusal says why.
func TestOSNoiseCheck(t *testing.T) {
	fs, _ := tracefsTree(t, "osnoise timerlat function nop", options63)
	if dir, why := osnoiseCheck(fs); dir != "/sys/kernel/tracing" || why != "" {
		t.Fatalf("%q, %q", dir, why)
	}
	inst := filepath.Join(fs.Root, "sys/kernel/tracing/instances/other")
	os.MkdirAll(inst, 0o755)
	os.WriteFile(inst+"/current_tracer", []byte("timerlat\n"), 0o644)
	if _, why := osnoiseCheck(fs); !strings.Contains(why, "timerlat runs already (/sys/kernel/tracing/instances/other/current_tracer)") {
		t.Errorf("in use: %q", why)
	}
	for name, c := range map[string]struct {
		fs   hostfs.FS
		want string
	}{
		"no tracefs":  {hostfs.FS{Root: t.TempDir()}, "tracefs is not mounted"},
		"no osnoise":  {func() hostfs.FS { fs, _ := tracefsTree(t, "blk function nop", ""); return fs }(), "no osnoise tracer (CONFIG_OSNOISE_TRACER; /sys/kernel/tracing/available_tracers: blk function nop)"},
		"no workload": {func() hostfs.FS { fs, _ := tracefsTree(t, "osnoise nop", "DEFAULTS NO_PANIC_ON_STOP"); return fs }(), "always runs its own workload"},
	} {
		if dir, why := osnoiseCheck(c.fs); dir != "" || !strings.Contains(why, c.want) {
			t.Errorf("%s: %q, %q, want %q", name, dir, why, c.want)
		}
	}
}

// TestOSNoiseStartStop: osnoise starts in an instance of its own with its
// global settings journaled, and stop reads the events and puts every
// setting back; a rig killed in between leaves a journal that `rig
// restore`'s handlers undo, instance included.
func TestOSNoiseStartStop(t *testing.T) {
	t.Setenv(journal.EnvDir, t.TempDir())
	fs, k := tracefsTree(t, "osnoise nop", options63)
	ctx := context.Background()
	read := func(p string) string { b, _ := fs.ReadString(p); return b }
	o, why, err := startOSNoise(ctx, fs, "/sys/kernel/tracing", 1, 2*time.Second)
	if err != nil || why != "" {
		t.Fatalf("%q, %v", why, err)
	}
	inst := fmt.Sprintf("instances/rig-noise-%d/", os.Getpid())
	if read("/sys/kernel/tracing/osnoise/cpus") != "1" || !strings.Contains(read("/sys/kernel/tracing/osnoise/options"), " NO_OSNOISE_WORKLOAD ") ||
		read("/sys/kernel/tracing/"+inst+"current_tracer") != "osnoise" || read("/sys/kernel/tracing/"+inst+"trace_clock") != "mono" ||
		read("/sys/kernel/tracing/"+inst+"per_cpu/cpu1/buffer_size_kb") != "6144" {
		t.Fatalf("started: writes %q", k.writes)
	}
	if err := journal.CheckPending(journal.Dir()); err == nil {
		t.Error("the global settings are not journaled")
	}
	os.WriteFile(filepath.Join(fs.Root, "sys/kernel/tracing", inst, "per_cpu/cpu1/trace"), []byte(traceText), 0o644)
	os.WriteFile(filepath.Join(fs.Root, "sys/kernel/tracing", inst, "per_cpu/cpu1/stats"), []byte("entries: 5\noverrun: 3\n"), 0o644)
	ev, lost, why, err := o.stop()
	if err != nil || why != "" || len(ev) != 5 || lost != 3 {
		t.Fatalf("stop: %d events, lost %d, %q, %v", len(ev), lost, why, err)
	}
	if read("/sys/kernel/tracing/osnoise/cpus") != "0-3" || read("/sys/kernel/tracing/osnoise/options") != options63 || fs.Exists("/sys/kernel/tracing/"+inst) {
		t.Errorf("not put back: cpus %q, options %q, instance left %v", read("/sys/kernel/tracing/osnoise/cpus"), read("/sys/kernel/tracing/osnoise/options"), fs.Exists("/sys/kernel/tracing/"+inst))
	}
	if err := journal.CheckPending(journal.Dir()); err != nil {
		t.Errorf("after stop: %v", err)
	}

	// Killed while osnoise runs: the journal and the host lock are left
	// as a dead process leaves them; rig restore puts everything back.
	if o, _, err = startOSNoise(ctx, fs, "/sys/kernel/tracing", 1, time.Second); err != nil {
		t.Fatal(err)
	}
	o.j.Close()
	o.lock.Unlock()
	restored, err := journal.Restore(ctx, journal.Dir(), hostctl.Handlers(&nicctl.Env{NIC: facts.NIC{FS: fs}}))
	if err != nil || len(restored) != 3 {
		t.Fatalf("restore: %+v, %v", restored, err)
	}
	if read("/sys/kernel/tracing/osnoise/cpus") != "0-3" || read("/sys/kernel/tracing/osnoise/options") != options63 || fs.Exists("/sys/kernel/tracing/"+inst) {
		t.Errorf("not restored: cpus %q, options %q", read("/sys/kernel/tracing/osnoise/cpus"), read("/sys/kernel/tracing/osnoise/options"))
	}
}

// traceText is an instance's trace as osnoise's events print it (include/
// trace/events/osnoise.h): the trace time on the instance's mono clock
// when the noise ended, the start on the tracer's clock, here 500 ms
// behind mono.
var traceText = `# tracer: osnoise
#
#                                _-----=> irqs-off/BH-disabled
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
          <idle>-0       [001] d.h1.  1001.000100: irq_noise: local_timer:236 start 1000.500098000 duration 2000 ns
  rig-noise-nati-4242    [001] d.s..  1001.000300: softirq_noise:    TIMER:1 start 1000.500270000 duration 30000 ns
     kworker/1:1-55      [001] d....  1001.000500: thread_noise: kworker/1:1:55 start 1000.500390000 duration 110000 ns
  rig-noise-nati-4242    [001] .....  1001.002000: thread_noise: rig-noise-nati:4242 start 1000.402000000 duration 100000000 ns
  rig-noise-nati-4242    [001] d.h..  1001.003000: nmi_noise: start 1000.502999500 duration 500 ns
  rig-noise-nati-4242    [001] .....  1001.003100: bputs: something else
`

// TestOSNoiseEvents: events parse, their starts move onto mono, and the
// window's summary counts them per threshold without the loop's thread.
func TestOSNoiseEvents(t *testing.T) {
	ev, err := parseOSNoise(traceText)
	if err != nil || len(ev) != 5 {
		t.Fatalf("%d events, %v", len(ev), err)
	}
	if e := ev[2]; e.Kind != "thread" || e.Name != "kworker/1:1:55" || e.PID != 55 || e.NS != 110000 || e.EndMono != 1001000500000 || e.Start != 1000500390000 {
		t.Errorf("thread event %+v", e)
	}
	if ev[1].Name != "TIMER:1" || ev[4].Kind != "nmi" || ev[4].Name != "" {
		t.Errorf("softirq %+v, nmi %+v", ev[1], ev[4])
	}
	monoStarts(ev)
	if ev[0].StartMono != 1001000098000 || ev[2].StartMono != 1001000390000 {
		t.Errorf("mono starts %d %d", ev[0].StartMono, ev[2].StartMono)
	}
	o, above, kept := summarize(ev, 1001e9, 1001.01e9, 4242, []uint64{1000, 5000, 20000, 100000}, 0)
	if o.Events != 4 || len(kept) != 4 || fmt.Sprint(above) != "[3 2 2 1]" || o.LongestNS != 110000 || o.LongestName != "thread kworker/1:1:55" ||
		o.ByKind["irq"] != 1 || o.ByKind["thread"] != 1 || o.TotalNS != 142500 || o.Top[0].Name != "kworker/1:1:55" {
		t.Errorf("summary %+v, above %v", o, above)
	}
	if s := inside(kept, 1001000380000, 115000); s != "thread kworker/1:1:55 110.0 µs" {
		t.Errorf("inside a gap: %q", s)
	}
	for _, bad := range []string{
		" x [001] d.h.. 1.000001: irq_noise: a:1 start 1.000000000 duration x ns",
		" x [001] d.h.. 1.000001: irq_noise: a:1 start 1.0 duration 5 ns",
		" x [001] d.h.. 1.01: irq_noise: a:1 start 1.000000000 duration 5 ns",
		" x [001] d.... 1.000001: thread_noise: nopid start 1.000000000 duration 5 ns",
	} {
		if _, err := parseOSNoise(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// FuzzParseOSNoise: any trace parses or is refused; a parsed event has a
// kind and a thread event a pid.
func FuzzParseOSNoise(f *testing.F) {
	f.Add(traceText)
	f.Fuzz(func(t *testing.T, s string) {
		ev, err := parseOSNoise(s)
		if err != nil {
			return
		}
		for _, e := range ev {
			if e.Kind == "" || e.EndMono < 0 || e.Kind == "thread" && !strings.HasSuffix(e.Name, fmt.Sprintf(":%d", e.PID)) {
				t.Fatalf("%q: %+v", s, e)
			}
		}
		monoStarts(ev)
	})
}
