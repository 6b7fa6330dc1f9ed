package hostinfo

import (
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"

	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/rundir"
)

// CgroupEntry is one line of /proc/PID/cgroup.
type CgroupEntry struct {
	ID          int      `json:"id"`
	Controllers []string `json:"controllers,omitempty"` // empty for the v2 line "0::/path"
	Path        string   `json:"path"`
}

// ParseProcCgroup parses /proc/PID/cgroup ("ID:controllers:path" lines).
func ParseProcCgroup(b []byte) ([]CgroupEntry, error) {
	var out []CgroupEntry
	for i, line := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("line %d: %q is not ID:controllers:path", i+1, line)
		}
		id, err := strconv.Atoi(parts[0])
		if err != nil || id < 0 {
			return nil, fmt.Errorf("line %d: hierarchy ID %q is not a number", i+1, parts[0])
		}
		e := CgroupEntry{ID: id, Path: parts[2]}
		if parts[1] != "" {
			e.Controllers = strings.Split(parts[1], ",")
		}
		out = append(out, e)
	}
	return out, nil
}

// ParseCPUMax parses cpu.max: "max 100000" or "50000 100000".
func ParseCPUMax(s string) (rundir.CPUMax, error) {
	f := strings.Fields(s)
	if len(f) < 1 || len(f) > 2 {
		return rundir.CPUMax{}, fmt.Errorf("cpu.max %q: want \"<quota|max> [period]\"", s)
	}
	m := rundir.CPUMax{QuotaUS: -1, PeriodUS: 100000}
	if f[0] != "max" {
		q, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || q <= 0 {
			return rundir.CPUMax{}, fmt.Errorf("cpu.max %q: quota %q is not \"max\" or a positive number", s, f[0])
		}
		m.QuotaUS = q
	}
	if len(f) == 2 {
		p, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || p <= 0 {
			return rundir.CPUMax{}, fmt.Errorf("cpu.max %q: period %q is not a positive number", s, f[1])
		}
		m.PeriodUS = p
	}
	return m, nil
}

// ParseCPUStat parses cgroup v1 or v2 cpu.stat ("key value" lines).
// Unknown keys are ignored; a known key with a bad value is an error.
func ParseCPUStat(b []byte) (rundir.CPUStat, error) {
	var s rundir.CPUStat
	for i, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return s, fmt.Errorf("cpu.stat line %d: %q is not \"key value\"", i+1, line)
		}
		var dst *uint64
		div := uint64(1)
		switch f[0] {
		case "nr_periods":
			dst = &s.NrPeriods
		case "nr_throttled":
			dst = &s.NrThrottled
		case "throttled_usec":
			dst = &s.ThrottledUS
		case "throttled_time":
			dst, div = &s.ThrottledUS, 1000
		default:
			continue
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return s, fmt.Errorf("cpu.stat line %d: %s value %q is not a number", i+1, f[0], f[1])
		}
		*dst = v / div
	}
	return s, nil
}

// ErrNoCPUCgroup says a process's cgroups have neither a cpu nor a cpuset
// controller: no quota or cpuset applies to it.
var ErrNoCPUCgroup = fmt.Errorf("no v2 hierarchy with cpu files and no v1 cpu/cpuset controller: %w", os.ErrNotExist)

// ReadCgroup reads the cgroup of pid ("self" or a number). Each
// hierarchy's directory comes from /proc/PID/mountinfo: in a container
// the runtime mounts the container's own cgroup directory at
// /sys/fs/cgroup (v2) or /sys/fs/cgroup/<controllers> (v1), so the path
// /proc/PID/cgroup names is below the mount's root, not below the mount
// point. Without mountinfo (a fake host root) the hierarchies are taken
// at their usual places. It prefers the v2 hierarchy and falls back to v1.
func ReadCgroup(fs hostfs.FS, pid string) (*rundir.Cgroup, error) {
	b, err := fs.ReadFile("/proc/" + pid + "/cgroup")
	if err != nil {
		return nil, err
	}
	ents, err := ParseProcCgroup(b)
	if err != nil {
		return nil, fmt.Errorf("/proc/%s/cgroup: %w", pid, err)
	}
	mounts, err := cgroupMounts(fs, pid)
	if err != nil {
		return nil, err
	}
	var v1cpu, v1set, v2 *CgroupEntry
	for i := range ents {
		e := &ents[i]
		if e.ID == 0 && len(e.Controllers) == 0 {
			v2 = e
		}
		for _, c := range e.Controllers {
			switch c {
			case "cpu":
				v1cpu = e
			case "cpuset":
				v1set = e
			}
		}
	}
	// A v2 hierarchy counts only if it has the cpu files (hybrid hosts
	// have an empty unified tree).
	if v2 != nil {
		if m, d, err := mounts.dir(fs, "", v2.Path); err == nil {
			ctl, err := fs.ReadString(m.point + "/cgroup.controllers")
			if err == nil && hasWord(ctl, "cpu", "cpuset") && fs.Exists(d) {
				return readCgroupV2(fs, v2.Path, d, m.ro)
			}
		}
	}
	if v1cpu == nil && v1set == nil {
		return nil, fmt.Errorf("/proc/%s/cgroup: %w", pid, ErrNoCPUCgroup)
	}
	return readCgroupV1(fs, mounts, v1cpu, v1set)
}

// cgroupMount is a cgroup filesystem as /proc/PID/mountinfo shows it.
type cgroupMount struct {
	root, point string // the hierarchy's directory mounted, and where
	ctrls       []string
	v2, ro      bool
}

// cgroupMountList is a process's cgroup mounts, in mount order; nil
// (no mountinfo) means the usual places.
type cgroupMountList []cgroupMount

// cgroupMounts reads the cgroup mounts of pid's mount namespace; none
// when the root has no mountinfo (a fake tree).
func cgroupMounts(fs hostfs.FS, pid string) (cgroupMountList, error) {
	pfs, err := procfs.NewFS(fs.Path("/proc"))
	if err != nil {
		return nil, err
	}
	var ms []*procfs.MountInfo
	if pid == "self" {
		ms, err = pfs.GetMounts()
	} else if n, aerr := strconv.Atoi(pid); aerr == nil {
		ms, err = pfs.GetProcMounts(n)
	} else {
		return nil, fmt.Errorf("cgroup of %q: not a PID", pid)
	}
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("/proc/%s/mountinfo: %w", pid, err)
	}
	out := cgroupMountList{}
	for _, m := range ms {
		if m.FSType != "cgroup" && m.FSType != "cgroup2" {
			continue
		}
		cm := cgroupMount{root: m.Root, point: m.MountPoint, v2: m.FSType == "cgroup2"}
		_, cm.ro = m.Options["ro"]
		for k := range m.SuperOptions {
			cm.ctrls = append(cm.ctrls, k)
		}
		out = append(out, cm)
	}
	if len(out) == 0 && pid == "self" {
		return ancestorCgroupMounts(fs), nil
	}
	return out, nil
}

// ancestorCgroupMounts are the cgroup mounts of the nearest ancestor
// that has any, through its /proc/PID/root: ip netns exec gives its
// command a /sys of its own without the hierarchies, which the process
// that ran it (rig run, an ssh session) still sees. The walk stays in
// this PID namespace (a container's ancestors see what it sees). None
// found: an empty list, the hierarchies are not visible.
func ancestorCgroupMounts(fs hostfs.FS) cgroupMountList {
	out := cgroupMountList{}
	for p, n := "self", 0; n < 64; n++ {
		b, err := fs.ReadFile("/proc/" + p + "/status")
		if err != nil {
			return out
		}
		pp, ok := StatusField(b, "PPid")
		if !ok || pp == "0" {
			return out
		}
		p = pp
		ms, err := cgroupMounts(fs, p)
		if err != nil || len(ms) == 0 || !fs.Exists("/proc/"+p+"/root/") {
			continue
		}
		for _, m := range ms {
			m.point = "/proc/" + p + "/root" + m.point
			out = append(out, m)
		}
		return out
	}
	return out
}

// dir returns the mount of the hierarchy of ctrl (a v1 controller; "" for
// v2) through which cgroup p is visible, and p's directory there. The
// last such mount wins: a later mount hides an earlier one at the same
// place. Without mountinfo it is the usual place (v1: the controller's
// own directory, else the comounted cpu,cpuacct one).
func (l cgroupMountList) dir(fs hostfs.FS, ctrl, p string) (cgroupMount, string, error) {
	if l == nil {
		cands := []string{"/sys/fs/cgroup/" + ctrl}
		switch ctrl {
		case "":
			cands = []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}
		case "cpu":
			cands = append(cands, "/sys/fs/cgroup/cpu,cpuacct")
		}
		for _, c := range cands {
			if fs.Exists(path.Join(c, p)) && (ctrl != "" || fs.Exists(c+"/cgroup.controllers")) {
				return cgroupMount{root: "/", point: c}, path.Join(c, p), nil
			}
		}
		return cgroupMount{root: "/", point: cands[0]}, path.Join(cands[0], p), nil
	}
	what := "the cgroup v2 hierarchy"
	if ctrl != "" {
		what = "the cgroup v1 " + ctrl + " hierarchy"
	}
	var seen []string
	for i := len(l) - 1; i >= 0; i-- {
		m := l[i]
		if m.v2 != (ctrl == "") || (ctrl != "" && !slices.Contains(m.ctrls, ctrl)) {
			continue
		}
		if rel, ok := below(p, m.root); ok {
			return m, path.Join(m.point, rel), nil
		}
		seen = append(seen, m.root+" at "+m.point)
	}
	if len(seen) == 0 {
		return cgroupMount{}, "", fmt.Errorf("%s is not mounted here: %w", what, os.ErrNotExist)
	}
	return cgroupMount{}, "", fmt.Errorf("cgroup %s is outside every mount of %s here (%s): %w", p, what, strings.Join(seen, ", "), os.ErrNotExist)
}

// below returns p relative to root when p is root or inside it.
func below(p, root string) (string, bool) {
	switch {
	case root == "/":
		return p, true
	case p == root:
		return "/", true
	case strings.HasPrefix(p, root+"/"):
		return p[len(root):], true
	}
	return "", false
}

func readCgroupV2(fs hostfs.FS, p, d string, ro bool) (*rundir.Cgroup, error) {
	c := &rundir.Cgroup{Version: 2, Path: p, Dir: d, ReadOnly: ro, CPUMax: rundir.CPUMax{QuotaUS: -1, PeriodUS: 100000}}
	// Only non-root cgroups have cgroup.type (and cpu.max).
	c.Root = !fs.Exists(d + "/cgroup.type")
	if ctl, err := fs.ReadString(d + "/cgroup.controllers"); err == nil {
		c.Controllers = strings.Fields(ctl)
	}
	if err := readCgroupFiles(c, fs, d+"/cpuset.cpus.effective", d+"/cpu.max", "", d+"/cpu.stat"); err != nil {
		return nil, err
	}
	return c, nil
}

func readCgroupV1(fs hostfs.FS, mounts cgroupMountList, cpu, set *CgroupEntry) (*rundir.Cgroup, error) {
	c := &rundir.Cgroup{Version: 1, CPUMax: rundir.CPUMax{QuotaUS: -1, PeriodUS: 100000}}
	var setF, quotaF, periodF, statF string
	if set != nil {
		c.Path = set.Path
		m, d, err := mounts.dir(fs, "cpuset", set.Path)
		if err != nil {
			return nil, err
		}
		setF, c.Dir, c.ReadOnly = d+"/cpuset.effective_cpus", d, m.ro
	}
	if cpu != nil {
		c.Path = cpu.Path
		m, d, err := mounts.dir(fs, "cpu", cpu.Path)
		if err != nil {
			return nil, err
		}
		quotaF, periodF, statF = d+"/cpu.cfs_quota_us", d+"/cpu.cfs_period_us", d+"/cpu.stat"
		c.Dir, c.ReadOnly = d, m.ro
	}
	if err := readCgroupFiles(c, fs, setF, quotaF, periodF, statF); err != nil {
		return nil, err
	}
	return c, nil
}

// readCgroupFiles reads what exists; absent files are listed in Missing, other
// errors are returned. periodF == "" means maxF is a v2 cpu.max.
func readCgroupFiles(c *rundir.Cgroup, fs hostfs.FS, setF, maxF, periodF, statF string) error {
	read := func(p string) (string, bool, error) {
		if p == "" {
			return "", false, nil
		}
		s, err := fs.ReadString(p)
		if errors.Is(err, os.ErrNotExist) {
			c.Missing = append(c.Missing, p)
			return "", false, nil
		}
		return s, err == nil, err
	}
	if s, ok, err := read(setF); err != nil {
		return err
	} else if ok {
		l, err := cpulist.Parse(s)
		if err != nil {
			return fmt.Errorf("%s: %w", setF, err)
		}
		c.CPUSet = l
	}
	if s, ok, err := read(maxF); err != nil {
		return err
	} else if ok {
		if periodF == "" {
			m, err := ParseCPUMax(s)
			if err != nil {
				return fmt.Errorf("%s: %w", maxF, err)
			}
			c.CPUMax = m
		} else {
			q, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return fmt.Errorf("%s: %q is not a number", maxF, s)
			}
			if q > 0 {
				c.CPUMax.QuotaUS = q
			}
			if p, ok, err := read(periodF); err != nil {
				return err
			} else if ok {
				if c.CPUMax.PeriodUS, err = strconv.ParseInt(p, 10, 64); err != nil {
					return fmt.Errorf("%s: %q is not a number", periodF, p)
				}
			}
		}
	}
	if s, ok, err := read(statF); err != nil {
		return err
	} else if ok {
		st, err := ParseCPUStat([]byte(s))
		if err != nil {
			return fmt.Errorf("%s: %w", statF, err)
		}
		c.Stat = st
	}
	return nil
}

func hasWord(s string, words ...string) bool {
	for _, f := range strings.Fields(s) {
		for _, w := range words {
			if f == w {
				return true
			}
		}
	}
	return false
}

// The container's own requests and limits, which the manifests in
// deploy/kubernetes give it through the downward API (CPU in millicores:
// divisor 1m; memory in bytes). Without them a pod cannot tell its
// exclusive CPUs from the shared pool: both are narrower than the node
// once any pod owns CPUs.
const (
	EnvCPURequest = "RIG_CPU_REQUEST"
	EnvCPULimit   = "RIG_CPU_LIMIT"
	EnvMemRequest = "RIG_MEM_REQUEST"
	EnvMemLimit   = "RIG_MEM_LIMIT"
)

// PodResources are what the downward API variables say: CPU in
// millicores, memory in bytes.
type PodResources struct{ CPUReq, CPULim, MemReq, MemLim int64 }

// ReadPodResources reads the four variables; an error names the ones
// missing or not a whole number.
func ReadPodResources(getenv func(string) string) (PodResources, error) {
	var r PodResources
	var bad []string
	for _, v := range []struct {
		name string
		dst  *int64
	}{{EnvCPURequest, &r.CPUReq}, {EnvCPULimit, &r.CPULim}, {EnvMemRequest, &r.MemReq}, {EnvMemLimit, &r.MemLim}} {
		s := getenv(v.name)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			bad = append(bad, fmt.Sprintf("%s=%q", v.name, s))
		}
		*v.dst = n
	}
	if len(bad) > 0 {
		return r, fmt.Errorf("the pod's requests and limits are not in the environment (%s)", strings.Join(bad, ", "))
	}
	return r, nil
}

// ExclusiveCPUs is how many CPUs the static CPU manager gives the
// container for itself: its CPU limit when it is a whole number and
// requests equal limits for CPU and memory (Guaranteed), else 0.
func (r PodResources) ExclusiveCPUs() int {
	if r.CPUReq != r.CPULim || r.MemReq != r.MemLim || r.CPULim == 0 || r.CPULim%1000 != 0 {
		return 0
	}
	return int(r.CPULim / 1000)
}

func (r PodResources) String() string {
	return fmt.Sprintf("CPU request %dm limit %dm, memory request %d limit %d", r.CPUReq, r.CPULim, r.MemReq, r.MemLim)
}
