package tstamp

import (
	"reflect"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPlanSettleIsEnable: a program that sets a Plan's flags itself (the
// native engine) and reports what the kernel did gets, from Settle, the
// grant EnableWith makes of the same kernel: here one without
// SO_TIMESTAMPING_NEW, OPT_RX_FILTER and OPT_TX_SWHW, on a NIC a fake
// device says stamps everything.
func TestPlanSettleIsEnable(t *testing.T) {
	c := listenLo(t)
	setsockoptInt = func(fd, level, opt, v int) error {
		if opt == unix.SO_TIMESTAMPING_NEW {
			return unix.ENOPROTOOPT
		}
		if Flags(v)&(FlagOptRxFilter|FlagOptTxSwHw) != 0 {
			return unix.EINVAL
		}
		return unix.SetsockoptInt(fd, level, opt, v)
	}
	defer func() { setsockoptInt = unix.SetsockoptInt }()
	o := Options{Device: stampsAll("lo"), Extra: FlagTxSched}
	g, err := EnableWith(c.FD(), Auto, o)
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanFor(unix.AF_INET, "lo", Auto, o)
	if err != nil {
		t.Fatal(err)
	}
	if p.Want != g.Requested || p.Optional != optionalFlags|FlagTxSched {
		t.Fatalf("plan wants %s (optional %s), EnableWith asked %s", p.Want, p.Optional, g.Requested)
	}
	got := p.Settle(SetResult{Old: true, Dropped: FlagOptRxFilter | FlagOptTxSwHw, Flags: g.Flags})
	if !reflect.DeepEqual(got, g) {
		t.Fatalf("Settle:\n%#v\nEnableWith:\n%#v", got, g)
	}
	if p2, err := PlanFor(unix.AF_INET, "lo", Off, Options{}); err != nil || p2.Want != 0 {
		t.Fatalf("mode off plans %s, %v", p2.Want, err)
	}
	if _, err := PlanFor(unix.AF_INET, "lo", Software, Options{Extra: FlagTxHardware}); err == nil {
		t.Fatal("a hardware bit as extra accepted")
	}
}
