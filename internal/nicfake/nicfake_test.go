package nicfake_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rig-project/rig/internal/nicfake"
	"github.com/rig-project/rig/internal/tstamp"
)

func cfg(tx tstamp.TxType, rx tstamp.RxFilter) tstamp.HWTstampConfig {
	return tstamp.HWTstampConfig{TxType: tx, RxFilter: rx}
}

var (
	on   = tstamp.TxOn
	off  = tstamp.TxOff
	one  = tstamp.TxOneStepSync
	all  = tstamp.FilterAll
	none = tstamp.FilterNone
	v2   = tstamp.FilterPTPv2Event
	v2l4 = tstamp.FilterPTPv2L4Event
	v2l2 = tstamp.RxFilter(unix.HWTSTAMP_FILTER_PTP_V2_L2_SYNC)
	v1s  = tstamp.RxFilter(unix.HWTSTAMP_FILTER_PTP_V1_L4_SYNC)
	v1e  = tstamp.RxFilter(unix.HWTSTAMP_FILTER_PTP_V1_L4_EVENT)
	ntp  = tstamp.FilterNTPAll
	some = tstamp.FilterSome
)

// TestSetHandlers plays each driver's SIOCSHWTSTAMP handler (after the
// core's validation): what it grants, its errno, what stays in force, and
// whether the interface was reset.
func TestSetHandlers(t *testing.T) {
	type step struct {
		req    tstamp.HWTstampConfig
		grant  tstamp.HWTstampConfig
		err    unix.Errno
		stored tstamp.HWTstampConfig
		bounce bool
	}
	flags := func(c tstamp.HWTstampConfig, f int32) tstamp.HWTstampConfig { c.Flags = f; return c }
	tests := []struct {
		p     *nicfake.Profile
		steps []step
	}{
		{nicfake.ExaNIC(), []step{
			{req: flags(cfg(on, all), 1), err: unix.EINVAL, stored: cfg(off, none)}, // the driver rejects BONDED_PHC_INDEX too
			{req: cfg(one, all), err: unix.ERANGE, stored: cfg(off, none)},
			{req: cfg(on, v2), grant: cfg(on, all), stored: cfg(on, all)},
			{req: cfg(off, none), grant: cfg(off, none), stored: cfg(off, none)},
		}},
		{nicfake.MLX5(), []step{
			{req: cfg(one, all), err: unix.ERANGE, stored: cfg(off, none)},
			{req: cfg(on, v2l4), grant: cfg(on, all), stored: cfg(on, all)},
			{req: cfg(off, ntp), grant: cfg(off, all), stored: cfg(off, all)},
			{req: cfg(on, some), grant: cfg(on, all), stored: cfg(on, all)},
		}},
		{nicfake.ICE(), []step{
			{req: cfg(on, some), err: unix.ERANGE, stored: cfg(off, none)},
			{req: cfg(on, v1s), grant: cfg(on, all), stored: cfg(on, all)},
		}},
		{nicfake.IGB82576(), []step{
			{req: cfg(on, all), err: unix.ERANGE, stored: cfg(off, none)},
			{req: cfg(on, v2l2), grant: cfg(on, v2), stored: cfg(on, v2)},
			{req: cfg(on, all), err: unix.ERANGE, stored: cfg(on, v2)}, // left as it was
			{req: cfg(on, v1s), grant: cfg(on, v1s), stored: cfg(on, v1s)},
			{req: cfg(on, v1e), err: unix.ERANGE, stored: cfg(on, v1s)},
			{req: cfg(on, ntp), err: unix.ERANGE, stored: cfg(on, v1s)},
		}},
		{nicfake.IXGBE82599(), []step{
			{req: cfg(on, all), err: unix.ERANGE, stored: cfg(off, none)},
			{req: cfg(on, v2l4), grant: cfg(on, v2), stored: cfg(on, v2)},
		}},
		{nicfake.IGBI210(), []step{ // every accepted filter becomes ALL
			{req: cfg(on, v2l4), grant: cfg(on, all), stored: cfg(on, all)},
			{req: cfg(on, v1s), grant: cfg(on, all), stored: cfg(on, all)},
			{req: cfg(off, ntp), err: unix.ERANGE, stored: cfg(on, all)},
			{req: cfg(on, some), err: unix.ERANGE, stored: cfg(on, all)},
			{req: cfg(off, none), grant: cfg(off, none), stored: cfg(off, none)},
		}},
		{nicfake.IXGBEX550(), []step{
			{req: cfg(on, v2l2), grant: cfg(on, all), stored: cfg(on, all)},
			{req: cfg(on, ntp), grant: cfg(on, all), stored: cfg(on, all)},
			{req: cfg(on, some), err: unix.ERANGE, stored: cfg(on, all)},
		}},
		{nicfake.I40E(), []step{ // PTP messages only
			{req: cfg(on, all), err: unix.ERANGE, stored: cfg(off, none)},
			{req: cfg(on, ntp), err: unix.ERANGE, stored: cfg(off, none)},
			{req: cfg(on, v1s), grant: cfg(on, v1e), stored: cfg(on, v1e)},
			{req: cfg(on, v2l2), grant: cfg(on, v2), stored: cfg(on, v2)},
			{req: cfg(one, v2), err: unix.ERANGE, stored: cfg(on, v2)},
		}},
		{nicfake.ENA(), []step{
			{req: cfg(one, all), err: unix.ERANGE, stored: cfg(off, none)},
			{req: cfg(off, some), err: unix.ERANGE, stored: cfg(off, none)},
			{req: cfg(off, v2), grant: cfg(off, all), stored: cfg(off, all), bounce: true},
			{req: cfg(off, all), grant: cfg(off, all), stored: cfg(off, all), bounce: true}, // no change, still a reset
			{req: cfg(on, all), err: unix.EOPNOTSUPP, stored: cfg(off, none), bounce: true},
		}},
		{nicfake.ENAAdminFailure(), []step{
			{req: cfg(one, all), err: unix.ERANGE, stored: cfg(off, none)},
			{req: cfg(off, all), err: unix.EOPNOTSUPP, stored: cfg(off, none), bounce: true},
			{req: cfg(off, none), err: unix.EOPNOTSUPP, stored: cfg(off, none), bounce: true},
		}},
		{nicfake.Liquidio(), []step{
			{req: flags(cfg(on, all), 1), err: unix.EINVAL, stored: cfg(off, none)},
			{req: cfg(off, v2), grant: cfg(off, all), stored: cfg(off, all)},
			{req: cfg(on, ntp), err: unix.ERANGE, stored: cfg(off, all)},
		}},
		{nicfake.Veth(), []step{
			{req: cfg(on, all), err: unix.EOPNOTSUPP, stored: cfg(off, none)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.p.Name, func(t *testing.T) {
			n := nicfake.New(tt.p, "eth9")
			// The core's validation comes first, for every driver.
			for _, bad := range []tstamp.HWTstampConfig{flags(cfg(on, all), 2), cfg(4, all), cfg(on, 16), cfg(-1, all)} {
				c := bad
				err := n.SetHWTstamp("eth9", &c)
				want := unix.ERANGE
				if bad.Flags == 2 {
					want = unix.EINVAL
				}
				if !errors.Is(err, want) || c != bad {
					t.Errorf("%v: %v (config %v), want %v and the request untouched", bad, err, c, want)
				}
			}
			for i, s := range tt.steps {
				before := len(n.Sets())
				c := s.req
				err := n.SetHWTstamp("eth9", &c)
				if err != nil && !errors.Is(err, s.err) || err == nil && s.err != 0 {
					t.Fatalf("step %d %v: %v, want %v", i, s.req, err, s.err)
				}
				if s.err == 0 && c != s.grant {
					t.Errorf("step %d %v: granted %v, want %v", i, s.req, c, s.grant)
				}
				if s.err != 0 && c != s.req {
					t.Errorf("step %d %v: a failed call wrote back %v", i, s.req, c)
				}
				if got := n.Config(); got != s.stored {
					t.Errorf("step %d %v: in force %v, want %v", i, s.req, got, s.stored)
				}
				calls := n.Sets()
				if len(calls) != before+1 || calls[len(calls)-1].Req != s.req || calls[len(calls)-1].Bounced != s.bounce {
					t.Errorf("step %d: recorded %+v", i, calls[len(calls)-1])
				}
			}
			if err := n.Wait(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestDecideFromProfiles runs rig's decision on each profile as probed:
// the capability reports alone settle the PTP-only NICs, ENA's missing TX
// stamps and veth.
func TestDecideFromProfiles(t *testing.T) {
	want := map[string][2]tstamp.Action{ // NeedProbe, NeedCapture in auto
		"exanic": {tstamp.ActWrite, tstamp.ActWrite}, "mlx5": {tstamp.ActWrite, tstamp.ActWrite}, "ice": {tstamp.ActWrite, tstamp.ActWrite},
		"mlx5-pre6.16": {tstamp.ActWrite, tstamp.ActWrite}, "igb-i210": {tstamp.ActWrite, tstamp.ActWrite}, "ixgbe-x550": {tstamp.ActWrite, tstamp.ActWrite},
		"igb-82576": {tstamp.ActSoftware, tstamp.ActSoftware}, "ixgbe-82599": {tstamp.ActSoftware, tstamp.ActSoftware}, "i40e": {tstamp.ActSoftware, tstamp.ActSoftware},
		"ena": {tstamp.ActSoftware, tstamp.ActWrite}, "liquidio": {tstamp.ActSoftware, tstamp.ActSoftware},
		"noget": {tstamp.ActUnknown, tstamp.ActUnknown}, "veth": {tstamp.ActSoftware, tstamp.ActSoftware}, "virtio_net": {tstamp.ActSoftware, tstamp.ActSoftware},
	}
	for _, p := range nicfake.Profiles() {
		n := nicfake.New(p, "eth9")
		st, err := tstamp.ReadNIC(n, "eth9")
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		for i, need := range []tstamp.Need{tstamp.NeedProbe, tstamp.NeedCapture} {
			d := tstamp.Decide(st, tstamp.Policy{Mode: tstamp.Auto, Need: need})
			if d.Action != want[p.Name][i] {
				t.Errorf("%s %s: %s, want %s", p.Name, need, d, want[p.Name][i])
			}
			if (p.Name == "igb-82576" || p.Name == "ixgbe-82599" || p.Name == "i40e") && !strings.Contains(d.Why, "PTP/NTP messages only") {
				t.Errorf("%s: the reason must name the PTP-only filters: %s", p.Name, d.Why)
			}
		}
	}
}

// TestStamper: hardware stamps only where the config would put them, in
// PHC time, without allocating.
func TestStamper(t *testing.T) {
	n := nicfake.New(nicfake.MLX5(), "eth9")
	const sw = int64(1_700_000_000_000_000_000)
	if n.StampRX("eth9", sw) != 0 || n.StampTX("eth9", sw) != 0 {
		t.Fatal("stamps with the config off")
	}
	n.SetConfig(cfg(off, all))
	if got := n.StampRX("eth9", sw); got != sw+nicfake.PHCOffset-nicfake.RxLead {
		t.Fatalf("RX stamp %d", got)
	}
	if n.StampTX("eth9", sw) != 0 || n.StampRX("eth8", sw) != 0 {
		t.Fatal("TX stamp with tx_type OFF, or a stamp on another interface")
	}
	n.SetConfig(cfg(on, all))
	if got := n.StampTX("eth9", sw); got != sw+nicfake.PHCOffset+nicfake.TxLag {
		t.Fatalf("TX stamp %d", got)
	}
	if n.StampSWTX("eth9", sw) != sw {
		t.Fatal("mlx5 from 6.16 gives software TX stamps")
	}
	pre := nicfake.New(nicfake.MLX5Pre616(), "eth9")
	if pre.StampSWTX("eth9", sw) != 0 || pre.StampSWTX("eth8", sw) != sw {
		t.Fatal("mlx5 before 6.16 suppresses veth's software TX stamp, on its own interface only")
	}
	l := nicfake.New(nicfake.Liquidio(), "eth9")
	if l.StampTX("eth9", sw) == 0 {
		t.Fatal("liquidio stamps TX whatever tx_type says")
	}
	igb := nicfake.New(nicfake.IGB82576(), "eth9")
	igb.SetConfig(cfg(on, v2))
	if igb.StampRX("eth9", sw) != 0 {
		t.Fatal("a PTP_V2_EVENT filter stamped a UDP probe")
	}
	var k int64
	if a := testing.AllocsPerRun(1000, func() {
		k += 1000_000
		n.StampRX("eth9", sw+k)
		n.StampTX("eth9", sw+k)
		pre.StampSWTX("eth9", sw+k)
		igb.StampTX("eth9", sw+k)
	}); a != 0 {
		t.Fatalf("Stamper allocates %v per packet", a)
	}
}

// TestTxSlots: one TX-stamp slot stamps every packet at 1 ms and skips
// (and counts) in a burst; ice's 64 slots skip only past 64 in flight.
func TestTxSlots(t *testing.T) {
	const base = int64(1_700_000_000_000_000_000)
	igb := nicfake.New(nicfake.IGB82576(), "eth9")
	igb.SetConfig(cfg(on, v2))
	for i := int64(0); i < 1000; i++ {
		if igb.StampTX("eth9", base+i*int64(time.Millisecond)) == 0 {
			t.Fatalf("packet %d at 1 ms not stamped", i)
		}
	}
	burst := base + 2*int64(time.Second)
	stamped := 0
	for i := int64(0); i < 100; i++ { // every 5 µs; the slot is held 20 µs
		if igb.StampTX("eth9", burst+i*5000) != 0 {
			stamped++
		}
	}
	if skipped, _ := igb.Counter("tx_hwtstamp_skipped"); stamped != 25 || skipped != 75 {
		t.Fatalf("burst of 100 at 5 µs: %d stamped, tx_hwtstamp_skipped %d; want 25 and 75", stamped, skipped)
	}
	ice := nicfake.New(nicfake.ICE(), "eth9")
	ice.SetConfig(cfg(on, all))
	stamped = 0
	for i := int64(0); i < 100; i++ { // every 1 µs; each slot held 100 µs
		if ice.StampTX("eth9", base+i*1000) != 0 {
			stamped++
		}
	}
	if skipped, _ := ice.Counter("tx_hwtstamp_skipped"); stamped != 64 || skipped != 36 {
		t.Fatalf("ice burst: %d stamped, %d skipped; want 64 and 36", stamped, skipped)
	}
}

// TestStamperRace: probe threads stamp while the config changes and
// counters are read (go test -race).
func TestStamperRace(t *testing.T) {
	n := nicfake.New(nicfake.IGB82576(), "eth9")
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := int64(0); i < 2000; i++ {
				n.StampTX("eth9", int64(g)*1e12+i*3000)
				n.StampRX("eth9", i)
			}
		}(g)
	}
	for i := 0; i < 100; i++ {
		c := cfg(on, v2)
		_ = n.SetHWTstamp("eth9", &c)
		n.Counter("tx_hwtstamp_skipped")
		n.SetQueues(1 + i%3)
	}
	wg.Wait()
}

// TestENAReset: every accepted SIOCSHWTSTAMP closes and reopens the
// interface inside the ioctl: carrier_changes +2 and the carrier on when
// it returns, operstate never down, interface_down/up counted, the IRQs'
// affinity hint set and the user's affinity kept.
func TestENAReset(t *testing.T) {
	n := nicfake.New(nicfake.ENA(), "ens5")
	h, err := nicfake.NewHost(t.TempDir(), n, "ens5")
	if err != nil {
		t.Fatal(err)
	}
	irq := n.IRQs()[0]
	if err := h.FS.WriteFile("/proc/irq/"+strconv.Itoa(irq)+"/smp_affinity_list", "1\n"); err != nil {
		t.Fatal(err)
	}
	c := cfg(off, all)
	if err := n.SetHWTstamp("ens5", &c); err != nil {
		t.Fatal(err)
	}
	st, _ := h.Operstate()
	cc, _ := h.FS.ReadInt("/sys/class/net/ens5/carrier_changes")
	carrier, _ := h.FS.ReadInt("/sys/class/net/ens5/carrier")
	down, _ := n.Counter("interface_down")
	up, _ := n.Counter("interface_up")
	aff, _ := h.Affinity(irq)
	hint, _ := h.FS.ReadString("/proc/irq/" + strconv.Itoa(irq) + "/affinity_hint")
	if st != "up" || cc != 2 || carrier != 1 || down != 1 || up != 1 || aff != "1" || hint != "0-1" || n.Wait() != nil {
		t.Fatalf("after the reset: operstate %q carrier_changes %d carrier %d interface_down %d interface_up %d affinity %q hint %q",
			st, cc, carrier, down, up, aff, hint)
	}
}

// TestSlowLink: the carrier is off when the ioctl returns and back 2 s
// later; operstate reads up for the first second (linkwatch has not run),
// down for the next, and up again as soon as the carrier is (an urgent
// event), all on the NIC's virtual clock.
func TestSlowLink(t *testing.T) {
	n := nicfake.New(nicfake.SlowLink(nicfake.ENA()), "ens6")
	n.Clock = nicfake.NewClock()
	h, err := nicfake.NewHost(t.TempDir(), n, "ens5")
	if err != nil {
		t.Fatal(err)
	}
	link := func() string {
		st, _ := h.Operstate()
		cc, _ := h.FS.ReadInt("/sys/class/net/ens6/carrier_changes")
		carrier, _ := h.FS.ReadInt("/sys/class/net/ens6/carrier")
		return st + " " + strconv.Itoa(int(carrier)) + " " + strconv.Itoa(int(cc))
	}
	c := cfg(off, all)
	if err := n.SetHWTstamp("ens6", &c); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, want := range []string{"up 0 1", "up 0 1", "down 0 1", "down 0 1", "up 1 2", "up 1 2"} {
		if got := link(); got != want {
			t.Fatalf("at %v: operstate, carrier, carrier_changes %q, want %q", time.Duration(i)*500*time.Millisecond, got, want)
		}
		n.Clock.Sleep(ctx, 500*time.Millisecond)
	}
}

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

// TestProfilesNameTheirSource: every profile names the driver functions
// it plays and the releases it holds for, one profile per name, and
// docs/hardware.md lists each with the same releases.
func TestProfilesNameTheirSource(t *testing.T) {
	doc, err := os.ReadFile("../../docs/hardware.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range nicfake.Profiles() {
		if len(p.Functions) == 0 || p.Versions == "" || seen[p.Name] {
			t.Errorf("%s: functions %q, versions %q (or a second profile of that name)", p.Name, p.Functions, p.Versions)
		}
		seen[p.Name] = true
		if row := "| `" + p.Name + "` | " + p.Versions + " |"; !strings.Contains(string(doc), row) {
			t.Errorf("docs/hardware.md lacks the profile row %q", row)
		}
	}
}
