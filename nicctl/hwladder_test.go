package nicctl

import (
	"context"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rig-project/rig/internal/tstamp"
)

// rangeIoctl refuses FILTER_ALL with ERANGE, like i40e, and grants PTP.
type rangeIoctl struct{ fakeIoctl }

func (f *rangeIoctl) SetHWTstamp(iface string, c HWTstamp) error {
	if c.RxFilter == unix.HWTSTAMP_FILTER_ALL {
		return ioctlErr("SIOCSHWTSTAMP", iface, unix.ERANGE)
	}
	f.sets = append(f.sets, c)
	*f.hw = c
	return nil
}

func TestEnableHWTimestampsLadderAndUndo(t *testing.T) {
	fs := buildTree(t, "interrupts.mixed", mixedNICs)
	env := newEnv(fs, &fakeEthtool{})
	io := &rangeIoctl{fakeIoctl{hw: &HWTstamp{}}}
	env.Ioctl = io
	env.Caps = func(string) (tstamp.Caps, error) {
		return tstamp.Caps{PHCIndex: 0, TxTypes: 1<<tstamp.TxOff | 1<<tstamp.TxOn,
			RxFilters: 1<<tstamp.FilterNone | 1<<tstamp.FilterAll | 1<<tstamp.FilterPTPv2L4Event}, nil
	}
	j, _ := openJournal(t, env)
	chg, err := EnableHWTimestamps(context.Background(), env, j, "ens5")
	if err != nil {
		t.Fatal(err)
	}
	if chg.Effective != `{"tx_type":1,"rx_filter":6}` || !strings.Contains(chg.Note, "ERANGE") {
		t.Fatalf("ladder: %+v", chg)
	}
	if _, err := j.Undo(context.Background()); err != nil {
		t.Fatal(err)
	}
	if *io.hw != (HWTstamp{}) {
		t.Fatalf("not restored: %+v", *io.hw)
	}
	// A NIC without hardware timestamping: reported, nothing changed.
	env.Caps = func(string) (tstamp.Caps, error) { return tstamp.Caps{PHCIndex: -1}, nil }
	chg, err = EnableHWTimestamps(context.Background(), env, j, "ens5")
	if err != nil || chg.Effective != "software only" || len(io.sets) != 2 { // the ladder step and the undo
		t.Fatalf("software-only NIC: %+v %v (sets %v)", chg, err, io.sets)
	}
}
