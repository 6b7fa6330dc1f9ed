package check

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/tstamp"
)

// ena adds the Amazon ENA checks: which driver, what its packet stamps
// are (RX only), the PHC, LLQ and ENA Express. The facts come from
// facts.ReadENA; the fixes are the exact commands.
func (x *runner) ena(ifc string, c tstamp.Caps) {
	env := x.nicEnv()
	d, err := facts.FindDevice(env.FS, ifc)
	if err != nil || d.Driver != "ena" {
		return
	}
	e := facts.ReadENA(context.Background(), env, d)
	build := "for packet timestamps, build amzn-drivers ≥ 2.15.0 (github.com/amzn/amzn-drivers, kernel/linux/ena) and install it with DKMS, then reboot (reloading ena on a single-ENI host cuts the connection)"
	switch {
	case !e.OutOfTree:
		x.add("nic.ena.driver", Warn, build+"; the PHC needs no rebuild on a kernel whose ena has it (nic.ena.phc)",
			"in-tree ENA driver (version %s): no hardware packet timestamps (they come only from the out-of-tree driver ≥ 2.15.0); rtt and turnaround use software stamps", orNone(e.Version))
	case !e.AtLeast(2, 15, 0):
		x.add("nic.ena.driver", Warn, build, "out-of-tree ENA driver %s: older than 2.15.0, no hardware packet timestamps", orNone(e.Version))
	default:
		x.add("nic.ena.driver", OK, "", "out-of-tree ENA driver %s (amzn-drivers; srcversion %s)", e.Version, orNone(e.SrcVersion))
	}

	const rxOnly = "RX only: no ENA device offers TX hardware stamps today, so rtt and turnaround stay software; enabling or disabling stamping resets the interface (link bounce; IRQ affinity, coalescing and rings back to the driver's), and it is off by default"
	switch t := e.HWTimestamping; {
	case t == nil:
		x.add("nic.ena.hwts", Skip, "", "no hw_packet_timestamping_state: the driver has no packet timestamping (in-tree, or out-of-tree < 2.15.0)")
	case !t.RXSupported:
		x.add("nic.ena.hwts", Warn, "packet timestamps depend on the instance family: use one whose ENA offers them (ethtool -T "+ifc+" then lists hardware-receive)",
			"the device offers no packet timestamps on this instance (HW RX support 0, HW TX support %d)", b2i(t.TXSupported))
	case t.TXSupported:
		x.add("nic.ena.hwts", OK, "", "hardware RX and TX packet timestamps offered (RX configuration %d, TX configuration %d); enabling or disabling them resets the interface",
			b2i(t.RXEnabled), b2i(t.TXEnabled))
	default:
		state := "off now; rig turns it on for the run when a metric uses it"
		if t.RXEnabled {
			state = "on now"
		}
		x.add("nic.ena.hwts", OK, "", "hardware RX packet timestamps offered (%s); %s", state, rxOnly)
	}

	devlink := "devlink dev param set pci/" + d.BDF + " name enable_phc value true cmode driverinit && devlink dev reload pci/" + d.BDF
	phcFix := "load the driver with phc_enable=1 (built with ENA_PHC_INCLUDE=1): echo 'options ena phc_enable=1' > /etc/modprobe.d/ena.conf and reboot; or, ENA ≥ 2.16 on kernel ≥ 6.17: " + devlink
	if !e.OutOfTree {
		phcFix = "kernel ≥ 6.17 (its ena has the PHC): " + devlink + "; an older kernel: amzn-drivers built with ENA_PHC_INCLUDE=1, loaded with phc_enable=1"
	}
	phcFix += ". AWS documents the PHC for some instance families (M7a, M7g, M7i, R7a, R7g, R7i and a few more, in some Regions), not for C7i or C8g: `ethtool -T " + ifc + "` shows a PTP Hardware Clock where the device has one"
	phcFacts := "read-only, gettimex64 only (no PTP_SYS_OFFSET_PRECISE cross-timestamp), at most 125 reads/s (beyond that reads fail and phc_err_ts counts them)"
	switch {
	case c.PHCIndex >= 0 || e.PHCErrorBoundNS != nil:
		bound := ""
		if e.PHCErrorBoundNS != nil {
			bound = fmt.Sprintf(", error bound %d ns", *e.PHCErrorBoundNS)
		}
		x.add("nic.ena.phc", OK, "", "ENA PHC /dev/ptp%d enabled%s: %s", c.PHCIndex, bound, phcFacts)
	case e.PHCEnable != nil && *e.PHCEnable:
		x.add("nic.ena.phc", Warn, "rebuild the driver with ENA_PHC_INCLUDE=1 make, and check CONFIG_PTP_1588_CLOCK and dmesg | grep -i phc",
			"phc_enable=1 but no PHC registered (driver built without ENA_PHC_INCLUDE=1, or the device has none)")
	default:
		x.add("nic.ena.phc", Warn, phcFix, "ENA PHC off (phc_enable %s): RTT needs none; it relates NIC stamps to system time, %s", boolStr(e.PHCEnable), phcFacts)
	}

	switch {
	case e.LLQ == "on":
		x.add("nic.ena.llq", OK, "", "LLQ on: descriptors and the first %s B of each packet are pushed into device memory%s", optU32(e.LLQHeaderBytes), largeLLQ(e.LargeLLQ))
	case e.LLQ == "off":
		x.add("nic.ena.llq", Warn, "LLQ is negotiated with the device at load: see dmesg | grep -i llq for why it fell back (it needs the write-combined device BAR); a current ENA driver on a Nitro instance uses it",
			"LLQ off: the device fetches descriptors and headers from host memory (a longer TX path)")
	default:
		x.add("nic.ena.llq", Skip, "", "LLQ mode not reported (ethtool rings without TX push: kernel < 6.4)%s", largeLLQ(e.LargeLLQ))
	}

	switch {
	case e.SRDMode == nil && e.Errors["ethtool -S"] != "":
		x.cannot("nic.ena.express", Warn, "", "cannot tell whether ENA Express is on: its ethtool -S counter ena_srd_mode cannot be read: %s", e.Errors["ethtool -S"])
	case e.SRDMode == nil:
		x.add("nic.ena.express", OK, "", "no ENA Express on this instance or driver (no ena_srd_mode counter)")
	case e.ExpressOn() || e.UDPOverSRD():
		what := "ENA Express (SRD) on"
		if e.UDPOverSRD() {
			what += ", UDP over SRD (the probes take the SRD path)"
		}
		x.add("nic.ena.express", Warn, "aws ec2 modify-network-interface-attribute --network-interface-id ENI --ena-srd-specification 'EnaSrdEnabled=false,EnaSrdUdpSpecification={EnaSrdUdpEnabled=false}' (or keep it on purpose and name the run so)",
			"%s (ena_srd_mode %d): it changes the latency path; record it with the run", what, *e.SRDMode)
	default:
		x.add("nic.ena.express", OK, "", "ENA Express off (ena_srd_mode 0)")
	}
	if len(e.Errors) > 0 {
		var parts []string
		for k, v := range e.Errors {
			parts = append(parts, k+": "+v)
		}
		slices.Sort(parts)
		x.cannot("nic.ena.read", Warn, "", "cannot read some ENA facts: %s", strings.Join(parts, "; "))
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func boolStr(b *bool) string {
	if b == nil {
		return "n/a"
	}
	return fmt.Sprint(b2i(*b))
}

func optU32(p *uint32) string {
	if p == nil {
		return "?"
	}
	return fmt.Sprint(*p)
}

func largeLLQ(b *bool) string {
	if b == nil {
		return ""
	}
	if *b {
		return " (large LLQ: 224-byte headers, TX ring halved)"
	}
	return " (standard LLQ: 96-byte headers)"
}
