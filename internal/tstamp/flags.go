package tstamp

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Flags is a set of SOF_TIMESTAMPING_* bits (include/uapi/linux/net_tstamp.h).
type Flags uint32

// SOF_TIMESTAMPING_* bits: bit n is the kernel's enum value n (the ABI,
// the same on every architecture).
const (
	FlagTxHardware   Flags = 1 << 0 // NIC TX stamp
	FlagTxSoftware   Flags = 1 << 1 // SW stamp before the driver
	FlagRxHardware   Flags = 1 << 2 // NIC RX stamp
	FlagRxSoftware   Flags = 1 << 3 // SW stamp on stack entry
	FlagSoftware     Flags = 1 << 4 // report SW stamps (ts[0])
	FlagSysHardware  Flags = 1 << 5 // deprecated
	FlagRawHardware  Flags = 1 << 6 // report HW stamps (ts[2])
	FlagOptID        Flags = 1 << 7 // u32 key per datagram
	FlagTxSched      Flags = 1 << 8 // SW stamp before the qdisc
	FlagTxAck        Flags = 1 << 9 // TCP only
	FlagOptCmsg      Flags = 1 << 10
	FlagOptTSOnly    Flags = 1 << 11 // loop back no payload
	FlagOptStats     Flags = 1 << 12
	FlagOptPktinfo   Flags = 1 << 13
	FlagOptTxSwHw    Flags = 1 << 14 // SW and HW TX stamps as separate messages
	FlagBindPHC      Flags = 1 << 15
	FlagOptIDTCP     Flags = 1 << 16
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

func highestBit(f Flags) Flags {
	for i := 31; i >= 0; i-- {
		if f&(1<<i) != 0 {
			return 1 << i
		}
	}
	return 0
}

// Kind says at which point a TX stamp was taken (SCM_TSTAMP_*, ee_info:
// SND 0, SCHED 1, ACK 2, COMPLETION 3).
type Kind uint8

const (
	KindSnd        Kind = 0 // handed to the NIC (SW) / left the NIC (HW)
	KindSched      Kind = 1 // entered the qdisc (SW only)
	KindAck        Kind = 2 // TCP only
	KindCompletion Kind = 3 // driver saw the TX completion (~6.15)
)

func (k Kind) String() string {
	switch k {
	case KindSnd:
		return "SND"
	case KindSched:
		return "SCHED"
	case KindAck:
		return "ACK"
	case KindCompletion:
		return "COMPLETION"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}
