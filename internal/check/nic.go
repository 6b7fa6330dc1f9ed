package check

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/tstamp"
)

// ethtoolTS is the default TSInfoer: ETHTOOL_GET_TS_INFO through
// internal/tstamp (rig's one door to timestamping). It needs no capability.
type ethtoolTS struct{}

func (ethtoolTS) TSInfo(iface string) (TSInfo, error) {
	c, err := tstamp.Capabilities(iface)
	if err != nil {
		return TSInfo{}, err
	}
	return TSInfo{SoTimestamping: uint32(c.SOF), TxTypes: c.TxTypes, RxFilters: c.RxFilters, PHCIndex: int32(c.PHCIndex)}, nil
}

const (
	hwtstampTxOn      = 1 << 1 // 1<<HWTSTAMP_TX_ON
	hwtstampFilterAll = 1 << 1 // 1<<HWTSTAMP_FILTER_ALL
)

func capNames(so uint32) string {
	var n []string
	for _, b := range []struct {
		bit  uint32
		name string
	}{{unix.SOF_TIMESTAMPING_TX_HARDWARE, "hardware-transmit"}, {unix.SOF_TIMESTAMPING_TX_SOFTWARE, "software-transmit"},
		{unix.SOF_TIMESTAMPING_RX_HARDWARE, "hardware-receive"}, {unix.SOF_TIMESTAMPING_RX_SOFTWARE, "software-receive"},
		{unix.SOF_TIMESTAMPING_SOFTWARE, "software-system-clock"}, {unix.SOF_TIMESTAMPING_RAW_HARDWARE, "hardware-raw-clock"}} {
		if so&b.bit != 0 {
			n = append(n, b.name)
		}
	}
	if len(n) == 0 {
		return "none"
	}
	return strings.Join(n, " ")
}

func (x *runner) nic() {
	ifc := x.o.Iface
	if ifc == "" {
		for _, id := range []string{"nic.hwts", "nic.phc", "nic.ptp4l"} {
			x.add(id, Skip, "", "no --iface given")
		}
		return
	}
	ti, err := x.o.TS.TSInfo(ifc)
	switch {
	case errors.Is(err, unix.ENODEV):
		x.add("nic.hwts", Fail, "pass an existing interface (ip -br link)", "interface %s does not exist", ifc)
	case errors.Is(err, unix.EOPNOTSUPP):
		x.add("nic.hwts", Warn, "use a NIC/driver that reports timestamping (ethtool -T "+ifc+")", "%s reports no timestamping capability (EOPNOTSUPP)", ifc)
	case err != nil:
		x.add("nic.hwts", Warn, "", "cannot read timestamping capability of %s: %v", ifc, err)
	default:
		rx := ti.SoTimestamping&(unix.SOF_TIMESTAMPING_RX_HARDWARE|unix.SOF_TIMESTAMPING_RAW_HARDWARE) != 0 && ti.RxFilters&hwtstampFilterAll != 0
		tx := ti.SoTimestamping&unix.SOF_TIMESTAMPING_TX_HARDWARE != 0 && ti.TxTypes&hwtstampTxOn != 0
		caps := fmt.Sprintf("%s: %s; tx_types 0x%x rx_filters 0x%x", ifc, capNames(ti.SoTimestamping), ti.TxTypes, ti.RxFilters)
		switch {
		case rx && tx:
			x.add("nic.hwts", OK, "", "HW timestamps on every packet, RX and TX (%s)", caps)
		case rx:
			x.add("nic.hwts", Warn, "TX stamps fall back to software; use a NIC with HW TX stamps for the sender side",
				"HW RX timestamps on all packets but no HW TX (%s)", caps)
		case ti.SoTimestamping&unix.SOF_TIMESTAMPING_RX_HARDWARE != 0:
			x.add("nic.hwts", Warn, "this NIC stamps PTP packets only (filter ALL missing); use PTP-shaped probes or a NIC with all-packet RX stamps",
				"HW RX timestamps without HWTSTAMP_FILTER_ALL (%s)", caps)
		default:
			x.add("nic.hwts", Warn, "software stamps include the stack; for wire latency use a NIC/driver with HW stamps (ethtool -T "+ifc+")",
				"software timestamps only (%s)", caps)
		}
		if ti.PHCIndex >= 0 {
			x.add("nic.phc", OK, "", "PTP hardware clock /dev/ptp%d", ti.PHCIndex)
		} else {
			x.add("nic.phc", Warn, "RTT does not need a PHC; to relate NIC stamps to system time use a NIC with one",
				"%s has no PTP hardware clock", ifc)
		}
		x.ena(ifc, ti)
	}
	ps, err := hostinfo.FindProcesses(x.fs, "ptp4l")
	if err != nil {
		x.add("nic.ptp4l", Warn, "", "cannot scan /proc: %v", err)
		return
	}
	for _, p := range ps {
		for i, a := range p.Cmdline {
			if (a == "-i" || a == "--interface") && i+1 < len(p.Cmdline) && p.Cmdline[i+1] == ifc || a == "-i"+ifc {
				x.add("nic.ptp4l", Warn, "run the probes on another interface, or stop ptp4l for the run",
					"ptp4l (pid %d) runs on %s: it owns the HW timestamp config (SIOCSHWTSTAMP), so rig must not change the RX filter", p.PID, ifc)
				return
			}
		}
	}
	if len(ps) > 0 {
		x.add("nic.ptp4l", OK, "", "ptp4l runs (pid %d) but not with -i %s (interfaces in its config file are not read)", ps[0].PID, ifc)
		return
	}
	x.add("nic.ptp4l", OK, "", "ptp4l is not running")
}

func (x *runner) cgroup() {
	if x.cgErr != nil {
		s := Skip
		if x.inK8s {
			s = Warn
		}
		for _, id := range []string{"cgroup.cpu_max", "cgroup.throttled", "cgroup.cpuset", "cgroup.whole_cores"} {
			x.add(id, s, "", "cannot read the cgroup: %v", x.cgErr)
		}
		return
	}
	cg, cpu := x.cg, x.r.CPU
	kfix := "Guaranteed pod with integer CPUs on kubelet ≥ 1.33 (DisableCPUQuotaWithExclusiveCPUs, default on); CRI-O/OpenShift: annotation cpu-quota.crio.io: disable; elsewhere: echo max > " + cg.Dir + "/cpu.max"
	if cg.CPUMax.Unlimited() {
		x.add("cgroup.cpu_max", OK, "", "no CFS quota (cpu.max %s, cgroup v%d %s)", cg.CPUMax, cg.Version, cg.Path)
	} else {
		x.add("cgroup.cpu_max", Fail, kfix, "CFS quota %s (cgroup v%d %s): the responder is throttled for the rest of a %d µs period once the quota is used",
			cg.CPUMax, cg.Version, cg.Path, cg.CPUMax.PeriodUS)
	}
	if cg.Stat.NrThrottled == 0 {
		x.add("cgroup.throttled", OK, "", "nr_throttled 0 of %d periods", cg.Stat.NrPeriods)
	} else {
		x.add("cgroup.throttled", Warn, kfix, "throttled %d times (%d µs in total) so far; must stay flat during a run", cg.Stat.NrThrottled, cg.Stat.ThrottledUS)
	}
	narrow := len(cg.CPUSet) > 0 && len(cg.CPUSet) < len(x.online)
	switch {
	case len(cg.CPUSet) == 0:
		x.add("cgroup.cpuset", Skip, "", "no cpuset controller for this cgroup")
	case !slices.Contains(cg.CPUSet, cpu):
		x.add("cgroup.cpuset", Fail, fmt.Sprintf("use a CPU in %s", list(cg.CPUSet)), "CPU %d is outside the cgroup's cpuset %s", cpu, list(cg.CPUSet))
	case narrow:
		x.add("cgroup.cpuset", OK, "", "cpuset %s is narrower than the node (%s): pinned CPUs", list(cg.CPUSet), list(x.online))
	case x.inK8s:
		x.add("cgroup.cpuset", Warn, "kubelet cpuManagerPolicy: static, reservedSystemCPUs set, and a Guaranteed pod (requests = limits) with an integer CPU request",
			"cpuset %s is every CPU: this pod shares the pool with other pods", list(cg.CPUSet))
	default:
		x.add("cgroup.cpuset", Skip, "", "cpuset %s is every CPU (not in a pinned container)", list(cg.CPUSet))
	}
	if !narrow && !x.inK8s {
		x.add("cgroup.whole_cores", Skip, "", "not in a pinned container")
		return
	}
	var split []string
	for _, c := range cg.CPUSet {
		t, err := hostinfo.ReadTopology(x.fs, c)
		if err != nil {
			continue
		}
		for _, s := range t.Siblings() {
			if !slices.Contains(cg.CPUSet, s) {
				split = append(split, fmt.Sprintf("%d (sibling %d)", c, s))
			}
		}
	}
	if len(split) == 0 {
		x.add("cgroup.whole_cores", OK, "", "cpuset %s holds whole physical cores", list(cg.CPUSet))
		return
	}
	x.add("cgroup.whole_cores", Warn, `kubelet cpuManagerPolicyOptions: {full-pcpus-only: "true"} and a CPU request that is a multiple of the threads per core`,
		"cpuset %s splits cores: CPU %s not owned, another pod may run on the sibling", list(cg.CPUSet), strings.Join(split, ", "))
}
