package tstamp

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Flags is a set of SOF_TIMESTAMPING_* bits (include/uapi/linux/net_tstamp.h).
type Flags uint32

// SOF_TIMESTAMPING_* bits. FlagOptRxFilter and FlagTxCompletion are newer than
// x/sys v0.50.0 and defined here.
const (
	FlagTxHardware   Flags = unix.SOF_TIMESTAMPING_TX_HARDWARE  // NIC TX stamp
	FlagTxSoftware   Flags = unix.SOF_TIMESTAMPING_TX_SOFTWARE  // SW stamp before the driver
	FlagRxHardware   Flags = unix.SOF_TIMESTAMPING_RX_HARDWARE  // NIC RX stamp
	FlagRxSoftware   Flags = unix.SOF_TIMESTAMPING_RX_SOFTWARE  // SW stamp on stack entry
	FlagSoftware     Flags = unix.SOF_TIMESTAMPING_SOFTWARE     // report SW stamps (ts[0])
	FlagSysHardware  Flags = unix.SOF_TIMESTAMPING_SYS_HARDWARE // deprecated
	FlagRawHardware  Flags = unix.SOF_TIMESTAMPING_RAW_HARDWARE // report HW stamps (ts[2])
	FlagOptID        Flags = unix.SOF_TIMESTAMPING_OPT_ID       // u32 key per datagram
	FlagTxSched      Flags = unix.SOF_TIMESTAMPING_TX_SCHED     // SW stamp before the qdisc
	FlagTxAck        Flags = unix.SOF_TIMESTAMPING_TX_ACK       // TCP only
	FlagOptCmsg      Flags = unix.SOF_TIMESTAMPING_OPT_CMSG
	FlagOptTSOnly    Flags = unix.SOF_TIMESTAMPING_OPT_TSONLY // loop back no payload
	FlagOptStats     Flags = unix.SOF_TIMESTAMPING_OPT_STATS
	FlagOptPktinfo   Flags = unix.SOF_TIMESTAMPING_OPT_PKTINFO
	FlagOptTxSwHw    Flags = unix.SOF_TIMESTAMPING_OPT_TX_SWHW // SW and HW TX stamps as separate messages
	FlagBindPHC      Flags = unix.SOF_TIMESTAMPING_BIND_PHC
	FlagOptIDTCP     Flags = unix.SOF_TIMESTAMPING_OPT_ID_TCP
	FlagOptRxFilter  Flags = 1 << 17 // report RX stamps only for RX generation this socket asked for (~6.12)
	FlagTxCompletion Flags = 1 << 18 // SW stamp at TX completion (~6.15)
)

var flagNames = [...]string{
	"TX_HARDWARE", "TX_SOFTWARE", "RX_HARDWARE", "RX_SOFTWARE", "SOFTWARE",
	"SYS_HARDWARE", "RAW_HARDWARE", "OPT_ID", "TX_SCHED", "TX_ACK", "OPT_CMSG",
	"OPT_TSONLY", "OPT_STATS", "OPT_PKTINFO", "OPT_TX_SWHW", "BIND_PHC",
	"OPT_ID_TCP", "OPT_RX_FILTER", "TX_COMPLETION",
}

// String lists the bit names joined by "|", e.g. "TX_SOFTWARE|SOFTWARE";
// unknown bits are shown in hex, and the empty set is "none".
func (f Flags) String() string { return bitNames(uint32(f), flagNames[:]) }

// ethtoolFlagNames are the kernel's names of the bits as `ethtool -T`
// prints them (sof_timestamping_names in net/ethtool/common.c).
var ethtoolFlagNames = [...]string{
	"hardware-transmit", "software-transmit", "hardware-receive", "software-receive",
	"software-system-clock", "hardware-legacy-clock", "hardware-raw-clock", "option-id",
	"sched-transmit", "ack-transmit", "option-cmsg", "option-tsonly", "option-stats",
	"option-pktinfo", "option-tx-swhw", "bind-phc", "option-id-tcp", "option-rx-filter",
	"tx-completion",
}

// EthtoolNames lists the bits as `ethtool -T` names them, space
// separated, e.g. "software-transmit software-receive software-system-clock".
func (f Flags) EthtoolNames() string {
	return strings.ReplaceAll(bitNames(uint32(f), ethtoolFlagNames[:]), "|", " ")
}

func bitNames(v uint32, names []string) string {
	if v == 0 {
		return "none"
	}
	var parts []string
	for i := 0; i < 32; i++ {
		if v&(1<<i) == 0 {
			continue
		}
		if i < len(names) && names[i] != "" {
			parts = append(parts, names[i])
		} else {
			parts = append(parts, "0x"+strconv.FormatUint(1<<i, 16))
		}
	}
	return strings.Join(parts, "|")
}

// Mode selects which timestamp sources a socket asks for.
type Mode uint8

const (
	// Auto asks for hardware and software stamps and settles for software
	// when the interface cannot stamp in hardware (the reason is recorded).
	Auto Mode = iota
	// Hardware requires NIC stamps; EnableWith fails with the capability report
	// when the interface cannot provide them. SW stamps are requested too,
	// for diagnosis (stage breakdown), but metrics must use HW.
	Hardware
	// Software asks for kernel (CLOCK_REALTIME) stamps only.
	Software
	// Off asks for no kernel stamps at all: the socket is left as it was
	// and only user-space clock reads remain. It exists to measure what
	// the kernel's stamping itself adds to a round trip (an A/B against
	// Software on the same path), not to measure latency with.
	Off
)

// String returns "auto", "hardware", "software" or "off".
func (m Mode) String() string {
	switch m {
	case Off:
		return "off"
	case Auto:
		return "auto"
	case Hardware:
		return "hardware"
	case Software:
		return "software"
	}
	return "Mode(" + strconv.Itoa(int(m)) + ")"
}

// ParseMode parses "hardware", "software", "auto" or "off"
// (case-insensitive).
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "auto":
		return Auto, nil
	case "hardware", "hw":
		return Hardware, nil
	case "software", "sw":
		return Software, nil
	case "off", "none":
		return Off, nil
	}
	return 0, fmt.Errorf("tstamp: unknown timestamp mode %q: want hardware, software, auto or off", s)
}

// MarshalText implements encoding.TextMarshaler.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseMode.
func (m *Mode) UnmarshalText(b []byte) error {
	v, err := ParseMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// Flag sets asked for by EnableWith. The SW flags ride along in Hardware/Auto so
// one packet carries both stamps (stage breakdown, fallback in the same run).
const (
	swTxFlags = FlagTxSoftware | FlagSoftware
	swRxFlags = FlagRxSoftware | FlagSoftware
	hwTxFlags = FlagTxHardware | FlagRawHardware
	hwRxFlags = FlagRxHardware | FlagRawHardware
	keyFlags  = FlagOptID | FlagOptTSOnly
	// optional bits are dropped one by one, newest first, when the kernel
	// answers EINVAL.
	optionalFlags = FlagOptRxFilter | FlagOptTxSwHw
)

// Granted says what EnableWith obtained for a socket.
type Granted struct {
	Mode      Mode
	Requested Flags // what was asked for first
	Flags     Flags // read back with getsockopt (what the kernel holds)
	// New is true when SO_TIMESTAMPING_NEW (cmsg type 65) is in use, false
	// for the old SO_TIMESTAMPING (37). ParseRx/ParseErrqueue accept both.
	New bool
	// Ifname is the device the socket is bound to ("" when unbound).
	Ifname string
	// SWTx is the stamp filed as the software TX stamp: KindSnd, or
	// KindSched where the bound device's driver gives no SND software
	// stamp (softwareTX).
	SWTx Kind
	// NIC is what the bound device reported (capabilities and current
	// config); Decision is what Decide made of it for this socket. Both
	// are zero when the NIC was not consulted (software, off, unbound).
	NIC      NICState
	Decision Decision
	// Fallbacks lists every downgrade, in order, as human text.
	Fallbacks []string
}

// HardwareRX reports whether hardware RX stamps were requested on the
// socket and the NIC's config is expected to deliver them. The first
// packets prove it (RxProof).
func (g Granted) HardwareRX() bool { return g.Flags&hwRxFlags == hwRxFlags && g.Decision.RX }

// HardwareTX reports whether hardware TX stamps were requested on the
// socket and the NIC's config is expected to deliver them (TxProof).
func (g Granted) HardwareTX() bool { return g.Flags&hwTxFlags == hwTxFlags && g.Decision.TX }

// Software reports whether kernel software stamps were granted (false in
// mode Off).
func (g Granted) Software() bool { return g.Flags&FlagSoftware != 0 }

// TxSched reports whether the socket's software TX stamp is the qdisc's
// (SCM_TSTAMP_SCHED, taken in __dev_queue_xmit) instead of the driver's
// SND stamp: its device's driver gives none (softwareTX).
func (g Granted) TxSched() bool { return g.SWTx == KindSched && g.Flags&FlagTxSched != 0 }

// String is a one-line summary for logs and run manifests.
func (g Granted) String() string {
	if g.Mode == Off {
		return "mode=off (no kernel timestamps: user-space clock reads only)"
	}
	opt := "SO_TIMESTAMPING"
	if g.New {
		opt = "SO_TIMESTAMPING_NEW"
	}
	s := fmt.Sprintf("mode=%s %s flags=%s (%#x)", g.Mode, opt, g.Flags, uint32(g.Flags))
	if g.Ifname != "" {
		s += " dev=" + g.Ifname
	}
	if g.NIC.ConfigKnown {
		s += " nic=" + g.NIC.Config.String()
	}
	if len(g.Fallbacks) > 0 {
		s += " fallbacks=[" + strings.Join(g.Fallbacks, "; ") + "]"
	}
	return s
}

// Options tune EnableWith.
type Options struct {
	// Extra are optional bits such as FlagTxSched (the qdisc stamp) or
	// FlagTxCompletion: the kernel rejecting them (EINVAL) drops them with
	// a Fallbacks note. Hardware bits are chosen by the mode and refused
	// here.
	Extra Flags
	// Device answers for the NIC the socket is bound to (nil: HostDevice).
	// Tests pass driver profiles.
	Device Device
	// Owner is who keeps that NIC's timestamping config (NICState.Owner:
	// ptp4l, chronyd, or OwnerUnknown), as the caller found it — the
	// socket cannot tell — or "" when none does or the user let rig take
	// the NIC over. The socket's decision then takes no hardware TX stamps
	// next to the owner, as the run's own decision did (Decide).
	Owner string
}

// EnableWith asks the kernel for timestamps on fd according to mode.
//
// For UDP sockets it requests TX_SOFTWARE|RX_SOFTWARE|SOFTWARE|OPT_ID|
// OPT_TSONLY|OPT_RX_FILTER (and TX_SCHED where the bound device's driver
// gives no software TX stamp: softwareTX); for AF_PACKET sockets the RX
// bits only. It uses SO_TIMESTAMPING_NEW and falls back to SO_TIMESTAMPING
// when that option is unknown (ENOPROTOOPT); optional bits the kernel
// rejects with EINVAL (OPT_RX_FILTER, OPT_TX_SWHW, Options.Extra) are
// dropped one at a time. Every downgrade is listed in Granted.Fallbacks.
//
// In Hardware and Auto mode the hardware bits (TX_HARDWARE|RX_HARDWARE|
// RAW_HARDWARE, OPT_TX_SWHW) are requested only as far as the bound NIC's
// capabilities AND its current config allow (Decide with a read-only
// policy: the socket never changes the NIC; enabling it is the caller's
// business, through the journal). A UDP socket needs RX ALL + TX ON, an
// AF_PACKET socket RX ALL. In Hardware mode a NIC that cannot or does not
// deliver that, or an unbound socket, is an error whose text says why and
// how to fix it, wrapping errors.ErrUnsupported; in Auto mode the socket
// gets software stamps and Fallbacks says why. Mode Off sets nothing.
//
// RX software stamping is a host-wide switch that the kernel turns on from
// a workqueue after the first socket asks for it: the first packets after
// enabling can arrive without SW stamps. Warm up (or count unstamped
// packets) instead of failing on them.
func EnableWith(fd int, mode Mode, o Options) (Granted, error) {
	if err := checkOptions(mode, o); err != nil || mode == Off {
		return Granted{Mode: mode}, err
	}
	family, ifname, err := socketDevice(fd)
	if err != nil {
		return Granted{Mode: mode}, err
	}
	p, err := PlanFor(family, ifname, mode, o)
	if err != nil {
		return p.Granted, err
	}
	return setTimestamping(fd, p)
}

// Plan is what EnableWith asks the kernel for on one socket, decided
// before any setsockopt: the bits to set (Want), those the kernel may
// refuse (Optional), and the grant so far (mode, device, the NIC's state
// and the decision on it, fallbacks). A program that sets the flags on its
// own socket (the native engine) asks for Want and reports what the kernel
// did to Settle, so the decision stays here.
type Plan struct {
	Granted        Granted
	Want, Optional Flags
}

// PlanFor is EnableWith's decision for a socket of family (unix.AF_INET or
// unix.AF_PACKET) bound to ifname ("" when unbound), with EnableWith's
// error contract. Mode Off plans nothing.
func PlanFor(family int, ifname string, mode Mode, o Options) (Plan, error) {
	p := Plan{Granted: Granted{Mode: mode}}
	if err := checkOptions(mode, o); err != nil || mode == Off {
		return p, err
	}
	g := &p.Granted
	g.Ifname = ifname
	packet := family == unix.AF_PACKET
	want := swRxFlags | FlagOptRxFilter
	dev := o.Device
	if dev == nil {
		dev = HostDevice()
	}
	if mode != Software {
		hw, err := hardwareFlags(dev, g, packet, o.Owner)
		if err != nil {
			return p, err
		}
		want |= hw
	}
	if !packet {
		want |= softwareTX(dev, g) | keyFlags
	}
	p.Want, p.Optional = want|o.Extra, optionalFlags|o.Extra
	return p, nil
}

func checkOptions(mode Mode, o Options) error {
	switch {
	case o.Extra&(hwTxFlags|hwRxFlags) != 0:
		return fmt.Errorf("tstamp: extra flags %s: hardware bits are chosen by the mode", o.Extra&(hwTxFlags|hwRxFlags))
	case mode > Off:
		return fmt.Errorf("tstamp: invalid mode %d", mode)
	case mode == Off && o.Extra != 0:
		return fmt.Errorf("tstamp: extra flags %s with mode off: off asks for no stamps", o.Extra)
	}
	return nil
}

// SetResult is what setting a Plan's flags on a socket gave.
type SetResult struct {
	Old     bool  // SO_TIMESTAMPING_NEW was unknown: the old option holds the flags
	Dropped Flags // optional bits the kernel refused (EINVAL) and that were dropped
	Assumed bool  // the flags could not be read back: Flags is the value set
	Flags   Flags // what the kernel holds
}

// Settle is the grant once the plan's flags were set as r says.
func (p Plan) Settle(r SetResult) Granted {
	g := p.Granted
	g.Fallbacks = slices.Clone(g.Fallbacks)
	g.Requested, g.New, g.Flags = p.Want, !r.Old, r.Flags
	if r.Old {
		g.Fallbacks = append(g.Fallbacks, "SO_TIMESTAMPING_NEW unknown (kernel < 5.1): using SO_TIMESTAMPING")
	}
	for d := r.Dropped; d != 0; d &^= highestBit(d) {
		g.Fallbacks = append(g.Fallbacks, highestBit(d).String()+" rejected (EINVAL): retried without it")
	}
	if r.Assumed {
		g.Fallbacks = append(g.Fallbacks, "flags cannot be read back (getsockopt ENOPROTOOPT): the value set is assumed")
	}
	return g
}

// softwareTX is the software TX stamp a UDP socket asks for: the driver's
// SND stamp (TX_SOFTWARE, taken in skb_tx_timestamp at the hand-off to the
// NIC). When the bound device's capabilities lack TX_SOFTWARE — its driver
// never calls skb_tx_timestamp, as mlx5 before 6.16 — it also asks for the
// qdisc's (TX_SCHED, taken in __dev_queue_xmit for every driver) and files
// that one instead (Granted.SWTx), in the same column, labelled sched:
// waiting for SND stamps there would wait for stamps that never come.
// TX_SOFTWARE stays asked: it costs nothing where no stamp comes. An
// unbound socket, or capabilities that cannot be read, keep the SND stamp
// (the Fallbacks say why).
func softwareTX(dev Device, g *Granted) Flags {
	if g.Ifname == "" {
		return swTxFlags
	}
	c := g.NIC.Caps
	if g.NIC.Ifname == "" { // not read for the hardware decision
		var err error
		if c, err = dev.TSInfo(g.Ifname); err != nil {
			g.Fallbacks = append(g.Fallbacks, fmt.Sprintf("%s: ETHTOOL_GET_TS_INFO: %v: software TX stamps asked as TX_SOFTWARE", g.Ifname, err))
			return swTxFlags
		}
	}
	if c.SOF&FlagTxSoftware != 0 {
		return swTxFlags
	}
	g.SWTx = KindSched
	g.Fallbacks = append(g.Fallbacks, g.Ifname+"'s driver gives no software TX stamp (no TX_SOFTWARE in its capabilities): the software TX stamp is the qdisc's (TX_SCHED), labelled sched")
	return swTxFlags | FlagTxSched
}

// hardwareFlags decides the HW bits from the bound device's capabilities,
// its current config and its owner.
func hardwareFlags(dev Device, g *Granted, packet bool, owner string) (Flags, error) {
	if g.Ifname == "" {
		if g.Mode == Hardware {
			return 0, fmt.Errorf("tstamp: hardware timestamps need a socket bound to a device (SO_BINDTODEVICE or an AF_PACKET ifindex), so the NIC can be checked: %w", errors.ErrUnsupported)
		}
		g.Fallbacks = append(g.Fallbacks, "socket not bound to a device: its NIC cannot be checked: software stamps")
		return 0, nil
	}
	st, err := ReadNIC(dev, g.Ifname)
	if err != nil {
		return 0, err
	}
	st.Owner = owner
	need := NeedProbe
	if packet {
		need = NeedCapture
	}
	d := Decide(st, Policy{Mode: g.Mode, Need: need, ReadOnly: true})
	g.NIC, g.Decision = st, d
	switch {
	case d.Action == ActRefuse:
		return 0, fmt.Errorf("tstamp: timestamps hardware: %s; fix: %s: %w", d.Why, d.Fix, errors.ErrUnsupported)
	case d.Action != ActKeep, need.TX && !d.TX: // software, unknown, or no TX stamps next to an owner
		g.Fallbacks = append(g.Fallbacks, d.Why)
	}
	var f Flags
	if d.RX {
		f |= hwRxFlags
	}
	if d.TX {
		f |= hwTxFlags | FlagOptTxSwHw
	}
	return f, nil
}

// setsockoptInt is a seam for tests that play an older kernel.
var setsockoptInt = unix.SetsockoptInt

// setTimestamping sets the plan's flags (NEW option first) and reads the
// result back.
func setTimestamping(fd int, p Plan) (Granted, error) {
	var r SetResult
	want, opt := p.Want, unix.SO_TIMESTAMPING_NEW
	for {
		err := setsockoptInt(fd, unix.SOL_SOCKET, opt, int(want))
		if err == nil {
			break
		}
		switch {
		case opt == unix.SO_TIMESTAMPING_NEW && errors.Is(err, unix.ENOPROTOOPT):
			opt, r.Old = unix.SO_TIMESTAMPING, true
			continue
		case errors.Is(err, unix.EINVAL) && want&p.Optional != 0:
			bit := highestBit(want & p.Optional)
			want &^= bit
			r.Dropped |= bit
			continue
		}
		return p.Settle(r), fmt.Errorf("tstamp: setsockopt(%s, %s): %w", optName(opt), want, err)
	}
	got, err := getTimestamping(fd, opt)
	if err != nil && errors.Is(err, unix.ENOPROTOOPT) {
		// Kernels before 6.7 set SO_TIMESTAMPING_NEW but cannot read it
		// back — except the 5.10/5.15/6.1/6.6 stable updates from January
		// 2024 on, which have the fix: read the old option, which shares
		// the socket's flags, and failing that trust the value the kernel
		// just accepted.
		if got, err = getTimestamping(fd, unix.SO_TIMESTAMPING); err != nil {
			got, err, r.Assumed = want, nil, true
		}
	}
	r.Flags = got
	return p.Settle(r), err
}

func highestBit(f Flags) Flags {
	for i := 31; i >= 0; i-- {
		if f&(1<<i) != 0 {
			return 1 << i
		}
	}
	return 0
}

func optName(opt int) string {
	if opt == unix.SO_TIMESTAMPING_NEW {
		return "SO_TIMESTAMPING_NEW"
	}
	return "SO_TIMESTAMPING"
}

// getsockoptFn is a seam for tests that play an older kernel.
var getsockoptFn = getsockopt

// getTimestamping reads struct so_timestamping {int flags; int bind_phc;}
// (older kernels return only the int).
func getTimestamping(fd, opt int) (Flags, error) {
	var buf [8]byte
	n, err := getsockoptFn(fd, unix.SOL_SOCKET, opt, buf[:])
	if err != nil {
		return 0, fmt.Errorf("tstamp: getsockopt(%s): %w", optName(opt), err)
	}
	if n < 4 {
		return 0, fmt.Errorf("tstamp: getsockopt(%s) returned %d bytes, want 4 or 8", optName(opt), n)
	}
	return Flags(nativeEndian.Uint32(buf[:4])), nil
}
