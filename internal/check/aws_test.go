package check

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/ethtoolnl"
	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/tstamp"
)

// The cstates fix text follows the host's architecture and cpuidle driver:
// intel_idle.max_cstate on x86 with intel_idle, cpuidle.off=1 on arm64.
func TestCStatesPerArch(t *testing.T) {
	psci := copyTree(t, "c8g")
	write(t, psci, "/sys/devices/system/cpu/cpuidle/current_driver", "psci_idle\n")
	for c := 0; c < 8; c++ {
		for k, st := range [][2]string{{"WFI", "1"}, {"cpu-sleep-0", "150"}} {
			d := fmt.Sprintf("/sys/devices/system/cpu/cpu%d/cpuidle/state%d/", c, k)
			for f, v := range map[string]string{"name": st[0], "latency": st[1], "residency": st[1], "disable": "0", "usage": "9", "time": "9"} {
				write(t, psci, d+f, v+"\n")
			}
		}
	}
	for _, c := range []struct {
		name     string
		tree     string
		sev      Severity
		observed []string
		fix      []string
	}{
		{"c7i", "c7i", Warn, []string{"(intel_idle): C6 (exit 290 µs"}, []string{"echo 1 > /sys/devices/system/cpu/cpu3/cpuidle/state3/disable", "intel_idle.max_cstate=1"}},
		{"c8g", "c8g", OK, []string{"no cpuidle states (cpuidle driver none)", "WFI", "Graviton"}, nil},
		{"arm64 psci", "", Warn, []string{"(psci_idle): cpu-sleep-0 (exit 150 µs"}, []string{"state1/disable", "cpuidle.off=1", "WFI only"}},
	} {
		h := psci
		if c.tree != "" {
			h = fx(c.tree)
		}
		r := run(t, h, Options{CPU: 3})
		res := r.Get("cstates")
		if res == nil || res.Severity != c.sev {
			t.Errorf("%s: %+v", c.name, res)
			continue
		}
		for _, w := range c.observed {
			if !strings.Contains(res.Observed, w) {
				t.Errorf("%s: observed lacks %q: %s", c.name, w, res.Observed)
			}
		}
		for _, w := range c.fix {
			if !strings.Contains(res.Fix, w) {
				t.Errorf("%s: fix lacks %q: %s", c.name, w, res.Fix)
			}
		}
		if strings.Contains(res.Fix, "intel_idle") != (c.tree == "c7i") {
			t.Errorf("%s: fix %q", c.name, res.Fix)
		}
	}
}

// smt.sibling on a host without SMT says so (c8g) and watches the sibling
// where there is one (c7i: CPU 3 and 7 share a core).
func TestSMTPerHost(t *testing.T) {
	if r := run(t, fx("c8g"), Options{CPU: 3}); len(r.Siblings) != 0 || r.Get("smt.sibling").Observed != "CPU 3 has no SMT sibling" {
		t.Errorf("c8g: %v %+v", r.Siblings, r.Get("smt.sibling"))
	}
	if r := run(t, fx("c7i"), Options{CPU: 3}); len(r.Siblings) != 1 || r.Siblings[0] != 7 {
		t.Errorf("c7i siblings %v", r.Siblings)
	}
}

type fakeDrv struct {
	facts.DeviceIoctl // only DrvInfo is called
	version           string
}

func (f fakeDrv) DrvInfo(string) (facts.DrvInfo, error) {
	return facts.DrvInfo{Driver: "ena", Version: f.version, BusInfo: "0000:00:05.0"}, nil
}

type fakeRings struct {
	ethtoolnl.Client // only Rings is called
	r                ethtoolnl.Rings
}

func (f fakeRings) Rings(context.Context, string) (ethtoolnl.Rings, error) { return f.r, nil }
func (f fakeRings) Close() error                                           { return nil }

func enaEnv(h hostfs.FS, version string, r ethtoolnl.Rings, stats map[string]uint64) *facts.NIC {
	return &facts.NIC{FS: h, Ioctl: fakeDrv{version: version}, DialEthtool: func() (ethtoolnl.Client, error) { return fakeRings{r: r}, nil }, Stats: func(string) (map[string]uint64, error) { return stats, nil }}
}

// The ENA lines of rig check on a c7i (amzn-drivers 2.15.0g: RX-only
// stamps offered, PHC off, large LLQ) and a c8g (in-tree driver, ENA
// Express with UDP on).
func TestENAChecks(t *testing.T) {
	yes, hdr := true, uint32(224)
	swOnly := fakeTS{ti: tstamp.Caps{SOF: tstamp.FlagTxSoftware | tstamp.FlagRxSoftware | tstamp.FlagSoftware, PHCIndex: -1}}
	type want struct {
		sev      Severity
		observed []string
		fix      []string
	}
	for _, c := range []struct {
		tree  string
		env   *facts.NIC
		wants map[string]want
	}{
		{"c7i", enaEnv(fx("c7i"), "2.15.0g", ethtoolnl.Rings{TxPush: &yes, TxPushBufLen: &hdr}, map[string]uint64{"ena_srd_mode": 0, "ena_srd_tx_pkts": 0}), map[string]want{
			"nic.hwts":       {Warn, []string{"software timestamps only"}, []string{"ethtool -T ens5"}},
			"nic.ena.driver": {OK, []string{"out-of-tree ENA driver 2.15.0g", "5C1A7E0F3B9D2E4A6C8B0D1"}, nil},
			"nic.ena.hwts":   {OK, []string{"hardware RX packet timestamps offered (off now", "RX only", "no ENA device offers TX hardware stamps today", "rtt and turnaround stay software", "resets the interface"}, nil},
			"nic.ena.phc": {Warn, []string{"phc_enable 0", "gettimex64 only", "no PTP_SYS_OFFSET_PRECISE", "125 reads/s"}, []string{"options ena phc_enable=1", "ENA_PHC_INCLUDE=1",
				"devlink dev param set pci/0000:00:05.0 name enable_phc value true cmode driverinit", "kernel ≥ 6.17", "ENA ≥ 2.16", "not for C7i or C8g: `ethtool -T ens5`"}},
			"nic.ena.llq":     {OK, []string{"LLQ on", "first 224 B", "large LLQ"}, nil},
			"nic.ena.express": {OK, []string{"ENA Express off (ena_srd_mode 0)"}, nil},
		}},
		{"c8g", enaEnv(fx("c8g"), "6.12.46-66.121.amzn2023.aarch64", ethtoolnl.Rings{}, map[string]uint64{"ena_srd_mode": 3, "ena_srd_rx_pkts": 10}), map[string]want{
			"nic.ena.driver":  {Warn, []string{"in-tree ENA driver (version 6.12.46", "no hardware packet timestamps", "software stamps"}, []string{"amzn-drivers ≥ 2.15.0", "DKMS", "the PHC needs no rebuild"}},
			"nic.ena.hwts":    {Skip, []string{"no hw_packet_timestamping_state"}, nil},
			"nic.ena.phc":     {Warn, []string{"ENA PHC off (phc_enable n/a)"}, []string{"kernel ≥ 6.17 (its ena has the PHC): devlink dev param set pci/0000:00:05.0 name enable_phc", "devlink dev reload pci/0000:00:05.0"}},
			"nic.ena.llq":     {Skip, []string{"LLQ mode not reported"}, nil},
			"nic.ena.express": {Warn, []string{"ENA Express (SRD) on, UDP over SRD", "ena_srd_mode 3"}, []string{"--ena-srd-specification 'EnaSrdEnabled=false,EnaSrdUdpSpecification={EnaSrdUdpEnabled=false}'"}},
		}},
	} {
		c.env.TS = swOnly
		r := run(t, c.env.FS, Options{CPU: 3, Iface: "ens5", NIC: c.env})
		if strings.Contains(r.Get("nic.hwts").Fix, "amzn-drivers ≥ 2.15)") {
			t.Errorf("%s: the old ENA advice is back: %s", c.tree, r.Get("nic.hwts").Fix)
		}
		if d := r.Get("nic.ena.driver"); d != nil && d.Severity == Warn && strings.Contains(d.Fix, "ENA_PHC_INCLUDE") {
			t.Errorf("%s: the in-tree driver is told to build amzn-drivers for the PHC: %s", c.tree, d.Fix)
		}
		if g := r.Get("nic.ena.read"); g != nil {
			t.Errorf("%s: %+v", c.tree, g)
		}
		for id, w := range c.wants {
			res := r.Get(id)
			if res == nil || res.Severity != w.sev {
				t.Errorf("%s %s: %+v, want %v", c.tree, id, res, w.sev)
				continue
			}
			for _, s := range w.observed {
				if !strings.Contains(res.Observed, s) {
					t.Errorf("%s %s: observed lacks %q: %s", c.tree, id, s, res.Observed)
				}
			}
			for _, s := range w.fix {
				if !strings.Contains(res.Fix, s) {
					t.Errorf("%s %s: fix lacks %q: %s", c.tree, id, s, res.Fix)
				}
			}
		}
	}
	// A device that reports TX support too (none does today): no "RX only".
	tx := copyTree(t, "c7i")
	write(t, tx, "/sys/bus/pci/devices/0000:00:05.0/hw_packet_timestamping_state", "HW TX support: 1\nHW RX support: 1\nTX configuration: 0\nRX configuration: 0\n")
	env := enaEnv(tx, "2.17.0g", ethtoolnl.Rings{}, map[string]uint64{})
	env.TS = swOnly
	if h := run(t, tx, Options{CPU: 3, Iface: "ens5", NIC: env}).Get("nic.ena.hwts"); h == nil ||
		!strings.HasPrefix(h.Observed, "hardware RX and TX packet timestamps offered") || strings.Contains(h.Observed, "RX only") {
		t.Errorf("TX-capable device: %+v", h)
	}
	// Not an ENA: no ENA lines.
	r := run(t, fx("c7i"), Options{CPU: 3, Iface: "lo", NIC: &facts.NIC{FS: fx("c7i"), TS: swOnly}})
	for _, res := range r.Results {
		if strings.HasPrefix(res.ID, "nic.ena") {
			t.Errorf("ENA line for lo: %+v", res)
		}
	}
}
