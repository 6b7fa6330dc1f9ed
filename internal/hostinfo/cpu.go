package hostinfo

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/rundir"
)

const cpuDir = "/sys/devices/system/cpu"

// readList reads a sysfs CPU list file. An empty file is an empty list.
func readList(fs hostfs.FS, p string) ([]int, error) {
	s, err := fs.ReadString(p)
	if err != nil {
		return nil, err
	}
	l, err := cpulist.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return l, nil
}

// OnlineCPUs reads /sys/devices/system/cpu/online.
func OnlineCPUs(fs hostfs.FS) ([]int, error) { return readList(fs, cpuDir+"/online") }

// IsolatedCPUs reads /sys/devices/system/cpu/isolated (isolcpus= domain CPUs).
func IsolatedCPUs(fs hostfs.FS) ([]int, error) { return readList(fs, cpuDir+"/isolated") }

// NohzFullCPUs reads /sys/devices/system/cpu/nohz_full. Kernels without
// CONFIG_NO_HZ_FULL have no such file: the error wraps os.ErrNotExist.
func NohzFullCPUs(fs hostfs.FS) ([]int, error) {
	l, err := readList(fs, cpuDir+"/nohz_full")
	// The kernel prints " (null)" when nohz_full is built in but unused.
	if err != nil && strings.Contains(err.Error(), "(null)") {
		return nil, nil
	}
	return l, err
}

// ThreadSiblings reads cpu's thread_siblings_list: its SMT siblings, cpu
// included (one CPU alone on a host without SMT).
func ThreadSiblings(fs hostfs.FS, cpu int) ([]int, error) {
	return readList(fs, fmt.Sprintf("%s/cpu%d/topology/thread_siblings_list", cpuDir, cpu))
}

// ReadTopology reads the topology of one CPU.
func ReadTopology(fs hostfs.FS, cpu int) (rundir.CPUTopology, error) {
	d := fmt.Sprintf("%s/cpu%d/topology", cpuDir, cpu)
	t := rundir.CPUTopology{CPU: cpu, Node: -1}
	pkg, err := fs.ReadInt(d + "/physical_package_id")
	if err != nil {
		return t, err
	}
	core, err := fs.ReadInt(d + "/core_id")
	if err != nil {
		return t, err
	}
	t.Package, t.Core = int(pkg), int(core)
	if t.ThreadSiblings, err = ThreadSiblings(fs, cpu); err != nil {
		return t, err
	}
	t.Node = CPUNode(fs, cpu)
	return t, nil
}

// CPUNode is cpu's NUMA node, from its nodeN link; -1 when the kernel
// gives none (built without NUMA).
func CPUNode(fs hostfs.FS, cpu int) int {
	if m, _ := fs.Glob(fmt.Sprintf("%s/cpu%d/node*", cpuDir, cpu)); len(m) > 0 {
		if n, err := strconv.Atoi(strings.TrimPrefix(m[0][strings.LastIndex(m[0], "/")+1:], "node")); err == nil {
			return n
		}
	}
	return -1
}

// NICNode is iface's NUMA node (/sys/class/net/IF/device/numa_node): -1
// when the platform gives none (the file says -1, or a virtual device
// has no device directory).
func NICNode(fs hostfs.FS, iface string) (int, error) {
	n, err := fs.ReadInt("/sys/class/net/" + iface + "/device/numa_node")
	if errors.Is(err, os.ErrNotExist) && fs.Exists("/sys/class/net/"+iface) {
		return -1, nil
	}
	if err != nil {
		return -1, err
	}
	return int(max(n, -1)), nil
}

// CPUModel returns the first "model name" of /proc/cpuinfo (x86) or the
// "CPU part"/"Hardware" line elsewhere; "" when there is none.
func CPUModel(fs hostfs.FS) (string, error) {
	_, v, err := cpuinfo(fs, "model name", "Hardware", "CPU part")
	return v, err
}

// cpuinfo is the one reader of /proc/cpuinfo: the first line of the first
// of keys that has one, as key and trimmed value ("" for none).
func cpuinfo(fs hostfs.FS, keys ...string) (key, value string, err error) {
	b, err := fs.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "", "", err
	}
	for _, key := range keys {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == key {
				return key, strings.TrimSpace(v), nil
			}
		}
	}
	return "", "", nil
}

// CPUFlags returns the "flags" of the first CPU in /proc/cpuinfo (x86;
// arm64 has "Features" instead, returned the same way). The "hypervisor"
// flag says the kernel runs in a VM.
func CPUFlags(fs hostfs.FS) ([]string, error) {
	_, v, err := cpuinfo(fs, "flags", "Features")
	return strings.Fields(v), err
}

// Arch is the kernel's machine name ("x86_64", "aarch64"), from
// /proc/sys/kernel/arch (Linux ≥ 6.1), else guessed from /proc/cpuinfo's
// keys (x86 has vendor_id, arm64 "CPU architecture"). It is the host's,
// not the rig binary's: a fake tree of an arm64 host reads as aarch64.
func Arch(fs hostfs.FS) (string, error) {
	if a, err := fs.ReadString("/proc/sys/kernel/arch"); err == nil && a != "" {
		return a, nil
	}
	switch k, _, err := cpuinfo(fs, "vendor_id", "CPU architecture"); {
	case err != nil:
		return "", err
	case k == "vendor_id":
		return "x86_64", nil
	case k != "":
		return "aarch64", nil
	}
	return "", fmt.Errorf("/proc/cpuinfo: no vendor_id or CPU architecture line to tell the architecture")
}

// IdleStatePath is the sysfs directory of a cpuidle state.
func IdleStatePath(cpu, state int) string {
	return fmt.Sprintf("%s/cpu%d/cpuidle/state%d", cpuDir, cpu, state)
}

// ReadIdleStates reads all cpuidle states of cpu, ordered by index. A CPU
// without cpuidle (driver "none", idle=poll) gives an error wrapping
// os.ErrNotExist.
func ReadIdleStates(fs hostfs.FS, cpu int) ([]rundir.IdleState, error) {
	dir := fmt.Sprintf("%s/cpu%d/cpuidle", cpuDir, cpu)
	ents, err := fs.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []rundir.IdleState
	for _, e := range ents {
		k, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "state"))
		if !strings.HasPrefix(e.Name(), "state") || err != nil {
			continue
		}
		s, err := readIdleState(fs, dir+"/"+e.Name(), k)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no state directories: %w", dir, os.ErrNotExist)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}

func readIdleState(fs hostfs.FS, d string, k int) (rundir.IdleState, error) {
	s := rundir.IdleState{Index: k}
	var err error
	if s.Name, err = fs.ReadString(d + "/name"); err != nil {
		return s, err
	}
	s.Desc, _ = fs.ReadString(d + "/desc")
	nums := []struct {
		f   string
		dst *uint64
		opt bool
	}{{"latency", &s.LatencyUS, false}, {"residency", &s.ResidencyUS, true}, {"usage", &s.Usage, false},
		{"time", &s.TimeUS, false}, {"above", &s.Above, true}, {"below", &s.Below, true}}
	for _, n := range nums {
		b, err := fs.ReadFile(d + "/" + n.f)
		if err != nil {
			if n.opt && errors.Is(err, os.ErrNotExist) {
				continue
			}
			return s, err
		}
		v, ok := ParseUint(b)
		if !ok {
			return s, fmt.Errorf("%s/%s: %q is not a number", d, n.f, clip(b))
		}
		*n.dst = v
	}
	dis, err := fs.ReadFile(d + "/disable")
	if err != nil {
		return s, err
	}
	v, ok := ParseUint(dis)
	if !ok {
		return s, fmt.Errorf("%s/disable: %q is not 0 or 1", d, clip(dis))
	}
	s.Disabled = v != 0
	return s, nil
}

// DMALatencyPath is the global PM QoS device.
const DMALatencyPath = "/dev/cpu_dma_latency"

// PollState is the name of x86's polling idle state.
const PollState = "POLL"

// HasPoll reports whether a CPU with these idle states can poll.
func HasPoll(names []string) bool {
	return slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, PollState) })
}

// ZeroLatencyEffect says what a 0 µs latency limit leaves a CPU with these
// idle states (in index order; none: no cpuidle driver).
func ZeroLatencyEffect(names []string) string {
	switch {
	case HasPoll(names):
		return "POLL only (the CPU polls in the idle loop)"
	case len(names) > 0:
		return fmt.Sprintf("shallowest state only (%s): the CPU has no POLL state", names[0])
	}
	return "no effect: no cpuidle driver, the idle loop ignores PM QoS"
}

// IdleDriver returns the cpuidle driver and governor ("none" when cpuidle
// is off; errors wrap os.ErrNotExist when the kernel has no cpuidle).
func IdleDriver(fs hostfs.FS) (driver, governor string, err error) {
	if driver, err = fs.ReadString(cpuDir + "/cpuidle/current_driver"); err != nil {
		return "", "", err
	}
	governor, _ = fs.ReadString(cpuDir + "/cpuidle/current_governor")
	if governor == "" {
		governor, _ = fs.ReadString(cpuDir + "/cpuidle/current_governor_ro")
	}
	return driver, governor, nil
}

// Clocksource reads the current and available clocksources.
func Clocksource(fs hostfs.FS) (current string, available []string, err error) {
	const d = "/sys/devices/system/clocksource/clocksource0"
	if current, err = fs.ReadString(d + "/current_clocksource"); err != nil {
		return "", nil, err
	}
	a, _ := fs.ReadString(d + "/available_clocksource")
	return current, strings.Fields(a), nil
}

// Bracketed returns the [selected] word of a sysfs choice file such as
// transparent_hugepage/enabled ("always [madvise] never"), "" if none.
func Bracketed(s string) string {
	i := strings.IndexByte(s, '[')
	j := strings.IndexByte(s, ']')
	if i < 0 || j < i {
		return ""
	}
	return s[i+1 : j]
}

// THP reads transparent_hugepage/enabled and defrag (selected values).
func THP(fs hostfs.FS) (enabled, defrag string, err error) {
	const d = "/sys/kernel/mm/transparent_hugepage"
	e, err := fs.ReadString(d + "/enabled")
	if err != nil {
		return "", "", err
	}
	df, _ := fs.ReadString(d + "/defrag")
	return Bracketed(e), Bracketed(df), nil
}

// ReadSchedRT reads the RT bandwidth (kernel.sched_rt_runtime_us and
// sched_rt_period_us).
func ReadSchedRT(fs hostfs.FS) (rundir.SchedRT, error) {
	var r rundir.SchedRT
	var err error
	if r.RuntimeUS, err = fs.ReadInt("/proc/sys/kernel/sched_rt_runtime_us"); err != nil {
		return r, err
	}
	r.PeriodUS, err = fs.ReadInt("/proc/sys/kernel/sched_rt_period_us")
	return r, err
}

// CPUVendor returns the first vendor_id of /proc/cpuinfo ("GenuineIntel",
// "AuthenticAMD"); "" on hosts without one (arm64).
func CPUVendor(fs hostfs.FS) (string, error) {
	_, v, err := cpuinfo(fs, "vendor_id")
	return v, err
}
