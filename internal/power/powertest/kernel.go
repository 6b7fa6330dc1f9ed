package powertest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
)

// Kernel is a kernel version's behaviour on writes to the cpufreq,
// intel_pstate and boost files of a Build tree, one per behaviour that
// changed; Emulate models it.
type Kernel string

const (
	// Linux5 is intel_pstate from the limits rework after 4.10 (a 4.10
	// tree's store_no_turbo only sets the flag) through 6.9, read in a
	// 5.1x tree: store_no_turbo squashes the global min_perf_pct to
	// max_pstate*100/turbo_pstate when no_turbo goes to 1 and never
	// raises it back; intel_pstate_update_policies →
	// intel_pstate_verify_cpu_policy clamps every policy's limits to the
	// base frequency (cpufreq_verify_within_limits), while the limits
	// asked for (the freq QoS requests behind scaling_min/max_freq) stay,
	// so no_turbo 0 lifts the clamp; cpuinfo_max_freq keeps the turbo
	// frequency.
	Linux5 Kernel = "4.12-6.9"
	// Linux610 is intel_pstate from the March 2024 series "Update the
	// maximum CPU frequency consistently" (6.10), read in a 6.16-era tree:
	// as Linux5, but store_no_turbo → intel_pstate_update_limits_for_all →
	// __intel_pstate_update_max_freq also sets cpuinfo.max_freq from
	// no_turbo before refresh_frequency_limits re-derives the limits.
	Linux610 Kernel = "6.10+"
)

// Kernels are all of them.
var Kernels = []Kernel{Linux5, Linux610}

// Emulate returns fs whose writes go through a model of kernel k (the
// layout says which driver): the tree's files are what the kernel's show
// functions would print after each write, so a test of a change and its
// undo sees the side effects a real host has. Modelled:
//   - cpufreq.c store_scaling_min/max_freq: the value is a request;
//     cpufreq_set_policy derives the policy's limits from the requests
//     and the driver's verify clamps them (max to the driver's top, min
//     to max); store_scaling_governor refuses a governor not in
//     scaling_available_governors; store_boost takes 0 or 1 and sets
//     every policy's boost file (policy_set_boost, 6.11+);
//   - intel_pstate.c store_no_turbo, store_min_perf_pct (clamped to
//     min_perf_pct_min()..max_perf_pct), store_max_perf_pct (clamped to
//     min_perf_pct..100); in passive mode the perf limits are the
//     driver's own freq QoS requests (update_qos_requests);
//   - acpi-cpufreq.c set_boost: only the boost MSR, no limit changes;
//   - amd-pstate.c amd_pstate_set_boost → amd_pstate_cpu_boost_update:
//     cpuinfo_max_freq drops to the nominal frequency (acpi_cppc
//     nominal_freq) with boost off and back to the highest with it on,
//     then refresh_frequency_limits (6.11+; earlier kernels do the same
//     through their own freq QoS request).
//
// A write to a read-only attribute fails with EACCES, one to a writable
// attribute this model does not know (intel_pstate/status) with EINVAL;
// other files (cpuidle) are plain writes. Turbo disabled by the BIOS
// (EPERM) is not modelled.
func Emulate(t testing.TB, fs hostfs.FS, k Kernel) hostfs.FS {
	t.Helper()
	m := &model{plain: hostfs.FS{Root: fs.Root}, k: k, policies: map[string]*limits{}}
	dirs, _ := filepath.Glob(fs.Path("/sys/devices/system/cpu/cpufreq/policy*"))
	for _, d := range dirs {
		p := &limits{dir: d}
		for f, v := range map[string]*int64{"scaling_min_freq": &p.reqMin, "scaling_max_freq": &p.reqMax,
			"cpuinfo_min_freq": &p.hwMin, "cpuinfo_max_freq": &p.turbo} {
			*v = m.int(t, filepath.Join(d, f))
		}
		p.base = p.turbo
		switch {
		case m.exists(filepath.Join(d, "base_frequency")):
			p.base = m.int(t, filepath.Join(d, "base_frequency"))
		case m.exists(filepath.Join(d, "amd_pstate_max_freq")):
			cpu := strings.TrimPrefix(filepath.Base(d), "policy")
			p.base = 1000 * m.int(t, fs.Path("/sys/devices/system/cpu/cpu"+cpu+"/acpi_cppc/nominal_freq"))
			m.amd = true
		}
		m.policies[d] = p
	}
	m.pstate = m.exists(fs.Path(ipDir + "/no_turbo"))
	m.passive = m.pstate && m.str(t, fs.Path(ipDir+"/status")) == "passive"
	m.qos()
	if m.turboOff() {
		t.Fatalf("powertest: Emulate a tree with turbo on (cpuinfo_max_freq is the turbo frequency then); switch it off through the emulated fs")
	}
	before := Snapshot(t, fs.Root)
	if err := m.update(); err != nil {
		t.Fatal(err)
	}
	if d := Diff(before, Snapshot(t, fs.Root)); len(d) > 0 {
		t.Fatalf("powertest: the tree is not what kernel %s shows for its own limits:\n%s", k, strings.Join(d, "\n"))
	}
	fs.Kernel = m
	return fs
}

const ipDir = "/sys/devices/system/cpu/intel_pstate"

type limits struct {
	dir string
	// reqMin and reqMax are the limits asked for through
	// scaling_min/max_freq; hwMin, turbo and base the driver's range: up
	// to turbo with turbo on, to base with it off. drvMin and drvMax are
	// passive intel_pstate's own requests, from min/max_perf_pct when
	// they were last written (store_no_turbo leaves them).
	reqMin, reqMax, hwMin, turbo, base int64
	drvMin, drvMax                     int64
}

// qos is update_qos_requests: the passive driver's requests from the
// global perf limits.
func (m *model) qos() {
	for _, p := range m.policies {
		p.drvMin = (p.turbo*m.plainInt(ipDir+"/min_perf_pct") + 99) / 100
		p.drvMax = p.turbo * m.plainInt(ipDir+"/max_perf_pct") / 100
	}
}

type model struct {
	mu              sync.Mutex
	plain           hostfs.FS
	k               Kernel
	policies        map[string]*limits // by the policy directory below the root
	pstate, passive bool
	amd             bool
}

var readOnly = map[string]bool{"affected_cpus": true, "related_cpus": true, "freqdomain_cpus": true, "base_frequency": true,
	"bios_limit": true, "cpuinfo_cur_freq": true, "cpuinfo_max_freq": true, "cpuinfo_min_freq": true, "cpuinfo_transition_latency": true,
	"scaling_available_frequencies": true, "scaling_available_governors": true, "scaling_cur_freq": true, "scaling_driver": true,
	"energy_performance_available_preferences": true, "num_pstates": true, "turbo_pct": true,
	"amd_pstate_highest_perf": true, "amd_pstate_hw_prefcore": true, "amd_pstate_prefcore_ranking": true,
	"amd_pstate_lowest_nonlinear_freq": true, "amd_pstate_max_freq": true}

func (m *model) WriteFile(p, value string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	real, err := filepath.EvalSymlinks(m.plain.Path(p))
	if err != nil {
		return err
	}
	name, dir := filepath.Base(real), filepath.Dir(real)
	fail := func(e error) error { return &os.PathError{Op: "write", Path: p, Err: e} }
	v, numErr := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
	if numErr != nil || v < 0 {
		v = -1
	}
	pol := m.policies[dir]
	switch {
	case readOnly[name]:
		return fail(syscall.EACCES)
	case pol != nil && (name == "scaling_min_freq" || name == "scaling_max_freq"):
		if v < 0 {
			return fail(syscall.EINVAL)
		}
		if name == "scaling_min_freq" {
			pol.reqMin = v
		} else {
			pol.reqMax = v
		}
	case pol != nil && name == "scaling_governor":
		if !strings.Contains(" "+m.plainStr(filepath.Join(dir, "scaling_available_governors"))+" ", " "+strings.TrimSpace(value)+" ") {
			return fail(syscall.EINVAL)
		}
		return m.write(real, strings.TrimSpace(value))
	case real == m.plain.Path("/sys/devices/system/cpu/cpufreq/boost"):
		if v != 0 && v != 1 {
			return fail(syscall.EINVAL)
		}
		for d := range m.policies {
			if m.exists(filepath.Join(d, "boost")) {
				if err := m.write(filepath.Join(d, "boost"), strconv.FormatInt(v, 10)); err != nil {
					return err
				}
			}
		}
		if err := m.write(real, strconv.FormatInt(v, 10)); err != nil {
			return err
		}
	case dir == m.plain.Path(ipDir):
		if err := m.storePstate(name, v); err != nil {
			return fail(err)
		}
	default:
		return m.plain.WriteFile(p, value)
	}
	return m.update()
}

// storePstate is intel_pstate's store_no_turbo, store_min_perf_pct and
// store_max_perf_pct.
func (m *model) storePstate(name string, v int64) error {
	get := func(f string) int64 { n, _ := m.plain.ReadInt(ipDir + "/" + f); return n }
	set := func(f string, n int64) error { return m.write(m.plain.Path(ipDir+"/"+f), strconv.FormatInt(n, 10)) }
	if v < 0 {
		return syscall.EINVAL
	}
	p := m.any()
	switch name {
	case "no_turbo":
		v = min(v, 1)
		if v == get("no_turbo") {
			return nil
		}
		if err := set("no_turbo", v); err != nil {
			return err
		}
		if pct := p.base * 100 / p.turbo; v == 1 && get("min_perf_pct") > pct {
			return set("min_perf_pct", pct) // "Squash the global minimum into the permitted range."
		}
		return nil
	case "min_perf_pct":
		err := set(name, max(p.hwMin*100/p.turbo, min(v, get("max_perf_pct"))))
		m.qos()
		return err
	case "max_perf_pct":
		err := set(name, max(get("min_perf_pct"), min(v, 100)))
		m.qos()
		return err
	}
	return syscall.EINVAL
}

// any is a policy of the tree: intel_pstate's P-state range is CPU 0's.
func (m *model) any() *limits {
	return m.policies[m.plain.Path("/sys/devices/system/cpu/cpufreq/policy0")]
}

// turboOff reports no_turbo 1, or amd-pstate's boost 0.
func (m *model) turboOff() bool {
	switch {
	case m.pstate:
		return m.plainInt(ipDir+"/no_turbo") == 1
	case m.amd:
		return m.plainInt("/sys/devices/system/cpu/cpufreq/boost") == 0
	}
	return false // acpi-cpufreq's boost leaves the limits alone
}

// update writes what every policy's limits are now: cpufreq_set_policy
// with the requests, clamped by the driver's verify.
func (m *model) update() error {
	off := m.turboOff()
	for _, p := range m.policies {
		top, shown := p.turbo, p.turbo
		if off {
			top = p.base
			if m.amd || m.k == Linux610 {
				shown = p.base
			}
		}
		lo, hi := p.reqMin, p.reqMax
		if m.passive {
			lo, hi = max(lo, p.drvMin), min(hi, p.drvMax)
		}
		hi = min(max(hi, p.hwMin), top)
		lo = min(max(lo, p.hwMin), hi)
		for f, v := range map[string]int64{"cpuinfo_max_freq": shown, "scaling_max_freq": hi, "scaling_min_freq": lo} {
			if err := m.write(filepath.Join(p.dir, f), strconv.FormatInt(v, 10)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *model) write(full, v string) error { return os.WriteFile(full, []byte(v+"\n"), 0o644) }

func (m *model) exists(full string) bool { _, err := os.Stat(full); return err == nil }

func (m *model) plainStr(full string) string {
	b, _ := os.ReadFile(full)
	return strings.TrimSpace(string(b))
}

func (m *model) plainInt(p string) int64 { n, _ := m.plain.ReadInt(p); return n }

func (m *model) str(t testing.TB, full string) string {
	t.Helper()
	b, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func (m *model) int(t testing.TB, full string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(m.str(t, full), 10, 64)
	if err != nil {
		t.Fatalf("powertest: %s: %v", full, err)
	}
	return n
}
