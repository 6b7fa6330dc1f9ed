package tstamp

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"hardware": Hardware, "Software": Software, " auto ": Auto, "hw": Hardware, "sw": Software, "off": Off, "None": Off} {
		got, err := ParseMode(in)
		if err != nil || got != want {
			t.Errorf("ParseMode(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	_, err := ParseMode("hardwre")
	if err == nil || !strings.Contains(err.Error(), `"hardwre"`) || !strings.Contains(err.Error(), "hardware, software, auto or off") {
		t.Fatalf("ParseMode(bad) error = %v", err)
	}
	var m Mode
	if err := m.UnmarshalText([]byte("software")); err != nil || m != Software {
		t.Fatalf("UnmarshalText = %v, %v", m, err)
	}
	if b, _ := Hardware.MarshalText(); string(b) != "hardware" {
		t.Fatalf("MarshalText = %q", b)
	}
}

func TestFlagsString(t *testing.T) {
	if got := Flags(0x20012).String(); got != "TX_SOFTWARE|SOFTWARE|OPT_RX_FILTER" {
		t.Fatalf("Flags(0x20012) = %q", got)
	}
	if got := Flags(0).String(); got != "none" {
		t.Fatalf("Flags(0) = %q", got)
	}
	if got := Flags(1 << 30).String(); got != "0x40000000" {
		t.Fatalf("unknown bit = %q", got)
	}
	if FlagOptRxFilter != 1<<17 || FlagTxCompletion != 1<<18 || int(FlagTxCompletion) != unix.SOF_TIMESTAMPING_LAST {
		t.Fatal("local SOF constants disagree with x/sys SOF_TIMESTAMPING_LAST")
	}
}

func TestCapsDecisions(t *testing.T) {
	// ENA-like: RX_HARDWARE without RAW_HARDWARE, rx filters NONE|ALL, no TX.
	ena := Caps{Ifname: "ens5", SOF: FlagRxHardware | FlagRxSoftware | FlagSoftware, PHCIndex: 0,
		TxTypes: 1 << TxOff, RxFilters: 1<<FilterNone | 1<<FilterAll}
	if !ena.HardwareRX() || !ena.RxAll() || ena.HardwareTX() || !ena.HasPHC() {
		t.Fatalf("ENA caps decided wrong: rx=%v all=%v tx=%v", ena.HardwareRX(), ena.RxAll(), ena.HardwareTX())
	}
	// i40e-like: PTP filters only.
	i40e := Caps{TxTypes: 1<<TxOff | 1<<TxOn, RxFilters: 1<<FilterNone | 1<<FilterPTPv2Event | 1<<FilterPTPv2L4Event}
	if !i40e.HardwareRX() || i40e.RxAll() || !i40e.HardwareTX() {
		t.Fatal("i40e caps decided wrong")
	}
	sw := Caps{Ifname: "veth0", SOF: 0x1a, PHCIndex: -1}
	if sw.HardwareRX() || sw.HardwareTX() || sw.HasPHC() {
		t.Fatal("software-only caps decided wrong")
	}
	want := "veth0: so_timestamping=TX_SOFTWARE|RX_SOFTWARE|SOFTWARE (0x1a) phc=none tx_types=none rx_filters=none"
	if got := sw.String(); got != want {
		t.Fatalf("String = %q\nwant     %q", got, want)
	}
	if got := ena.String(); !strings.Contains(got, "phc=/dev/ptp0") || !strings.Contains(got, "rx_filters=NONE|ALL") || !strings.Contains(got, "tx_types=OFF") {
		t.Fatalf("ENA String = %q", got)
	}
}

func TestCapabilitiesLoopback(t *testing.T) {
	c, err := HostDevice().TSInfo("lo")
	if err != nil {
		t.Fatal(err)
	}
	if c.HardwareRX() || c.HardwareTX() || c.SOF&FlagSoftware == 0 {
		t.Fatalf("lo caps: %s", c)
	}
	_, err = ReadNIC(HostDevice(), "rig-no-such0")
	if err == nil || !errors.Is(err, errNotExist) {
		t.Fatalf("missing interface error = %v, want os.ErrNotExist", err)
	}
}

func TestEnableDropsRejectedOptionalBits(t *testing.T) {
	c := listen(t, UDPOptions{})
	// No kernel knows bit 30: EINVAL, dropped, recorded.
	g, err := EnableWith(c.FD(), Software, Options{Extra: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if g.Flags&(1<<30) != 0 || g.Requested&(1<<30) == 0 || !strings.Contains(strings.Join(g.Fallbacks, ";"), "0x40000000 rejected (EINVAL)") {
		t.Fatalf("granted %s", g)
	}
	if g.Flags&FlagOptRxFilter == 0 {
		t.Fatalf("OPT_RX_FILTER dropped on a kernel that has it: %s", g)
	}
}

// TestEnableOldKernel plays a kernel without SO_TIMESTAMPING_NEW and
// without OPT_RX_FILTER / OPT_TX_SWHW, on a socket bound to lo whose NIC a
// fake device says stamps everything (so the hardware bits are asked for).
func TestEnableOldKernel(t *testing.T) {
	c := listenLo(t)
	var calls []string
	setsockoptInt = func(fd, level, opt, v int) error {
		calls = append(calls, fmt.Sprintf("%d:%s", opt, Flags(v)))
		if opt == unix.SO_TIMESTAMPING_NEW {
			return unix.ENOPROTOOPT
		}
		if Flags(v)&(FlagOptRxFilter|FlagOptTxSwHw) != 0 {
			return unix.EINVAL
		}
		return unix.SetsockoptInt(fd, level, opt, v)
	}
	defer func() { setsockoptInt = unix.SetsockoptInt }()
	g, err := EnableWith(c.FD(), Auto, Options{Device: stampsAll("lo")})
	if err != nil {
		t.Fatal(err)
	}
	fb := strings.Join(g.Fallbacks, ";")
	if g.New || !strings.Contains(fb, "SO_TIMESTAMPING_NEW unknown") ||
		!strings.Contains(fb, "OPT_RX_FILTER rejected") || !strings.Contains(fb, "OPT_TX_SWHW rejected") {
		t.Fatalf("granted %s (calls %v)", g, calls)
	}
	if g.Flags&(FlagTxHardware|FlagOptID|FlagSoftware) != FlagTxHardware|FlagOptID|FlagSoftware || g.Flags&FlagOptRxFilter != 0 {
		t.Fatalf("read back %s", g.Flags)
	}
	// Required bits rejected: an error naming the flags.
	setsockoptInt = func(fd, level, opt, v int) error { return unix.EINVAL }
	if _, err := EnableWith(c.FD(), Software, Options{}); !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), "OPT_ID") {
		t.Fatalf("all rejected: %v", err)
	}
}
