package hostctl

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostfs/hostfstest"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/scenario"
	"github.com/rig-project/rig/nicctl"
)

// balancer is an irqbalance run by systemd that Stop and Start switch.
type balancer struct{ running bool }

func (b *balancer) State(context.Context) (facts.IRQBalanceState, error) {
	return facts.IRQBalanceState{Running: b.running, PID: 99, Systemd: true}, nil
}
func (b *balancer) Stop(context.Context) error  { b.running = false; return nil }
func (b *balancer) Start(context.Context) error { b.running = true; return nil }

// refusing makes writes to some files fail the way the kernel refuses a
// managed IRQ (root writes read-only files, so modes cannot show it).
type refusing struct {
	hostfs.FS
	errno map[string]error
}

func (r refusing) WriteFile(p, v string) error {
	if e := r.errno[p]; e != nil {
		return &os.PathError{Op: "write", Path: p, Err: e}
	}
	return r.FS.WriteFile(p, v)
}

// steerTree is a copy of the c7i fixture (8 CPUs, SMT pairs n and n+4:
// CPU 1's sibling is 5) with online files for CPUs 1-7 (x86 has none for
// CPU 0) and IRQs that cover each rule: 25 only on CPU 1, 26 only on 1
// and its sibling, 27 refused with EIO, 28 read-only, 50 without
// smp_affinity_list.
func steerTree(t *testing.T) hostfs.FS {
	root := hostfstest.CopyTree(t, "../hostinfo/testdata/c7i")
	put := func(p, v string, mode os.FileMode) {
		t.Helper()
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	for c := 1; c < 8; c++ {
		put("sys/devices/system/cpu/cpu"+string(rune('0'+c))+"/online", "1\n", 0o644)
	}
	put("proc/irq/25/smp_affinity_list", "1\n", 0o644)
	put("proc/irq/26/smp_affinity_list", "1,5\n", 0o644)
	put("proc/irq/28/smp_affinity_list", "0-7\n", 0o444)
	put("proc/irq/50/spurious", "count 0\n", 0o444)
	return hostfs.FS{Root: root}
}

// snap is every file below root: mode and content.
func snap(t *testing.T, root string) map[string]string {
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		b, _ := os.ReadFile(p)
		out[strings.TrimPrefix(p, root)] = st.Mode().String() + " " + string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func steerHost(t *testing.T, fsys hostfs.FS, b *balancer) (*Host, string) {
	env := &nicctl.Env{NIC: facts.NIC{FS: fsys}, IRQBalance: b,
		Files: refusing{fsys, map[string]error{"/proc/irq/27/smp_affinity_list": syscall.EIO}}}
	dir := t.TempDir()
	j, err := journal.Open(dir, Handlers(env))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return &Host{FS: fsys, NIC: env, Journal: j}, dir
}

// TestSteerApplyAndRestore: irq.away and smt.fence on a fake tree move
// every IRQ off CPU 1 and its sibling 5 (one with nowhere else to go to
// the housekeeping CPUs), name the IRQs they could not move, hold
// irqbalance, take CPU 5 offline, and the undo gives back the tree byte
// for byte and irqbalance running.
func TestSteerApplyAndRestore(t *testing.T) {
	fsys := steerTree(t)
	before := snap(t, fsys.Root)
	b := &balancer{running: true}
	h, _ := steerHost(t, fsys, b)
	cpu := 1
	k := scenario.Knobs{Responder: scenario.Responder{CPU: &cpu}, IRQ: &scenario.IRQ{Away: true}, SMT: &scenario.SMT{Fence: true}}
	ap, err := Apply(context.Background(), h, Arm{Name: "quiet", Knobs: k})
	if err != nil {
		t.Fatal(err)
	}
	report := strings.Join(ap.Report, "\n")
	for p, want := range map[string]string{
		"/proc/irq/0/smp_affinity_list":       "0,2-4,6-7",
		"/proc/irq/25/smp_affinity_list":      "0,2-4,6-7", // only on CPU 1: the housekeeping CPUs
		"/proc/irq/26/smp_affinity_list":      "0,2-4,6-7",
		"/proc/irq/27/smp_affinity_list":      "0-7\n", // refused: left
		"/proc/irq/28/smp_affinity_list":      "0-7\n", // read-only: left
		"/sys/devices/system/cpu/cpu5/online": "0\n",
		"/sys/devices/system/cpu/cpu1/online": "1\n",
		"/sys/devices/system/cpu/cpu2/online": "1\n",
	} {
		got, _ := os.ReadFile(fsys.Path(p))
		if string(got) != want {
			t.Errorf("%s = %q, want %q\n%s", p, got, want, report)
		}
	}
	if b.running {
		t.Error("irqbalance not held")
	}
	for _, want := range []string{"irq away: 25 IRQs moved off CPU 1,5 (housekeeping CPUs 0,2-4,6-7); LEFT on it: IRQ 27 (EIO), IRQ 28 (smp_affinity_list is read-only), IRQ 50 (no smp_affinity_list: cannot tell)",
		"smt fence: cpu5 offline (/sys/devices/system/cpu/cpu5/online 1 → 0, read back)"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if err := ap.Undo(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !b.running {
		t.Error("irqbalance not started again")
	}
	report = strings.Join(ap.Report, "\n")
	for _, want := range []string{"smt fence: cpu5 still offline at the end of the arm", "irq away: held to the end of the arm: no IRQ came back to CPU 1,5"} {
		if !strings.Contains(report, want) {
			t.Errorf("undo report lacks %q:\n%s", want, report)
		}
	}
	after := snap(t, fsys.Root)
	for p, v := range before {
		if after[p] != v {
			t.Errorf("%s after undo: %q, was %q", p, after[p], v)
		}
	}
	if len(after) != len(before) {
		t.Errorf("%d files after undo, %d before", len(after), len(before))
	}
}

// TestSteerRefusals: a fence that could not be put back as it was is
// refused before anything changes, naming why; a CPU without sibling has
// nothing to fence.
func TestSteerRefusals(t *testing.T) {
	cpu := 1
	fence := scenario.Knobs{Responder: scenario.Responder{CPU: &cpu}, SMT: &scenario.SMT{Fence: true}, IRQ: &scenario.IRQ{Away: true}}
	for _, tc := range []struct {
		name, want string
		prep       func(root string)
	}{
		{"no online file", "CPU 5 cannot be taken offline", func(root string) { os.Remove(root + "/sys/devices/system/cpu/cpu5/online") }},
		{"read-only online file", "cpu5/online is read-only", func(root string) { os.Chmod(root+"/sys/devices/system/cpu/cpu5/online", 0o444) }},
		{"a process pinned to the sibling", "pid 4242 (pinned) is pinned to CPU 5", func(root string) {
			os.MkdirAll(root+"/proc/4242", 0o755)
			os.WriteFile(root+"/proc/4242/status", []byte("Name:\tpinned\nPPid:\t1\nCpus_allowed_list:\t5\n"), 0o444)
		}},
		{"a cgroup v1 cpuset", "cgroup v1 cpuset pods/a lists CPU 4-7", func(root string) {
			os.MkdirAll(root+"/sys/fs/cgroup/cpuset/pods/a", 0o755)
			os.WriteFile(root+"/sys/fs/cgroup/cpuset/cpuset.cpus", []byte("0-7\n"), 0o644)
			os.WriteFile(root+"/sys/fs/cgroup/cpuset/pods/cpuset.cpus", []byte("0-7\n"), 0o644)
			os.WriteFile(root+"/sys/fs/cgroup/cpuset/pods/a/cpuset.cpus", []byte("4-7\n"), 0o644)
		}},
		{"no sibling", "CPU 1 has no SMT sibling", func(root string) {
			os.WriteFile(root+"/sys/devices/system/cpu/cpu1/topology/thread_siblings_list", []byte("1\n"), 0o444)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := steerTree(t)
			tc.prep(fsys.Root)
			before := snap(t, fsys.Root)
			h, _ := steerHost(t, fsys, &balancer{running: true})
			_, err := Apply(context.Background(), h, Arm{Name: "quiet", Knobs: fence})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want %q, got %v", tc.want, err)
			}
			after := snap(t, fsys.Root)
			for p, v := range before {
				if after[p] != v {
					t.Errorf("%s changed: %q, was %q", p, after[p], v)
				}
			}
		})
	}
}

// TestSteerCheckedAtTheEnd: what irq.away and smt.fence claimed is read
// again when the arm ends; an IRQ moved back and a sibling brought online
// during the round are reported, and the undo still restores the tree.
func TestSteerCheckedAtTheEnd(t *testing.T) {
	fsys := steerTree(t)
	before := snap(t, fsys.Root)
	h, _ := steerHost(t, fsys, &balancer{})
	cpu := 1
	k := scenario.Knobs{Responder: scenario.Responder{CPU: &cpu}, IRQ: &scenario.IRQ{Away: true}, SMT: &scenario.SMT{Fence: true}}
	ap, err := Apply(context.Background(), h, Arm{Name: "quiet", Knobs: k})
	if err != nil {
		t.Fatal(err)
	}
	// Something else during the round: IRQ 4 back on every CPU, CPU 5 online.
	for p, v := range map[string]string{"/proc/irq/4/smp_affinity_list": "0-7\n", "/sys/devices/system/cpu/cpu5/online": "1\n"} {
		if err := fsys.WriteFile(p, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := ap.Undo(context.Background()); err != nil {
		t.Fatal(err)
	}
	report := strings.Join(ap.Report, "\n")
	for _, want := range []string{"smt fence: cpu5 was online again at the end of the arm", "irq away: back on CPU 1,5 at the end of the arm (moved by something else, or new): IRQ 4"} {
		if !strings.Contains(report, want) {
			t.Errorf("undo report lacks %q:\n%s", want, report)
		}
	}
	after := snap(t, fsys.Root)
	for p, v := range before {
		if after[p] != v {
			t.Errorf("%s after undo: %q, was %q", p, after[p], v)
		}
	}
}

// TestSteerAwayFromEveryResponder: with irq.away resolved to several
// measured CPUs (a fan-out round's responders), every IRQ leaves them all.
func TestSteerAwayFromEveryResponder(t *testing.T) {
	fsys := steerTree(t)
	h, _ := steerHost(t, fsys, &balancer{})
	cpu := 1
	k := scenario.Knobs{Responder: scenario.Responder{CPU: &cpu}, IRQ: &scenario.IRQ{Away: true, AwayFrom: []int{1, 2}}}
	ap, err := Apply(context.Background(), h, Arm{Name: "fan", Knobs: k})
	if err != nil {
		t.Fatal(err)
	}
	defer ap.Undo(context.Background())
	for _, n := range []string{"0", "25", "26", "44"} {
		got, _ := fsys.ReadString("/proc/irq/" + n + "/smp_affinity_list")
		if strings.Contains(got, "1") || strings.Contains(got, "2") {
			t.Errorf("IRQ %s on %q, want none of CPU 1,2", n, got)
		}
	}
}

// TestSteerAwayBesideIRQCPUs: irq.cpus on the measured CPU plus away puts
// the NIC's queue IRQs there and every other IRQ off it; the undo gives
// the tree back.
func TestSteerAwayBesideIRQCPUs(t *testing.T) {
	fsys := steerTree(t)
	before := snap(t, fsys.Root)
	h, _ := steerHost(t, fsys, &balancer{})
	h.Iface, h.AllowMgmt = "ens6", true
	cpu := 1
	k := scenario.Knobs{Responder: scenario.Responder{CPU: &cpu}, IRQ: &scenario.IRQ{CPUs: []int{1}, Away: true}}
	ap, err := Apply(context.Background(), h, Arm{Name: "nic-here", Knobs: k})
	if err != nil {
		t.Fatal(err)
	}
	for n, want := range map[string]string{"37": "1", "44": "1", "29": "0,2-7", "0": "0,2-7", "36": "0,2-7"} { // ens6 queues, ens5's, timer, ens6 misc
		if got, _ := fsys.ReadString("/proc/irq/" + n + "/smp_affinity_list"); got != want {
			t.Errorf("IRQ %s on %q, want %q\n%s", n, got, want, strings.Join(ap.Report, "\n"))
		}
	}
	if !strings.Contains(strings.Join(ap.Report, "\n"), "queue IRQ of ens6: left where irq.cpus put it") {
		t.Errorf("report does not say the queues stay:\n%s", strings.Join(ap.Report, "\n"))
	}
	if err := ap.Undo(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := snap(t, fsys.Root)
	for p, v := range before {
		if after[p] != v {
			t.Errorf("%s after undo: %q, was %q", p, after[p], v)
		}
	}
}

// TestSteerFenceAlone: smt.fence without irq.away moves IRQs off the
// sibling only (the kernel would widen one left with no online CPU), and
// leaves the responder CPU's.
func TestSteerFenceAlone(t *testing.T) {
	fsys := steerTree(t)
	h, _ := steerHost(t, fsys, &balancer{})
	cpu := 1
	ap, err := Apply(context.Background(), h, Arm{Name: "fence", Knobs: scenario.Knobs{Responder: scenario.Responder{CPU: &cpu}, SMT: &scenario.SMT{Fence: true}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ap.Undo(context.Background())
	for n, want := range map[string]string{"25": "1\n", "26": "1", "0": "0-4,6-7"} {
		if got, _ := os.ReadFile(fsys.Path("/proc/irq/" + n + "/smp_affinity_list")); string(got) != want {
			t.Errorf("IRQ %s on %q, want %q", n, got, want)
		}
	}
	if r := strings.Join(ap.Report, "\n"); !strings.Contains(r, "smt fence: 24 IRQs moved off CPU 5 (housekeeping CPUs 0,2-4,6-7)") {
		t.Errorf("report:\n%s", r)
	}
}
