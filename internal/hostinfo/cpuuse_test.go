package hostinfo

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/hostfs"
)

// schedstatSamples are /proc/schedstat as kernels print it (stats.c
// show_schedstat): version 15 with a cpumask domain line, version 17 with
// the domain's name, then what rig refuses.
var schedstatSamples = []string{
	"version 15\ntimestamp 15819019232\ncpu0 498494191 0 3533438552 2553969831 3853684107 2465731542 2045936778163039 343796328169361 4767485306\n" +
		"domain0 00000000,00000003 212499247 210112015 1861015 1860405436 536440 369895 32599 210079416 25368550 24241256 384652 927363878 807233 6366 1647 24239609 2122447165 1886868564 121112060 2848625533 125678146 241025 1032026 1885836538 2545 12 2533 0 0 0 0 0 0 1387952561 21076581 0\n" +
		"cpu1 518377256 0 4155211005 2778589869 10466382 2867629021 1904686152592476 364107263788241 5145567945\n",
	"version 17\ntimestamp 4295038131\ncpu0 0 0 1893 770 1247 706 331571553 90391277 1105\ndomain0 SMT 00000003 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n" +
		"cpu2 0 0 40 20 30 10 5000000 100 25\n",
	"version 14\ntimestamp 1\ncpu0 0 0 0 0 0 0 0 0 0 0 0 0\n",
	"version 18\ncpu0 0 0 0 0 0 0 0 0 0\n",
	"cpu0 0 0 0 0 0 0 1 2 3\n",
	"version 15\ncpu0 0 0 0 0 0 0 1 2\n",
	"version 15\ncpux 0 0 0 0 0 0 1 2 3\n",
}

func TestParseSchedstat(t *testing.T) {
	rq, err := ParseSchedstat([]byte(schedstatSamples[0]))
	if err != nil || len(rq) != 2 || rq[1] != (RunQueue{CPU: 1, RunNS: 1904686152592476, WaitNS: 364107263788241, Slices: 5145567945}) {
		t.Fatalf("version 15: %+v %v", rq, err)
	}
	rq, err = ParseSchedstat([]byte(schedstatSamples[1]))
	if err != nil || len(rq) != 2 || rq[1] != (RunQueue{CPU: 2, RunNS: 5000000, WaitNS: 100, Slices: 25}) {
		t.Fatalf("version 17: %+v %v", rq, err)
	}
	for i, want := range []string{"version \"14\": rig reads versions 15 to 17", "version \"18\"", "want \"version N\" first", "/proc/schedstat:2:", "/proc/schedstat:2:"} {
		if _, err := ParseSchedstat([]byte(schedstatSamples[2+i])); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("sample %d: %v, want %q", 2+i, err, want)
		}
	}
	if _, err := ReadSchedstat(hostfs.FS{Root: t.TempDir()}); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "CONFIG_SCHEDSTATS") {
		t.Errorf("missing file: %v", err)
	}
}

// Busy's rule: rq_cpu_time when the kernel has it, /proc/stat when it has
// not, and /proc/stat when it shows more than rq_cpu_time by more than its
// resolution (a task not switched out in the window).
func TestBusyRule(t *testing.T) {
	stat := func(user, idle, steal float64) []CPUTimes {
		return []CPUTimes{{CPU: 3, User: user, Idle: idle, Steal: steal}}
	}
	rq := func(ns, slices uint64) []RunQueue { return []RunQueue{{CPU: 3, RunNS: ns, Slices: slices}} }
	a := CPUUse{Times: stat(1, 1, 0), RunQueues: rq(0, 0)}
	for _, c := range []struct {
		name   string
		b      CPUUse
		share  float64
		source string
	}{
		{"rq", CPUUse{Times: stat(1.2, 1.8, 0), RunQueues: rq(250e6, 40)}, 0.25, BusyRunQueue},
		{"rq within stat's resolution", CPUUse{Times: stat(1.3, 1.7, 0), RunQueues: rq(250e6, 40)}, 0.25, BusyRunQueue},
		{"not switched out", CPUUse{Times: stat(1.9, 1.1, 0), RunQueues: rq(10e6, 1)}, 0.9, BusyStatOver},
		{"no schedstat", CPUUse{Times: stat(1.5, 1.4, 0.1)}, 0.5, BusyStat},
	} {
		b, ok := Busy(a, c.b, 3, time.Second)
		if !ok || b.Source != c.source || abs(b.Share-c.share) > 1e-9 || abs(b.RunNS-c.share*1e9) > 1 || b.WindowNS != 1e9 {
			t.Errorf("%s: %+v", c.name, b)
		}
		if b.HaveSlices != (c.b.RunQueues != nil) {
			t.Errorf("%s: slices %+v", c.name, b)
		}
	}
	if b, _ := Busy(a, CPUUse{Times: stat(1.5, 1.4, 0.1)}, 3, time.Second); abs(b.Steal-0.1) > 1e-9 {
		t.Errorf("steal %+v", b)
	}
	if _, ok := Busy(a, CPUUse{Times: stat(2, 2, 0)}, 4, time.Second); ok {
		t.Error("a CPU /proc/stat lacks was measured")
	}
}

func abs(v float64) float64 { return max(v, -v) }

// ThreadNamesNote: /proc with kthreadd as PID 2 shows the node (no note);
// a container's own /proc (no PID 2, or another process there) gets the
// note; an unreadable one "cannot tell". Each with the hostPID fix.
func TestThreadNamesNote(t *testing.T) {
	for _, c := range []struct {
		comm string // /proc/2/comm; "" none, "/" a directory (unreadable)
		note string
	}{{"kthreadd", ""}, {"", "only this PID namespace"}, {"sleep", "only this PID namespace"}, {"/", "cannot tell"}} {
		fs := hostfs.FS{Root: t.TempDir()}
		if err := os.MkdirAll(fs.Path("/proc/2"), 0o755); err != nil {
			t.Fatal(err)
		}
		switch c.comm {
		case "":
		case "/":
			if err := os.Mkdir(fs.Path("/proc/2/comm"), 0o755); err != nil {
				t.Fatal(err)
			}
		default:
			if err := os.WriteFile(fs.Path("/proc/2/comm"), []byte(c.comm+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if n := ThreadNamesNote(fs); !strings.Contains(n, c.note) || (c.note == "") != (n == "") || c.note != "" && !strings.Contains(n, "hostPID: true") {
			t.Errorf("%+v: %q", c, n)
		}
	}
}
