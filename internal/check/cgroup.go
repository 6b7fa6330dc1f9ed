package check

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rig-project/rig/internal/hostinfo"
)

// downwardFix is how a container gets the variables.
const downwardFix = "give the container its requests and limits through the downward API, as deploy/kubernetes/responder-pinned.yaml does: env " +
	hostinfo.EnvCPURequest + ", " + hostinfo.EnvCPULimit + " (resourceFieldRef requests.cpu / limits.cpu, divisor 1m), " + hostinfo.EnvMemRequest + ", " + hostinfo.EnvMemLimit + " (requests.memory / limits.memory)"

// staticFix is how a pod gets CPUs of its own.
const staticFix = "kubelet cpuManagerPolicy: static, reservedSystemCPUs set, and a Guaranteed pod (requests = limits) with an integer CPU request"

func (x *runner) cgroup() {
	if x.cgErr != nil {
		if errors.Is(x.cgErr, hostinfo.ErrNoCPUCgroup) && !x.inK8s {
			for _, id := range []string{"cgroup.cpu_max", "cgroup.throttled", "cgroup.cpuset", "cgroup.whole_cores"} {
				x.add(id, Skip, "", "%v", x.cgErr)
			}
			return
		}
		for _, c := range []struct {
			id    string
			could Severity
		}{{"cgroup.cpu_max", Fail}, {"cgroup.throttled", Warn}, {"cgroup.cpuset", Warn}, {"cgroup.whole_cores", Warn}} {
			x.cannot(c.id, c.could, "", "cannot read the cgroup: %v", x.cgErr)
		}
		return
	}
	x.quota()
	x.cpuset()
}

// quota checks the CFS quota (cgroup.cpu_max) and its throttling so far
// (cgroup.throttled).
func (x *runner) quota() {
	cg := x.cg
	kfix := x.quotaFix()
	maxF, missing := cg.MissingFile("cpu.max")
	if cg.Version == 1 {
		maxF, missing = cg.MissingFile("cpu.cfs_quota_us")
	}
	switch {
	case !missing && cg.CPUMax.Unlimited():
		x.add("cgroup.cpu_max", OK, "", "no CFS quota (cpu.max %s, cgroup v%d %s)", cg.CPUMax, cg.Version, cg.Path)
	case !missing:
		x.add("cgroup.cpu_max", Fail, kfix, "CFS quota %s (cgroup v%d %s): the responder is throttled for the rest of a %d µs period once the quota is used",
			cg.CPUMax, cg.Version, cg.Path, cg.CPUMax.PeriodUS)
	case cg.Version == 2 && cg.Root:
		x.add("cgroup.cpu_max", OK, "", "no CFS quota: %s is the root cgroup, which has none", cg.Dir)
	case cg.Version == 2 && cg.Controllers != nil && !slices.Contains(cg.Controllers, "cpu"):
		x.add("cgroup.cpu_max", OK, "", "no CFS quota: the cpu controller is not enabled for cgroup %s (cgroup.controllers: %s)", cg.Path, strings.Join(cg.Controllers, " "))
	default:
		x.cannot("cgroup.cpu_max", Fail, x.cgroupAccess(), "cannot read %s (cgroup v%d %s): a quota would throttle the responder", maxF, cg.Version, cg.Path)
	}
	if statF, missing := cg.MissingFile("cpu.stat"); missing {
		x.cannot("cgroup.throttled", Warn, x.cgroupAccess(), "cannot read %s (cgroup v%d %s)", statF, cg.Version, cg.Path)
	} else if cg.Stat.NrThrottled == 0 {
		x.add("cgroup.throttled", OK, "", "nr_throttled 0 of %d periods", cg.Stat.NrPeriods)
	} else {
		x.add("cgroup.throttled", Warn, kfix, "throttled %d times (%d µs in total) so far; must stay flat during a run", cg.Stat.NrThrottled, cg.Stat.ThrottledUS)
	}
}

// quotaFix lifts a CFS quota. The file and its "no limit" value differ
// between the hierarchies: v2 cpu.max takes "max", v1 cpu.cfs_quota_us
// takes -1. A pod's cgroup is mounted read-only, so there only the kubelet
// or the node can lift it.
func (x *runner) quotaFix() string {
	cg := x.cg
	file, val, node := "cpu.max", "max", "/sys/fs/cgroup"
	if cg.Version == 1 {
		file, val, node = "cpu.cfs_quota_us", "-1", "/sys/fs/cgroup/cpu"
	}
	fix := "Guaranteed pod with integer CPUs on kubelet ≥ 1.33 (DisableCPUQuotaWithExclusiveCPUs, default on); CRI-O/OpenShift: annotation cpu-quota.crio.io: disable"
	switch {
	case !x.inK8s && !cg.ReadOnly:
		return fix + "; elsewhere: echo " + val + " > " + cg.Dir + "/" + file
	case cg.Path != "/":
		return fix + "; a pod's cgroup is read-only: by hand only on the node (from the host agent), echo " + val + " > " + node + cg.Path + "/" + file + ", which the kubelet may set again"
	}
	return fix + "; a pod's cgroup is read-only, and its cgroup namespace hides the node's path to it (below " + node + "/kubepods*): only the kubelet can lift the quota"
}

// cgroupAccess is how to let rig read its cgroup's files.
func (x *runner) cgroupAccess() string {
	return "rig reads its cgroup where /proc/self/mountinfo mounts it (" + x.cg.Dir + "): mount the cgroup filesystem there (a container runtime does, read-only)"
}

// cpuset checks the responder CPU against the cgroup's cpuset
// (cgroup.cpuset) and, for CPUs of its own, that they are whole cores
// (cgroup.whole_cores). In a pod, CPUs of its own need the pod's
// resources (hostinfo.ReadPodResources): a cpuset narrower than the node may be the
// shared pool.
func (x *runner) cpuset() {
	cg, cpu := x.cg, x.r.CPU
	setF, missing := cg.MissingFile("cpuset.cpus.effective")
	if cg.Version == 1 {
		setF, missing = cg.MissingFile("cpuset.effective_cpus")
	}
	if len(cg.CPUSet) == 0 {
		switch {
		case missing || x.inK8s:
			why := "cannot read " + setF
			if !missing {
				why = "no cpuset controller is visible for this cgroup"
			}
			x.cannot("cgroup.cpuset", Warn, x.cgroupAccess(), "cannot tell which CPUs are the container's: %s", why)
			x.cannot("cgroup.whole_cores", Warn, x.cgroupAccess(), "cannot tell which CPUs are the container's: %s", why)
		default:
			x.add("cgroup.cpuset", Skip, "", "no cpuset controller for this cgroup")
			x.add("cgroup.whole_cores", Skip, "", "no cpuset controller for this cgroup")
		}
		return
	}
	set, node := list(cg.CPUSet), list(x.online)
	narrow, inSet := len(cg.CPUSet) < len(x.online), slices.Contains(cg.CPUSet, cpu)
	if !inSet {
		x.add("cgroup.cpuset", Fail, fmt.Sprintf("use a CPU in %s", set), "CPU %d is outside the cgroup's cpuset %s", cpu, set)
	}
	if !x.inK8s {
		switch {
		case !inSet: // a FAIL above
		case narrow:
			x.add("cgroup.cpuset", OK, "", "cpuset %s is narrower than the node (%s): pinned CPUs", set, node)
		default:
			x.add("cgroup.cpuset", Skip, "", "cpuset %s is every CPU (not in a pinned container)", set)
		}
		if !narrow {
			x.add("cgroup.whole_cores", Skip, "", "not in a pinned container")
			return
		}
		x.wholeCores()
		return
	}
	res, err := hostinfo.ReadPodResources(x.o.Getenv)
	if err != nil {
		if inSet {
			x.cannot("cgroup.cpuset", Warn, downwardFix, "cannot tell pinned from the shared pool: cpuset %s of the node's %s, and %v", set, node, err)
		}
		x.cannot("cgroup.whole_cores", Warn, downwardFix, "cannot tell whether the pod owns its cores: %v", err)
		return
	}
	n := res.ExclusiveCPUs()
	pinned := n > 0 && len(cg.CPUSet) == n
	switch {
	case !inSet: // a FAIL above
	case pinned:
		x.add("cgroup.cpuset", OK, "", "pinned (exclusive): cpuset %s is the pod's %s of the node's %s (Guaranteed: %s)", set, plural(n, "CPU"), node, res)
	case n > 0:
		x.add("cgroup.cpuset", Warn, staticFix, "not pinned: a Guaranteed pod with %s, but its cpuset %s has %d of the node's %s: the kubelet gave it no CPUs of its own (cpuManagerPolicy is not static?)", plural(n, "whole CPU"), set, len(cg.CPUSet), node)
	case narrow:
		x.add("cgroup.cpuset", Warn, staticFix, "shared pool (narrower than the node because other pods own CPUs): cpuset %s of %s (%s)", set, node, res)
	default:
		x.add("cgroup.cpuset", Warn, staticFix, "cpuset %s is every CPU: this pod shares the pool with other pods (%s)", set, res)
	}
	if !pinned {
		x.add("cgroup.whole_cores", Skip, "", "the pod has no CPUs of its own: it owns no cores")
		return
	}
	x.wholeCores()
}

// wholeCores checks that no SMT sibling of the cpuset is outside it.
func (x *runner) wholeCores() {
	cg := x.cg
	var split, unread []string
	for _, c := range cg.CPUSet {
		t, err := hostinfo.ReadTopology(x.fs, c)
		if err != nil {
			unread = append(unread, strconv.Itoa(c))
			continue
		}
		for _, s := range t.Siblings() {
			if !slices.Contains(cg.CPUSet, s) {
				split = append(split, fmt.Sprintf("%d (sibling %d)", c, s))
			}
		}
	}
	fix := `kubelet cpuManagerPolicyOptions: {full-pcpus-only: "true"} and a CPU request that is a multiple of the threads per core`
	switch {
	case len(split) > 0:
		x.add("cgroup.whole_cores", Warn, fix, "cpuset %s splits cores: CPU %s not owned, another pod may run on the sibling", list(cg.CPUSet), strings.Join(split, ", "))
	case len(unread) > 0:
		x.cannot("cgroup.whole_cores", Warn, "", "cannot read the topology (SMT siblings) of CPU %s", strings.Join(unread, ", "))
	default:
		x.add("cgroup.whole_cores", OK, "", "cpuset %s holds whole physical cores", list(cg.CPUSet))
	}
}

// plural is "1 CPU", "2 CPUs".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
