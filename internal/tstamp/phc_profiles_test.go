package tstamp_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rig-project/rig/internal/nicfake"
	"github.com/rig-project/rig/internal/tstamp"
)

// TestPHCMethods: tstamp's offset fall-through against the drivers' clock
// ioctls: ENA and mlx5 EXTENDED (no cross-timestamp), ExaNIC basic only.
func TestPHCMethods(t *testing.T) {
	for _, tt := range []struct {
		p      *nicfake.Profile
		method string
		why    string
	}{
		{nicfake.ENA(), tstamp.MethodExtended, "no cross-timestamping"},
		{nicfake.MLX5(), tstamp.MethodExtended, "no cross-timestamping"},
		{nicfake.ExaNIC(), tstamp.MethodBasic, tstamp.MethodExtended + ": EOPNOTSUPP"},
	} {
		n := nicfake.New(tt.p, "eth9")
		o, err := tstamp.NewPHCWith(n.PHC()).Offset()
		if err != nil {
			t.Fatalf("%s: %v", tt.p.Name, err)
		}
		if o.Method != tt.method || !strings.Contains(o.Fallback, tt.why) {
			t.Errorf("%s: %+v, want %s after %q", tt.p.Name, o, tt.method, tt.why)
		}
		if d := o.Offset - nicfake.PHCOffset; d < -int64(time.Millisecond) || d > int64(time.Millisecond) {
			t.Errorf("%s: offset %d, want about %d", tt.p.Name, o.Offset, nicfake.PHCOffset)
		}
	}
}

// TestENAPHCLimit: ENA answers 125 device reads a second; the next fails
// with EBUSY and blocks the clock (reads skipped, phc_skp), and the failure
// is counted in phc_err_ts when the block ends.
func TestENAPHCLimit(t *testing.T) {
	n := nicfake.New(nicfake.ENA(), "ens5")
	var clock atomic.Int64
	clock.Store(1_700_000_000_000_000_000)
	n.PHC().SetClock(func() int64 { return clock.Add(1000) }) // 1 µs a read
	phc := tstamp.NewPHCWith(n.PHC())                         // 5 samples a call: 5 device reads
	okCalls := 0
	var err error
	for i := 0; i < 30 && err == nil; i++ {
		if _, err = phc.Offset(); err == nil {
			okCalls++
		}
	}
	if okCalls != 25 || !errors.Is(err, unix.EBUSY) {
		t.Fatalf("%d offsets before %v; want 25, then EBUSY", okCalls, err)
	}
	if _, err := phc.Offset(); !errors.Is(err, unix.EBUSY) {
		t.Fatalf("during the block: %v", err)
	}
	cnt, _ := n.Counter("phc_cnt")
	skp, _ := n.Counter("phc_skp")
	if cnt != 125 || skp != 1 {
		t.Fatalf("phc_cnt %d phc_skp %d, want 125 and 1", cnt, skp)
	}
	clock.Add(2 * int64(time.Millisecond)) // past the 1000 µs block, still within the second
	_, err = phc.Offset()
	if e, _ := n.Counter("phc_err_ts"); e != 1 || !errors.Is(err, unix.EBUSY) {
		t.Fatalf("after the block: phc_err_ts %d, %v; want 1 and EBUSY (still over the limit)", e, err)
	}
	clock.Add(int64(time.Second)) // a second later the device answers again
	if _, err := phc.Offset(); err != nil {
		t.Fatalf("a second later: %v", err)
	}
}
