package check

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/tstamp"
)

func (x *runner) nic() {
	ifc := x.o.Iface
	if ifc == "" {
		for _, id := range []string{"nic.hwts", "nic.txsw", "nic.phc", "nic.ptp4l", "nic.numa"} {
			x.add(id, Skip, "", "no --iface given")
		}
		return
	}
	x.numa(ifc)
	env := x.nicEnv()
	st, err := tstamp.ReadNIC(env.TS, ifc)
	switch {
	case errors.Is(err, os.ErrNotExist):
		x.add("nic.hwts", Fail, "pass an existing interface (ip -br link)", "interface %s does not exist", ifc)
	case errors.Is(err, errors.ErrUnsupported):
		x.add("nic.hwts", Warn, "use a NIC/driver that reports timestamping (ethtool -T "+ifc+")", "%s reports no timestamping capability (EOPNOTSUPP)", ifc)
	case err != nil:
		x.cannot("nic.hwts", Warn, "", "cannot read timestamping capability of %s: %v", ifc, err)
	default:
		c := st.Caps
		rx, tx := c.RxAll(), c.HardwareTX()
		cfg := "unknown (" + st.ConfigErr + ")"
		if st.ConfigKnown {
			cfg = st.Config.String()
		}
		caps := fmt.Sprintf("%s: %s; tx_types %s; rx_filters %s; config %s", ifc, c.SOF.EthtoolNames(), c.TxTypesString(), c.RxFiltersString(), cfg)
		// What rig run would do with it (timestamps: auto).
		d := tstamp.Decide(st, tstamp.Policy{Mode: tstamp.Auto, Need: tstamp.NeedProbe})
		switch {
		case rx && tx:
			x.add("nic.hwts", OK, "", "HW timestamps on every packet, RX and TX (%s); rig run: %s", caps, d)
		case rx:
			x.add("nic.hwts", Warn, "TX stamps stay software; rtt and turnaround need a NIC with HW TX stamps (a capture here still gets HW RX stamps)",
				"HW RX timestamps on all packets but no HW TX (%s)", caps)
		case c.HardwareRX():
			x.add("nic.hwts", Warn, "this NIC stamps PTP (or NTP) packets only (HWTSTAMP_FILTER_ALL missing): rig's UDP probes get software stamps; use a NIC with all-packet RX stamps",
				"HW RX timestamps without HWTSTAMP_FILTER_ALL (%s)", caps)
		default:
			x.add("nic.hwts", Warn, "software stamps include the stack; for wire latency use a NIC/driver with HW stamps (ethtool -T "+ifc+")",
				"software timestamps only (%s)", caps)
		}
		if c.SOF&tstamp.FlagTxSoftware != 0 {
			x.add("nic.txsw", OK, "", "software TX stamps at the driver's hand-off to the NIC (software-transmit)")
		} else {
			x.add("nic.txsw", Warn, "for software TX stamps at the hand-off use a kernel whose driver gives them (mlx5: Linux 6.16 or later); hardware stamps are not affected",
				"%s's driver gives no software TX stamps (no software-transmit in its capabilities; mlx5 before Linux 6.16): rig files the qdisc's stamp (sched-transmit) as the software TX stamp, labelled sched, which leaves the qdisc and the driver's transmit out of sw rtt and turnaround", ifc)
		}
		if c.HasPHC() {
			x.add("nic.phc", OK, "", "PTP hardware clock /dev/ptp%d", c.PHCIndex)
		} else {
			x.add("nic.phc", Warn, "RTT does not need a PHC; to relate NIC stamps to system time use a NIC with one",
				"%s has no PTP hardware clock", ifc)
		}
		x.ena(ifc, c)
		x.bypass(env, ifc)
	}
	host, why, err := hostinfo.HostPIDs(x.fs)
	var owners []string
	if err == nil && host {
		owners, err = hostinfo.TimestampOwners(x.fs, ifc)
	}
	switch {
	case err != nil:
		x.cannot("nic.ptp4l", Warn, "", "cannot scan /proc for ptp4l/chronyd: %v", err)
	case !host:
		x.cannot("nic.ptp4l", Warn, "run rig where it sees the host's processes: in Kubernetes give the pod hostPID: true, or run the check and the probes from the host agent",
			"cannot tell whether ptp4l or chronyd owns %s's timestamping config: this process does not see the host's PID namespace (%s), so a node's ptp4l is invisible; rig treats the owner as unknown and neither changes the config nor takes hardware TX stamps", ifc, why)
	case len(owners) > 0:
		x.add("nic.ptp4l", Warn, "measure on another interface, stop it for the run, or allow the take-over (take-over-ptp: true / --take-over-ptp)",
			"%s owns %s's hardware timestamp config (SIOCSHWTSTAMP): rig will not change it, and uses it only where it already stamps every packet", strings.Join(owners, "; "), ifc)
	default:
		x.add("nic.ptp4l", OK, "", "no ptp4l or chronyd owns %s's timestamping config", ifc)
	}
}

// nicEnv is the NIC access of the checks (Options.NIC; Run makes the
// host's when none is given).
func (x *runner) nicEnv() *facts.NIC {
	if x.o.NIC.TS == nil {
		x.o.NIC.TS = tstamp.HostDevice()
	}
	return x.o.NIC
}

// bypass says whether the kernel uses the port at all: an ExaNIC port in
// bypass-only mode sends and receives nothing through it (the line is
// there only for a driver with that private flag).
func (x *runner) bypass(env *facts.NIC, ifc string) {
	f, err := env.PrivFlags(ifc)
	on, has := f[facts.PrivBypassOnly]
	switch {
	case err != nil:
		x.cannot("nic.bypass", Fail, "", "cannot read %s's private flags (ethtool --show-priv-flags): %v", ifc, err)
	case on:
		x.add("nic.bypass", Fail, "ethtool --set-priv-flags "+ifc+" "+facts.PrivBypassOnly+" off (firmware that is not a NIC sets it at probe: load NIC firmware)",
			"%s is in ExaNIC bypass-only mode: the kernel sends and receives nothing on it, so rig's probes would wait for packets that never come", ifc)
	case has:
		x.add("nic.bypass", OK, "", "%s is not in bypass-only mode: the kernel sends and receives on it", ifc)
	}
}

// numa: a responder on another NUMA node than its NIC reaches the
// packets' memory and the NIC's registers across the interconnect.
func (x *runner) numa(ifc string) {
	nic, err := hostinfo.NICNode(x.fs, ifc)
	if errors.Is(err, os.ErrNotExist) {
		x.add("nic.numa", Skip, "", "interface %s does not exist", ifc)
		return
	}
	if err != nil {
		x.cannot("nic.numa", Warn, "", "cannot read the NUMA node of %s: %v", ifc, err)
		return
	}
	nodes := map[int][]int{}
	for _, c := range x.online {
		if n := hostinfo.CPUNode(x.fs, c); n >= 0 {
			nodes[n] = append(nodes[n], c)
		}
	}
	cpu := hostinfo.CPUNode(x.fs, x.r.CPU)
	switch {
	case nic < 0 && len(nodes) <= 1:
		x.add("nic.numa", OK, "", "no NUMA information for %s (device/numa_node -1 or absent), on a host with one node", ifc)
	case nic < 0:
		x.cannot("nic.numa", Warn, "ask the platform's documentation which node the NIC's PCIe slot is on, and pick the responder CPU there",
			"cannot tell which of the %d NUMA nodes %s is on: the platform gives none (device/numa_node -1 or absent)", len(nodes), ifc)
	case cpu < 0:
		x.cannot("nic.numa", Warn, "", "cannot tell the NUMA node of CPU %d (no node link under /sys/devices/system/cpu/cpu%d); %s is on node %d", x.r.CPU, x.r.CPU, ifc, nic)
	case cpu == nic:
		x.add("nic.numa", OK, "", "CPU %d and %s are on NUMA node %d", x.r.CPU, ifc, nic)
	default:
		x.add("nic.numa", Warn, fmt.Sprintf("pin the responder on node %d (CPUs %s): --cpu N, or responder: {cpu: {quietest: allowed, numa: nic}}", nic, list(nodes[nic])),
			"CPU %d is on NUMA node %d, %s on node %d: every packet and the NIC's registers are reached across the interconnect", x.r.CPU, cpu, ifc, nic)
	}
}
