package tstamp

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fakeDev is a minimal Device for this package's tests (the driver
// profiles live in internal/nicfake, which imports this package).
type fakeDev struct {
	caps   Caps
	cur    HWTstampConfig
	getErr error
	setErr error
	sets   []HWTstampConfig
}

func (f *fakeDev) TSInfo(name string) (Caps, error) {
	c := f.caps
	c.Ifname = name
	return c, nil
}
func (f *fakeDev) GetHWTstamp(string) (HWTstampConfig, error) { return f.cur, f.getErr }
func (f *fakeDev) SetHWTstamp(_ string, cfg *HWTstampConfig) error {
	f.sets = append(f.sets, *cfg)
	if f.setErr != nil {
		return f.setErr
	}
	f.cur = *cfg
	return nil
}

// stampsAll is a NIC that can stamp everything and is configured to.
func stampsAll(string) *fakeDev {
	return &fakeDev{caps: capsAll, cur: HWTstampConfig{TxType: TxOn, RxFilter: FilterAll}}
}

var (
	capsAll = Caps{SOF: FlagTxHardware | FlagRxHardware | FlagRawHardware | FlagSoftware | FlagTxSoftware | FlagRxSoftware,
		PHCIndex: 3, TxTypes: 1<<TxOff | 1<<TxOn, RxFilters: 1<<FilterNone | 1<<FilterAll | 1<<FilterPTPv2Event}
	capsPTPOnly = Caps{SOF: FlagTxHardware | FlagRxHardware | FlagRawHardware, PHCIndex: 1,
		TxTypes: 1<<TxOff | 1<<TxOn, RxFilters: 1<<FilterNone | 1<<FilterPTPv2L4Event | 1<<FilterPTPv2Event}
	capsRxOnly = Caps{SOF: FlagRxHardware | FlagSoftware, PHCIndex: 0,
		TxTypes: 1 << TxOff, RxFilters: 1<<FilterNone | 1<<FilterAll}
	capsSW = Caps{SOF: 0x1a, PHCIndex: -1}
)

func listenLo(t *testing.T) *Conn {
	t.Helper()
	c, err := ListenUDP(loopback, UDPOptions{Device: "lo"})
	if errors.Is(err, os.ErrPermission) {
		t.Skip("SO_BINDTODEVICE not permitted:", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestDecide(t *testing.T) {
	off := HWTstampConfig{TxType: TxOff, RxFilter: FilterNone}
	on := HWTstampConfig{TxType: TxOn, RxFilter: FilterAll}
	ptp := HWTstampConfig{TxType: TxOn, RxFilter: FilterPTPv2Event}
	oneStep := HWTstampConfig{TxType: TxOneStepSync, RxFilter: FilterAll}
	st := func(c Caps, cfg HWTstampConfig) NICState {
		return NICState{Ifname: "eth9", Caps: c, Config: cfg, ConfigKnown: true}
	}
	unknown := NICState{Ifname: "eth9", Caps: capsAll, ConfigErr: "SIOCGHWTSTAMP: EOPNOTSUPP"}
	owned := st(capsAll, ptp)
	owned.Owner = "ptp4l (pid 812, -i eth9)"
	ownedOn := st(capsAll, on) // ptp4l on igb I210 or ixgbe X550: its PTP filter became ALL
	ownedOn.Owner = owned.Owner
	ownedUnknown := unknown
	ownedUnknown.Owner = owned.Owner
	noPIDs := st(capsAll, on)
	noPIDs.Owner = OwnerUnknown + " (no host PID namespace)"
	bond := st(capsAll, HWTstampConfig{Flags: FlagBondedPHC, TxType: TxOn, RxFilter: FilterAll}) // the active slave's config
	mgmt := st(capsAll, off)
	mgmt.Mgmt = true
	tests := []struct {
		name   string
		st     NICState
		p      Policy
		act    Action
		target HWTstampConfig
		rx, tx bool
		why    string
	}{
		{"software asked", st(capsAll, off), Policy{Mode: Software, Need: NeedProbe}, ActNone, HWTstampConfig{}, false, false, "not used"},
		{"off asked", st(capsAll, off), Policy{Mode: Off, Need: NeedProbe}, ActNone, HWTstampConfig{}, false, false, "not used"},
		{"already on", st(capsAll, on), Policy{Mode: Auto, Need: NeedProbe}, ActKeep, HWTstampConfig{}, true, true, "no change"},
		{"one-step TX stamps too", st(capsAll, oneStep), Policy{Mode: Hardware, Need: NeedProbe}, ActKeep, HWTstampConfig{}, true, true, "no change"},
		{"off: write", st(capsAll, off), Policy{Mode: Auto, Need: NeedProbe}, ActWrite, on, true, true, "→ tx_type=ON rx_filter=ALL"},
		{"capture keeps tx", st(capsAll, off), Policy{Mode: Auto, Need: NeedCapture}, ActWrite, HWTstampConfig{TxType: TxOff, RxFilter: FilterAll}, true, false, ""},
		{"capture keeps one-step tx", st(capsAll, HWTstampConfig{TxType: TxOneStepSync, RxFilter: FilterPTPv2Event}), Policy{Mode: Auto, Need: NeedCapture}, ActWrite, HWTstampConfig{TxType: TxOneStepSync, RxFilter: FilterAll}, true, false, ""},
		{"ptp only, hardware", st(capsPTPOnly, off), Policy{Mode: Hardware, Need: NeedProbe}, ActRefuse, HWTstampConfig{}, false, false, "PTP/NTP messages only"},
		{"ptp only, auto", st(capsPTPOnly, off), Policy{Mode: Auto, Need: NeedProbe}, ActSoftware, HWTstampConfig{}, false, false, "software stamps"},
		{"rx only NIC, probe, auto", st(capsRxOnly, off), Policy{Mode: Auto, Need: NeedProbe}, ActSoftware, HWTstampConfig{}, false, false, "TX: no hardware TX stamps"},
		{"rx only NIC, probe, hardware", st(capsRxOnly, off), Policy{Mode: Hardware, Need: NeedProbe}, ActRefuse, HWTstampConfig{}, false, false, "TX: no hardware TX stamps"},
		{"rx only NIC, capture", st(capsRxOnly, off), Policy{Mode: Hardware, Need: NeedCapture}, ActWrite, HWTstampConfig{TxType: TxOff, RxFilter: FilterAll}, true, false, ""},
		{"software NIC", st(capsSW, off), Policy{Mode: Auto, Need: NeedCapture}, ActSoftware, HWTstampConfig{}, false, false, "no hardware RX stamps"},
		{"unknown config", unknown, Policy{Mode: Hardware, Need: NeedProbe}, ActUnknown, HWTstampConfig{}, true, true, "cannot report"},
		{"read only, hardware", st(capsAll, off), Policy{Mode: Hardware, Need: NeedProbe, ReadOnly: true}, ActRefuse, HWTstampConfig{}, false, false, "not to change it"},
		{"read only, auto", st(capsAll, off), Policy{Mode: Auto, Need: NeedProbe, ReadOnly: true}, ActSoftware, HWTstampConfig{}, false, false, "software stamps"},
		{"ptp4l owns, auto", owned, Policy{Mode: Auto, Need: NeedProbe}, ActSoftware, HWTstampConfig{}, false, false, "ptp4l (pid 812"},
		{"ptp4l owns, hardware", owned, Policy{Mode: Hardware, Need: NeedProbe}, ActRefuse, HWTstampConfig{}, false, false, "does not change it"},
		{"ptp4l owns, take over", owned, Policy{Mode: Hardware, Need: NeedProbe, TakeOver: true}, ActWrite, on, true, true, ""},
		{"ptp4l owns ALL, auto: RX only", ownedOn, Policy{Mode: Auto, Need: NeedProbe}, ActKeep, HWTstampConfig{}, true, false, "takes no TX stamps"},
		{"ptp4l owns ALL, socket", ownedOn, Policy{Mode: Auto, Need: NeedProbe, ReadOnly: true}, ActKeep, HWTstampConfig{}, true, false, "takes no TX stamps"},
		{"ptp4l owns ALL, hardware", ownedOn, Policy{Mode: Hardware, Need: NeedProbe}, ActRefuse, HWTstampConfig{}, false, false, "takes no TX stamps"},
		{"ptp4l owns ALL, capture", ownedOn, Policy{Mode: Hardware, Need: NeedCapture}, ActKeep, HWTstampConfig{}, true, false, "no change"},
		{"ptp4l owns ALL, take over", ownedOn, Policy{Mode: Hardware, Need: NeedProbe, TakeOver: true}, ActKeep, HWTstampConfig{}, true, true, "no change"},
		{"ptp4l owns, config unknown", ownedUnknown, Policy{Mode: Auto, Need: NeedProbe}, ActUnknown, HWTstampConfig{}, true, false, "takes no TX stamps"},
		{"owner unknown, auto", noPIDs, Policy{Mode: Auto, Need: NeedProbe}, ActKeep, HWTstampConfig{}, true, false, "unknown (no host PID namespace) owns"},
		{"bond, auto", bond, Policy{Mode: Auto, Need: NeedProbe}, ActSoftware, HWTstampConfig{}, false, false, "is a bond"},
		{"bond, capture, hardware", bond, Policy{Mode: Hardware, Need: NeedCapture}, ActRefuse, HWTstampConfig{}, false, false, "active slave's PHC, which changes on failover"},
		{"mgmt, auto", mgmt, Policy{Mode: Auto, Need: NeedProbe}, ActSoftware, HWTstampConfig{}, false, false, "default route"},
		{"mgmt, allowed", mgmt, Policy{Mode: Auto, Need: NeedProbe, AllowMgmt: true}, ActWrite, on, true, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.st, tt.p)
			if d.Action != tt.act || d.RX != tt.rx || d.TX != tt.tx || (tt.act == ActWrite && d.Target != tt.target) {
				t.Fatalf("Decide = %+v, want %s rx=%v tx=%v target %s", d, tt.act, tt.rx, tt.tx, tt.target)
			}
			if !strings.Contains(d.Why, tt.why) {
				t.Fatalf("why %q lacks %q", d.Why, tt.why)
			}
			if tt.act == ActRefuse && d.Fix == "" {
				t.Fatal("a refusal without a fix")
			}
			if tt.st.Owner != "" && !tt.p.TakeOver && tt.act == ActRefuse && !strings.Contains(d.Fix, "take-over-ptp") {
				t.Fatalf("fix %q does not name the take-over", d.Fix)
			}
			if (tt.act == ActSoftware || tt.act == ActRefuse) && d.Hardware() {
				t.Fatal("refusal expects hardware stamps")
			}
		})
	}
}

func TestNeedGranted(t *testing.T) {
	all := HWTstampConfig{TxType: TxOn, RxFilter: FilterAll}
	for _, tt := range []struct {
		need     Need
		req, got HWTstampConfig
		ok       bool
	}{
		{NeedProbe, all, all, true},
		{NeedProbe, all, HWTstampConfig{TxType: TxOn, RxFilter: FilterSome}, true},
		{NeedProbe, all, HWTstampConfig{TxType: TxOff, RxFilter: FilterAll}, false},
		{NeedProbe, all, HWTstampConfig{TxType: TxOn, RxFilter: FilterPTPv2Event}, false},
		{NeedProbe, all, HWTstampConfig{TxType: TxOn, RxFilter: FilterNone}, false},
		{NeedCapture, HWTstampConfig{RxFilter: FilterPTPv2Event}, HWTstampConfig{RxFilter: FilterSome}, false},
		{NeedCapture, HWTstampConfig{RxFilter: FilterAll}, HWTstampConfig{RxFilter: FilterNTPAll}, false},
	} {
		if got := tt.need.Granted(tt.req, tt.got); got != tt.ok {
			t.Errorf("%s: Granted(%s, %s) = %v", tt.need, tt.req, tt.got, got)
		}
	}
	if NeedProbe.Covers(HWTstampConfig{TxType: TxOn, RxFilter: FilterSome}) {
		t.Error("a FILTER_SOME read from the device is not known to stamp everything")
	}
}

func TestReadNIC(t *testing.T) {
	st, err := ReadNIC(&fakeDev{caps: capsAll, getErr: unix.EOPNOTSUPP}, "eth9")
	if err != nil || st.ConfigKnown || st.ConfigErr != "SIOCGHWTSTAMP: EOPNOTSUPP" || st.Caps.Ifname != "eth9" {
		t.Fatalf("no SIOCGHWTSTAMP: %+v, %v", st, err)
	}
	st, err = ReadNIC(&fakeDev{caps: capsAll, cur: HWTstampConfig{TxType: TxOn, RxFilter: FilterAll}}, "eth9")
	if err != nil || !st.ConfigKnown || st.Config.RxFilter != FilterAll {
		t.Fatalf("known: %+v, %v", st, err)
	}
	if _, err := ReadNIC(&fakeDev{caps: capsAll, getErr: unix.EIO}, "eth9"); !errors.Is(err, unix.EIO) {
		t.Fatalf("EIO swallowed: %v", err)
	}
	// JSON round trip: what facts and journals carry.
	b, _ := json.Marshal(st)
	var back NICState
	if err := json.Unmarshal(b, &back); err != nil || back.Config != st.Config || back.Caps != st.Caps {
		t.Fatalf("round trip %s → %+v, %v", b, back, err)
	}
	var d Decision
	if err := json.Unmarshal([]byte(`{"action":"write","target":{"tx_type":1,"rx_filter":1},"rx":true,"tx":true,"why":"x"}`), &d); err != nil || d.Action != ActWrite || d.Target.RxFilter != FilterAll {
		t.Fatalf("decision JSON: %+v, %v", d, err)
	}
}

func TestClassifySetErr(t *testing.T) {
	cfg := HWTstampConfig{TxType: TxOn, RxFilter: FilterAll}
	for _, tt := range []struct {
		err  error
		is   error
		text string
	}{
		{unix.ERANGE, errors.ErrUnsupported, "cannot stamp those packets"},
		{unix.EOPNOTSUPP, errors.ErrUnsupported, "does not support it"},
		{unix.EINVAL, errors.ErrUnsupported, "does not support it"},
		{unix.EPERM, os.ErrPermission, "CAP_NET_ADMIN"},
		{unix.ENODEV, os.ErrNotExist, "eth9"},
	} {
		err := ClassifySetErr("eth9", cfg, tt.err)
		if !errors.Is(err, tt.is) || !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.text) {
			t.Errorf("%v → %v", tt.err, err)
		}
	}
}

// TestEnableFollowsNICConfig: the socket asks for hardware stamps only as
// far as the NIC's config delivers them, and never writes it.
func TestEnableFollowsNICConfig(t *testing.T) {
	c := listenLo(t)
	dev := &fakeDev{caps: capsAll, cur: HWTstampConfig{TxType: TxOff, RxFilter: FilterNone}}
	if _, err := c.EnableTimestamping(Hardware, Options{Device: dev}); !errors.Is(err, errors.ErrUnsupported) ||
		!strings.Contains(err.Error(), "tx_type=OFF rx_filter=NONE") || !strings.Contains(err.Error(), "rig nicctl set lo --hwtstamp all") {
		t.Fatalf("hardware on a NIC that is off: %v", err)
	}
	g, err := c.EnableTimestamping(Auto, Options{Device: dev})
	if err != nil || g.HardwareRX() || g.HardwareTX() || g.Flags&FlagRawHardware != 0 || g.Decision.Action != ActSoftware {
		t.Fatalf("auto on a NIC that is off: %s, %v", g, err)
	}
	if len(dev.sets) != 0 {
		t.Fatalf("a socket wrote the NIC config: %v", dev.sets)
	}
	dev.cur = HWTstampConfig{TxType: TxOn, RxFilter: FilterAll}
	g, err = c.EnableTimestamping(Hardware, Options{Device: dev})
	if err != nil || !g.HardwareRX() || !g.HardwareTX() || g.Decision.Action != ActKeep || g.PHC() == nil || g.PHC().Index != 3 {
		t.Fatalf("hardware on a NIC that is on: %s, %v", g, err)
	}
	// The config cannot be read: hardware requested, proof decides.
	dev.getErr = unix.EOPNOTSUPP
	g, err = c.EnableTimestamping(Hardware, Options{Device: dev})
	if err != nil || !g.HardwareRX() || g.Decision.Action != ActUnknown || !strings.Contains(strings.Join(g.Fallbacks, ";"), "first packets") {
		t.Fatalf("unknown config: %s, %v", g, err)
	}
}

// TestEnableReadBackOldKernel plays a kernel (< 6.7) that sets
// SO_TIMESTAMPING_NEW but cannot read it back (ENOPROTOOPT): the old
// option is read instead, and failing that the value set is trusted.
func TestEnableReadBackOldKernel(t *testing.T) {
	c := listen(t, UDPOptions{})
	defer func() { getsockoptFn = getsockopt }()
	getsockoptFn = func(fd, level, opt int, buf []byte) (int, error) {
		if opt == unix.SO_TIMESTAMPING_NEW {
			return 0, unix.ENOPROTOOPT
		}
		return getsockopt(fd, level, opt, buf)
	}
	g, err := c.EnableTimestamping(Software, Options{})
	if err != nil || g.Flags&FlagSoftware == 0 || !g.New {
		t.Fatalf("read back through SO_TIMESTAMPING: %s, %v", g, err)
	}
	getsockoptFn = func(int, int, int, []byte) (int, error) { return 0, unix.ENOPROTOOPT }
	g, err = c.EnableTimestamping(Software, Options{})
	if err != nil || g.Flags != g.Requested || !strings.Contains(strings.Join(g.Fallbacks, ";"), "cannot be read back") {
		t.Fatalf("trusted value: %s, %v", g, err)
	}
	getsockoptFn = func(int, int, int, []byte) (int, error) { return 0, unix.EIO }
	if _, err := c.EnableTimestamping(Software, Options{}); !errors.Is(err, unix.EIO) {
		t.Fatalf("EIO swallowed: %v", err)
	}
}

func TestRxProof(t *testing.T) {
	var p RxProof
	for i := 0; i < ProofWindow-1; i++ {
		if s := p.Observe(0, 1); s != ProofPending {
			t.Fatalf("packet %d: %s", i, s)
		}
	}
	if p.Final() != ProofAbsent {
		t.Fatal("a short round with no stamp is not absent at the end")
	}
	if s := p.Observe(0, 1); s != ProofAbsent {
		t.Fatalf("after the window: %s", s)
	}
	if s := p.Observe(123, 1); s != ProofAbsent {
		t.Fatal("a late stamp revived an absent verdict")
	}
	err := p.Err("requests", "the responder's socket on eth9")
	if !errors.Is(err, ErrNoHardwareStamp) || !strings.Contains(err.Error(), "RX hardware stamp never came: the first 16 requests received on the responder's socket on eth9 carried none:") {
		t.Fatalf("Err = %v", err)
	}
	const phc, ms = int64(37e9), int64(time.Millisecond) // PHC − CLOCK_REALTIME: any offset
	var q RxProof
	q.Observe(0, 5*ms)
	if q.Observe(phc+10*ms, 10*ms) != ProofPending || q.Final() != ProofDelivered {
		t.Fatal("one stamp proves nothing yet; alone at the end of a round it is taken")
	}
	for i := int64(1); i < proofPairs; i++ { // 0.3 ms of jitter: plausible
		if s := q.Observe(phc+(10+i)*ms+i%2*300_000, (10+i)*ms); s != ProofPending {
			t.Fatalf("pair %d: %s", i, s)
		}
	}
	if q.Observe(phc+20*ms, 20*ms) != ProofDelivered || q.Observe(0, 21*ms) != ProofDelivered || q.Final() != ProofDelivered {
		t.Fatal("8 plausible pairs did not deliver")
	}
	var none RxProof
	if none.Final() != ProofPending {
		t.Fatal("no packets is no verdict")
	}
	if n := testing.AllocsPerRun(100, func() { q.Observe(1, 1); none.Observe(0, 0) }); n != 0 {
		t.Fatalf("%v allocs", n)
	}
}

// TestProofPlausible: a hardware stamp is proof only with another that
// agrees with the packets' software stamps: a repeated stamp (a stale
// register, a compressed completion) or one whose distance to the last
// disagrees with the software stamps' by more than PlausibleSkew never
// proves, and a window of them is absent, saying why.
func TestProofPlausible(t *testing.T) {
	const ms = int64(time.Millisecond)
	for _, tt := range []struct {
		name string
		hw   func(i int64) int64 // packet i's hardware stamp; its software stamp is i ms
		want Proof
	}{
		{"repeated", func(int64) int64 { return 5e9 }, ProofAbsent},
		{"2 ms off every ms", func(i int64) int64 { return 5e9 + 3*i*ms }, ProofAbsent},
		{"0.5 ms jitter", func(i int64) int64 { return 5e9 + i*ms + i%2*ms/2 }, ProofDelivered},
		{"sparse but agreeing", func(i int64) int64 { return i % 4 / 3 * (5e9 + i*ms) }, ProofDelivered},
		{"blocks of 8 sharing a stamp", func(i int64) int64 { return 5e9 + (i-1)/8*8*ms }, ProofAbsent},
	} {
		var rx RxProof
		tx := TxProof{Wait: time.Second}
		for i := int64(1); i <= 2*ProofWindow; i++ {
			rx.Observe(tt.hw(i), i*ms)
			tx.Sent(i * ms)
			if hw := tt.hw(i); hw != 0 {
				tx.Stamped(hw, i*ms)
			}
		}
		if got := rx.Final(); got != tt.want {
			t.Errorf("%s: RX %s, want %s", tt.name, got, tt.want)
		}
		if got := tx.Final(); got != tt.want {
			t.Errorf("%s: TX %s, want %s", tt.name, got, tt.want)
		}
		if tt.want == ProofAbsent && !strings.Contains(rx.Err("requests", "eth9").Error(), "carried no plausible ones (8 of 8 pairs") {
			t.Errorf("%s: %v", tt.name, rx.Err("requests", "eth9"))
		}
	}
	// Without software stamps (not known yet) distinct stamps are enough.
	var tx TxProof
	for i := int64(0); i <= proofPairs; i++ {
		tx.Stamped(7e9+i*ms, 0)
	}
	if tx.State() != ProofDelivered {
		t.Fatal("distinct TX stamps without software stamps")
	}
}

func TestTxProof(t *testing.T) {
	p := TxProof{Wait: 100 * time.Millisecond}
	ms := int64(time.Millisecond)
	for i := 0; i < ProofWindow; i++ {
		if s := p.Sent(int64(i) * ms); s != ProofPending {
			t.Fatalf("send %d: %s", i, s)
		}
	}
	// Enough packets, but the first is younger than the stamp wait.
	if s := p.Sent(99 * ms); s != ProofPending {
		t.Fatalf("decided before the wait: %s", s)
	}
	if s := p.Sent(100 * ms); s != ProofAbsent {
		t.Fatalf("after the wait: %s", s)
	}
	if !strings.Contains(p.Err("requests", "eth9").Error(), "TX hardware stamp never came: 18 requests sent on eth9, none stamped within") {
		t.Fatal(p.Err("requests", "eth9"))
	}
	q := TxProof{Wait: time.Second}
	q.Sent(0)
	for i := int64(0); i <= proofPairs; i++ {
		q.Stamped(9e9+i*ms, i*ms)
	}
	if q.Sent(2*int64(time.Second)) != ProofDelivered {
		t.Fatal("agreeing stamps did not deliver")
	}
	r := TxProof{Wait: time.Second}
	r.Sent(0)
	if r.Final() != ProofAbsent {
		t.Fatal("sends without a stamp are absent at the end")
	}
	if n := testing.AllocsPerRun(100, func() { q.Sent(5); q.Stamped(1, 1) }); n != 0 {
		t.Fatalf("%v allocs", n)
	}
}

// A probe told to leave the NIC alone names the `rig nicctl set` mode that
// enables what it needs: a capture's RX ALL keeps tx_type ("rx"), which an
// RX-only NIC takes; sender and responder need "all".
func TestReadOnlyFixNamesTheMode(t *testing.T) {
	st := NICState{Ifname: "ens6", Caps: capsRxOnly, Config: HWTstampConfig{}, ConfigKnown: true}
	if d := Decide(st, Policy{Mode: Hardware, Need: NeedCapture, ReadOnly: true}); d.Action != ActRefuse || !strings.Contains(d.Fix, "`rig nicctl set ens6 --hwtstamp rx` first") {
		t.Errorf("capture: %+v", d)
	}
	st.Caps = capsAll
	if d := Decide(st, Policy{Mode: Hardware, Need: NeedProbe, ReadOnly: true}); !strings.Contains(d.Fix, "`rig nicctl set ens6 --hwtstamp all` first") {
		t.Errorf("probe: %+v", d)
	}
}

// TestOwnerFix: an owner rig could not look for is fixed by letting rig
// see the host's processes, a named one by stopping it.
func TestOwnerFix(t *testing.T) {
	if f := ownerFix(OwnerUnknown + " (no host PID namespace)"); !strings.Contains(f, "hostPID: true") {
		t.Error(f)
	}
	if f := ownerFix("chronyd (pid 9, hwtimestamp * in /etc/chrony.conf)"); !strings.Contains(f, "stop chronyd for the run") {
		t.Error(f)
	}
}
