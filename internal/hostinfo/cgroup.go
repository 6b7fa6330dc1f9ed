package hostinfo

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/hostfs"
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

// CPUMax is cgroup v2 cpu.max (or v1 cfs_quota_us/cfs_period_us).
// QuotaUS < 0 means "max": no CFS bandwidth limit.
type CPUMax struct {
	QuotaUS  int64 `json:"quota_us"`
	PeriodUS int64 `json:"period_us"`
}

// Unlimited reports whether there is no quota.
func (m CPUMax) Unlimited() bool { return m.QuotaUS < 0 }

func (m CPUMax) String() string {
	if m.Unlimited() {
		return fmt.Sprintf("max %d", m.PeriodUS)
	}
	return fmt.Sprintf("%d %d", m.QuotaUS, m.PeriodUS)
}

// ParseCPUMax parses cpu.max: "max 100000" or "50000 100000".
func ParseCPUMax(s string) (CPUMax, error) {
	f := strings.Fields(s)
	if len(f) < 1 || len(f) > 2 {
		return CPUMax{}, fmt.Errorf("cpu.max %q: want \"<quota|max> [period]\"", s)
	}
	m := CPUMax{QuotaUS: -1, PeriodUS: 100000}
	if f[0] != "max" {
		q, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || q <= 0 {
			return CPUMax{}, fmt.Errorf("cpu.max %q: quota %q is not \"max\" or a positive number", s, f[0])
		}
		m.QuotaUS = q
	}
	if len(f) == 2 {
		p, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || p <= 0 {
			return CPUMax{}, fmt.Errorf("cpu.max %q: period %q is not a positive number", s, f[1])
		}
		m.PeriodUS = p
	}
	return m, nil
}

// CPUStat holds the throttling counters of cpu.stat.
type CPUStat struct {
	NrPeriods   uint64 `json:"nr_periods"`
	NrThrottled uint64 `json:"nr_throttled"`
	ThrottledUS uint64 `json:"throttled_us"` // v1 throttled_time (ns) is converted
}

// ParseCPUStat parses cgroup v1 or v2 cpu.stat ("key value" lines).
// Unknown keys are ignored; a known key with a bad value is an error.
func ParseCPUStat(b []byte) (CPUStat, error) {
	var s CPUStat
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

// Cgroup is the CPU side of a process's cgroup: what a pod can see of its
// own CPU allocation.
type Cgroup struct {
	Version int    `json:"version"` // 1 or 2
	Path    string `json:"path"`    // path inside the hierarchy
	Dir     string `json:"dir"`     // host directory the files were read from
	// CPUSet is cpuset.cpus.effective (v2) or cpuset.effective_cpus (v1).
	CPUSet []int   `json:"cpuset"`
	CPUMax CPUMax  `json:"cpu_max"`
	Stat   CPUStat `json:"cpu_stat"`
	// Missing names files that were absent (e.g. cpu.max in the root
	// cgroup, which has no limit).
	Missing []string `json:"missing,omitempty"`
}

// ReadCgroup reads the cgroup of pid ("self" or a number) below
// /sys/fs/cgroup. It prefers the v2 hierarchy and falls back to v1.
func ReadCgroup(fs hostfs.FS, pid string) (*Cgroup, error) {
	b, err := fs.ReadFile("/proc/" + pid + "/cgroup")
	if err != nil {
		return nil, err
	}
	ents, err := ParseProcCgroup(b)
	if err != nil {
		return nil, fmt.Errorf("/proc/%s/cgroup: %w", pid, err)
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
		for _, root := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
			d := path.Join(root, v2.Path)
			ctl, err := fs.ReadString(root + "/cgroup.controllers")
			if err == nil && hasWord(ctl, "cpu", "cpuset") && fs.Exists(d) {
				return readCgroupV2(fs, v2.Path, d)
			}
		}
	}
	if v1cpu == nil && v1set == nil {
		return nil, fmt.Errorf("/proc/%s/cgroup: no v2 hierarchy with cpu files and no v1 cpu/cpuset controller: %w", pid, os.ErrNotExist)
	}
	return readCgroupV1(fs, v1cpu, v1set)
}

func readCgroupV2(fs hostfs.FS, p, d string) (*Cgroup, error) {
	c := &Cgroup{Version: 2, Path: p, Dir: d, CPUMax: CPUMax{QuotaUS: -1, PeriodUS: 100000}}
	if err := c.readFiles(fs, d+"/cpuset.cpus.effective", d+"/cpu.max", "", d+"/cpu.stat"); err != nil {
		return nil, err
	}
	return c, nil
}

func readCgroupV1(fs hostfs.FS, cpu, set *CgroupEntry) (*Cgroup, error) {
	c := &Cgroup{Version: 1, CPUMax: CPUMax{QuotaUS: -1, PeriodUS: 100000}}
	var setF, quotaF, periodF, statF string
	if set != nil {
		c.Path = set.Path
		setF = path.Join("/sys/fs/cgroup/cpuset", set.Path, "cpuset.effective_cpus")
		c.Dir = path.Dir(setF)
	}
	if cpu != nil {
		c.Path = cpu.Path
		d := path.Join("/sys/fs/cgroup/cpu", cpu.Path)
		if !fs.Exists(d) {
			d = path.Join("/sys/fs/cgroup/cpu,cpuacct", cpu.Path)
		}
		quotaF, periodF, statF = d+"/cpu.cfs_quota_us", d+"/cpu.cfs_period_us", d+"/cpu.stat"
		c.Dir = d
	}
	if err := c.readFiles(fs, setF, quotaF, periodF, statF); err != nil {
		return nil, err
	}
	return c, nil
}

// readFiles reads what exists; absent files are listed in Missing, other
// errors are returned. periodF == "" means maxF is a v2 cpu.max.
func (c *Cgroup) readFiles(fs hostfs.FS, setF, maxF, periodF, statF string) error {
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
