package rundir

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/rig-project/rig/internal/cpulist"
)

// WriteText prints the snapshot for people, one fact per line.
func (s *Snapshot) WriteText(w io.Writer) error {
	var b strings.Builder
	p := func(k, format string, a ...any) {
		fmt.Fprintf(&b, "%-16s "+format+"\n", append([]any{k + ":"}, a...)...)
	}
	list := func(l []int) string {
		if len(l) == 0 {
			return "none"
		}
		return cpulist.Format(l)
	}
	p("host", "%s", s.Hostname)
	if d := s.DMI; d.SysVendor != "" || d.ProductName != "" {
		p("machine", "%s %s", d.SysVendor, d.ProductName)
	}
	p("kernel", "%s", s.Kernel)
	p("rig", "%s (commit %s)", s.Rig.Version, s.Rig.Commit)
	if s.Cmdline != nil {
		p("cmdline", "%s", s.Cmdline.Raw)
		for _, pr := range s.Cmdline.Problems {
			p("cmdline problem", "%s", pr)
		}
	}
	p("cpu", "%s", s.CPU.Model)
	p("topology", "%d package(s), %d core(s), %d online CPU(s) %s, SMT %v, NUMA nodes %s",
		s.CPU.Packages, s.CPU.Cores, len(s.CPU.Online), list(s.CPU.Online), s.CPU.SMT, list(s.CPU.NUMA))
	for _, t := range s.CPU.Topology {
		if len(t.Siblings()) > 0 {
			p(fmt.Sprintf("cpu%d", t.CPU), "core %d, SMT siblings %s", t.Core, list(t.Siblings()))
		}
	}
	p("isolated", "%s", list(s.CPU.Isolated))
	p("nohz_full", "%s", list(s.CPU.NohzFull))
	rc := list(s.CPU.RcuNocbs.CPUs)
	if s.CPU.RcuNocbs.All {
		rc = "all"
	}
	p("rcu_nocbs", "%s", rc)
	p("cpuidle", "driver %s, governor %s", s.Power.IdleDriver, s.Power.IdleGovernor)
	for _, ci := range s.Power.Idle {
		var st []string
		for _, x := range ci.States {
			d := ""
			if x.Disabled {
				d = " DISABLED"
			}
			st = append(st, fmt.Sprintf("%s(exit %dus%s)", x.Name, x.LatencyUS, d))
		}
		p(fmt.Sprintf("cpu%d idle", ci.CPU), "%s", strings.Join(st, " "))
	}
	if len(s.Power.Freq) == 0 {
		p("cpufreq", "none (frequency not controlled by this kernel)")
	}
	for _, f := range s.Power.Freq {
		line := fmt.Sprintf("%s/%s %d kHz (limits %d-%d", f.Driver, f.Governor, f.CurKHz, f.MinKHz, f.MaxKHz)
		if f.HWMaxKHz > 0 {
			line += fmt.Sprintf(", hardware %d-%d", f.HWMinKHz, f.HWMaxKHz)
		}
		line += ")"
		if f.EPP != "" {
			line += " epp " + f.EPP
		}
		p(fmt.Sprintf("cpu%d freq", f.CPU), "%s", line)
	}
	if t := s.Power.Turbo; t != nil {
		p("turbo", "%s (%s)", onOff(t.Enabled), t.Source)
		if t.IntelPstate() {
			p("intel_pstate", "%s, min_perf_pct %d, max_perf_pct %d", t.PstateMode, t.MinPerfPct, t.MaxPerfPct)
		}
	}
	if s.Power.CStateMSRsNotRead != "" {
		p("cstate msrs", "not read: %s", s.Power.CStateMSRsNotRead)
	}
	for _, m := range s.Power.CStateMSRs {
		p(fmt.Sprintf("cpu%d msr", m.CPU), "%s", m)
	}
	if t := s.Power.Tuned; t != nil {
		state := "profile " + t.Active
		switch {
		case t.Active == "":
			state = "no active profile"
		case !t.Running:
			state += " preset, daemon not running"
		}
		p("tuned", "%s", state)
	}
	p("clocksource", "%s (available: %s)", s.Clocksource, strings.Join(s.Clocksources, " "))
	p("THP", "enabled %s, defrag %s", s.THP.Enabled, s.THP.Defrag)
	for _, q := range s.IRQs {
		p(fmt.Sprintf("irq %d", q.IRQ), "%-30s affinity %s effective %s", q.Name, list(q.Affinity), list(q.Effective))
	}
	if s.IRQBalance.CannotTell != "" {
		p("irqbalance", "cannot tell: %s", s.IRQBalance.CannotTell)
	} else if s.IRQBalance.Running {
		p("irqbalance", "running (pid %v), leaves CPUs %s alone [%s]", s.IRQBalance.PIDs, list(s.IRQBalance.BannedCPUs), s.IRQBalance.BannedFrom)
	} else {
		p("irqbalance", "not running")
	}
	if len(s.PTP) == 0 {
		p("ptp daemons", "none")
	}
	for _, d := range s.PTP {
		p("ptp daemon", "%s pid %d: %s", d.Comm, d.PID, strings.Join(d.Cmdline, " "))
	}
	if r := s.SchedRT; r != nil {
		p("sched rt", "runtime %d us of %d us", r.RuntimeUS, r.PeriodUS)
	}
	p("kubernetes", "%v", s.InKubernetes)
	if c := s.Cgroup; c != nil {
		p("cgroup", "v%d %s: cpuset %s, cpu.max %s, nr_throttled %d (%d us)", c.Version, c.Path, list(c.CPUSet), c.CPUMax, c.Stat.NrThrottled, c.Stat.ThrottledUS)
		if len(c.Missing) > 0 {
			p("cgroup", "not read (absent): %s", strings.Join(c.Missing, " "))
		}
	}
	for _, ifc := range slices.Sorted(maps.Keys(s.NICNode)) {
		n, node := s.NICNode[ifc], fmt.Sprint(s.NICNode[ifc])
		if n < 0 {
			node = "none given by the platform"
		}
		p("nic "+ifc, "NUMA node %s", node)
	}
	for ifc, f := range s.NIC {
		// facts.Info prints itself (driver, ENA facts, queues, IRQs).
		if t, ok := f.(interface{ WriteText(io.Writer) }); ok {
			p("nic "+ifc, "")
			t.WriteText(&b)
			continue
		}
		p("nic "+ifc, "%+v", f)
	}
	for _, a := range s.Absent {
		p("absent", "%s", a)
	}
	for _, e := range s.Errors {
		p("error", "%s", e)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
