package hostinfo

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
)

func seedFiles(f *testing.F, path string) {
	for _, tree := range trees {
		if b, err := os.ReadFile("testdata/" + tree + path); err == nil {
			f.Add(b)
		}
	}
}

// asciiPlain reports input the fast and slow parsers must agree on: the slow
// one splits on Unicode whitespace, the fast one on ' ' and '\t' only.
func asciiPlain(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 || (c < ' ' && c != '\n' && c != '\t') {
			return false
		}
	}
	return true
}

// FuzzInterrupts checks that the table parser never panics and that the
// allocation-free reader agrees with it on every row it accepts.
func FuzzInterrupts(f *testing.F) {
	seedFiles(f, "/proc/interrupts")
	for _, n := range []string{"firecracker", "mixed", "c8g-al2023-6.1"} {
		b, err := os.ReadFile("testdata/interrupts/" + n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("  CPU0 CPU1\n 1: 2\n ERR: 0\n"))
	f.Add([]byte("CPU0\n 1: 5 a b c, d\nNMI: 1 x\n 2: 7 GICv3 3 Edge -fasteoi x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tab, err := ParseCounterTable(b)
		if err != nil || len(tab.CPUs) == 0 {
			return
		}
		for _, r := range tab.Rows {
			if len(r.Counts) != len(tab.CPUs) {
				t.Fatalf("row %q has %d counts for %d CPUs", r.ID, len(r.Counts), len(tab.CPUs))
			}
			if n, err := strconv.Atoi(r.ID); (err == nil) != (r.IRQ >= 0) || err == nil && n != r.IRQ {
				t.Fatalf("row %q: IRQ %d", r.ID, r.IRQ)
			}
			for _, a := range r.Actions {
				if a == "" || strings.TrimSpace(a) != a || strings.Contains(a, ",") {
					t.Fatalf("row %q: bad action %q", r.ID, a)
				}
			}
			if r.IRQ >= 0 && r.Name != strings.Join(r.Actions, ", ") {
				t.Fatalf("row %q: name %q, actions %q", r.ID, r.Name, r.Actions)
			}
		}
		if !asciiPlain(b) {
			return
		}
		seen := map[int]bool{}
		for _, c := range tab.CPUs {
			if seen[c] {
				return // duplicate CPU columns: reader picks one, fine
			}
			seen[c] = true
		}
		rd, tab2, err := NewCounterReader(b, tab.CPUs)
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]bool{}
		for _, r := range tab2.Rows {
			if ids[r.ID] {
				return // duplicate IDs: reader keeps the first
			}
			ids[r.ID] = true
		}
		dst := make([]uint64, rd.Len())
		if _, err := rd.Read(b, dst, nil); err != nil {
			t.Fatal(err)
		}
		n := len(tab.CPUs)
		for k, r := range tab2.Rows {
			if !bytes.Equal(u64b(dst[k*n:(k+1)*n]), u64b(r.Counts)) {
				t.Fatalf("row %q: fast %v slow %v", r.ID, dst[k*n:(k+1)*n], r.Counts)
			}
		}
	})
}

func u64b(v []uint64) []byte {
	var b []byte
	for _, x := range v {
		for i := 0; i < 8; i++ {
			b = append(b, byte(x>>(8*i)))
		}
	}
	return b
}

// FuzzSoftirqs runs the table parser on softirq-shaped input.
func FuzzSoftirqs(f *testing.F) {
	seedFiles(f, "/proc/softirqs")
	f.Fuzz(func(t *testing.T, b []byte) {
		tab, err := ParseCounterTable(b)
		if err != nil {
			return
		}
		for _, r := range tab.Rows {
			if r.ID == "" || len(r.Counts) != len(tab.CPUs) {
				t.Fatalf("bad row %+v", r)
			}
		}
	})
}

// FuzzSoftnet checks ParseSoftnetInto stays within dst and never panics.
func FuzzSoftnet(f *testing.F) {
	seedFiles(f, "/proc/net/softnet_stat")
	f.Fuzz(func(t *testing.T, b []byte) {
		dst := make([]Softnet, 4)
		n, _ := ParseSoftnetInto(b, dst)
		if n > len(dst) {
			t.Fatal(n)
		}
	})
}

// FuzzCpuidle fuzzes the per-file number parser cpuidle and the sampler use.
func FuzzCpuidle(f *testing.F) {
	f.Add([]byte("133\n"))
	f.Add([]byte(" 18446744073709551615 "))
	f.Add([]byte("18446744073709551616"))
	f.Add([]byte("1 2"))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, ok := ParseUint(b)
		if !ok {
			return
		}
		ref, err := strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
		if err != nil || ref != v {
			t.Fatalf("%q parsed as %d, strconv says %d, %v", b, v, ref, err)
		}
	})
}

// FuzzCmdline checks the command-line parser never panics and that decoded
// isolation lists come from parameters that are present.
func FuzzCmdline(f *testing.F) {
	seedFiles(f, "/proc/cmdline")
	f.Add([]byte(`isolcpus=nohz,domain,1-3 rcu_nocbs "a b=c" -- x`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := ParseCmdline(string(b))
		if len(c.Isolcpus.CPUs) > 0 && !c.Isolcpus.Set {
			t.Fatal("isolcpus decoded but not set")
		}
		for _, p := range c.Params {
			if p.Key == "--" && !p.HasValue {
				t.Fatal("-- kept as a parameter")
			}
		}
	})
}

// FuzzCgroup fuzzes /proc/PID/cgroup, cpu.max and cpu.stat.
func FuzzCgroup(f *testing.F) {
	seedFiles(f, "/proc/self/cgroup")
	seedFiles(f, "/sys/fs/cgroup/cpu.stat")
	f.Add([]byte("200000 100000"))
	f.Add([]byte("max"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if ents, err := ParseProcCgroup(b); err == nil {
			for _, e := range ents {
				if e.ID < 0 {
					t.Fatal(e)
				}
			}
		}
		if m, err := ParseCPUMax(string(b)); err == nil && (m.PeriodUS <= 0 || m.QuotaUS == 0) {
			t.Fatalf("%q -> %+v", b, m)
		}
		_, _ = ParseCPUStat(b)
	})
}

// FuzzTaskStat fuzzes the stat and status parsers of the thread sampler.
func FuzzTaskStat(f *testing.F) {
	seedFiles(f, "/proc/4242/task/4250/stat")
	seedFiles(f, "/proc/4242/task/4250/status")
	f.Fuzz(func(t *testing.T, b []byte) {
		if st, ok := ParseTaskStat(b); ok && (st.PID < 0 || st.CPU < 0 || len(st.Comm) > len(b)) {
			t.Fatal(st)
		}
		ParseCtxSwitches(b)
	})
}

// FuzzTaskSchedstat checks the schedstat parser never panics and that
// what it accepts prints back as the same three numbers.
func FuzzTaskSchedstat(f *testing.F) {
	f.Add([]byte("1234 56 7\n"))
	f.Add([]byte("0 0 0"))
	f.Add([]byte("18446744073709551615 1 2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, ok := ParseTaskSchedstat(b)
		if !ok {
			return
		}
		got := strings.Fields(string(b))
		if len(got) != 3 {
			t.Fatalf("%q parsed as %+v", b, s)
		}
		for i, want := range []uint64{s.RunNS, s.WaitNS, s.Slices} {
			if v, err := strconv.ParseUint(got[i], 10, 64); err != nil || v != want {
				t.Fatalf("%q field %d: parsed %d, strconv says %d (%v)", b, i, want, v, err)
			}
		}
	})
}

// FuzzIdleState writes fuzzed sysfs values into a cpuidle state directory
// and checks ReadIdleStates either rejects them or returns exactly them.
func FuzzIdleState(f *testing.F) {
	f.Add([]byte("C6\n"), []byte("133\n"), []byte("7\n"), []byte("1\n"))
	f.Add([]byte("POLL"), []byte("0"), []byte("x"), []byte("0"))
	f.Fuzz(func(t *testing.T, name, latency, usage, disable []byte) {
		root := t.TempDir()
		d := root + IdleStatePath(0, 0)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for fn, v := range map[string][]byte{"name": name, "latency": latency, "usage": usage, "disable": disable, "time": []byte("5\n")} {
			if err := os.WriteFile(d+"/"+fn, v, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		st, err := ReadIdleStates(hostfs.FS{Root: root}, 0)
		if err != nil {
			return
		}
		lat, ok1 := ParseUint(latency)
		use, ok2 := ParseUint(usage)
		dis, ok3 := ParseUint(disable)
		if len(st) != 1 || !ok1 || !ok2 || !ok3 || st[0].LatencyUS != lat || st[0].Usage != use || st[0].Disabled != (dis != 0) || st[0].TimeUS != 5 {
			t.Fatalf("%+v from %q %q %q", st, latency, usage, disable)
		}
	})
}

// FuzzCgroupMounts fuzzes /proc/self/mountinfo as ReadCgroup reads it
// with a cgroup v1 container's /proc/self/cgroup: the directory found is
// always below the mount point of a mount of the controller.
func FuzzCgroupMounts(f *testing.F) {
	seedFiles(f, "/proc/self/mountinfo")
	f.Add([]byte("31 30 0:28 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"))
	cg := "2:cpu,cpuacct:/kubepods/pod1/c1\n7:cpuset:/kubepods/pod1/c1\n"
	h := hostfs.FS{Root: f.TempDir()} // one per fuzzing process, rewritten each time
	f.Fuzz(func(t *testing.T, b []byte) {
		for p, v := range map[string]string{"/proc/self/cgroup": cg, "/proc/self/mountinfo": string(b)} {
			if err := os.MkdirAll(filepath.Dir(h.Path(p)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(h.Path(p), []byte(v), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		c, err := ReadCgroup(h, "self")
		if err != nil {
			return
		}
		if c.Version != 1 || !strings.HasPrefix(c.Dir, "/") || !strings.Contains(string(b), " - cgroup ") {
			t.Fatalf("%q: %+v", b, c)
		}
	})
}

// FuzzSchedstat checks the /proc/schedstat parser never panics and that
// every cpuN line it accepts gives back its fields 7 to 9.
func FuzzSchedstat(f *testing.F) {
	for _, s := range schedstatSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rqs, err := ParseSchedstat(b)
		if err != nil {
			return
		}
		i := 0
		for _, line := range strings.Split(string(b), "\n") {
			fs := strings.Fields(line)
			if len(fs) == 0 || !strings.HasPrefix(fs[0], "cpu") {
				continue
			}
			if cpu, err := strconv.ParseUint(fs[0][3:], 10, 20); i == len(rqs) || err != nil || int(cpu) != rqs[i].CPU {
				t.Fatalf("line %q: parsed %+v", line, rqs)
			}
			for k, want := range []uint64{rqs[i].RunNS, rqs[i].WaitNS, rqs[i].Slices} {
				if v, err := strconv.ParseUint(fs[7+k], 10, 64); err != nil || v != want {
					t.Fatalf("line %q field %d: parsed %d, strconv says %d (%v)", line, 7+k, want, v, err)
				}
			}
			i++
		}
		if i != len(rqs) {
			t.Fatalf("%d cpu lines, %d parsed", i, len(rqs))
		}
	})
}
