package tstamp

import (
	"errors"
	"fmt"
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
	// Hardware requires NIC stamps; Enable fails with the capability report
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

// Flag sets asked for by Enable. The SW flags ride along in Hardware/Auto so
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

// Granted says what Enable obtained for a socket.
type Granted struct {
	Mode      Mode
	Requested Flags // what was asked for first
	Flags     Flags // read back with getsockopt (what the kernel holds)
	// New is true when SO_TIMESTAMPING_NEW (cmsg type 65) is in use, false
	// for the old SO_TIMESTAMPING (37). ParseRx/ParseErrqueue accept both.
	New bool
	// Ifname is the device the socket is bound to ("" when unbound); its
	// capabilities decided the hardware part.
	Ifname string
	// Caps is the capability report of Ifname (zero when unbound).
	Caps Caps
	// Fallbacks lists every downgrade, in order, as human text.
	Fallbacks []string
}

// HardwareRX reports whether HW RX stamps were requested and granted for a
// capable interface. The device rx_filter (HWConfig) must still match.
func (g Granted) HardwareRX() bool {
	return g.Flags&hwRxFlags == hwRxFlags && g.Caps.HardwareRX()
}

// HardwareTX reports whether HW TX stamps were requested and granted for a
// capable interface.
func (g Granted) HardwareTX() bool {
	return g.Flags&hwTxFlags == hwTxFlags && g.Caps.HardwareTX()
}

// Software reports whether kernel software stamps were granted (false in
// mode Off).
func (g Granted) Software() bool { return g.Flags&FlagSoftware != 0 }

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
	if len(g.Fallbacks) > 0 {
		s += " fallbacks=[" + strings.Join(g.Fallbacks, "; ") + "]"
	}
	return s
}

// Enable asks the kernel for timestamps on fd according to mode and returns
// what it granted.
//
// For UDP sockets it requests TX_SOFTWARE|RX_SOFTWARE|SOFTWARE|OPT_ID|
// OPT_TSONLY|OPT_RX_FILTER, plus TX_HARDWARE|RX_HARDWARE|RAW_HARDWARE|
// OPT_TX_SWHW in Hardware and Auto mode. For AF_PACKET sockets it requests the
// RX bits only. It uses SO_TIMESTAMPING_NEW and falls back to SO_TIMESTAMPING
// when that option is unknown (ENOPROTOOPT); bits the kernel rejects with
// EINVAL that are optional (OPT_RX_FILTER, OPT_TX_SWHW) are dropped one at a
// time. Every downgrade is listed in Granted.Fallbacks.
//
// The hardware part is decided from the capabilities of the device the
// socket is bound to (SO_BINDTODEVICE, or the AF_PACKET bind ifindex). In
// Hardware mode an unbound socket is an error, and so is a device without
// HW stamping: that error's text contains the capability report and wraps
// errors.ErrUnsupported. In Auto mode both cases fall back to software and
// say so in Fallbacks. Mode Off sets nothing and grants no flags.
//
// RX software stamping is a host-wide switch that the kernel turns on from
// a workqueue after the first socket asks for it: the first packets after
// enabling can arrive without SW stamps. Warm up (or count unstamped
// packets) instead of failing on them.
func Enable(fd int, mode Mode) (Granted, error) { return EnableWith(fd, mode, 0) }

// EnableWith is Enable plus extra bits such as FlagTxSched (the qdisc
// stamp) or FlagTxCompletion. Extra bits are
// optional: the kernel rejecting them (EINVAL) drops them with a Fallbacks
// note. Hardware bits in extra are refused; use mode for those.
func EnableWith(fd int, mode Mode, extra Flags) (Granted, error) {
	if extra&(hwTxFlags|hwRxFlags) != 0 {
		return Granted{}, fmt.Errorf("tstamp: extra flags %s: hardware bits are chosen by the mode", extra&(hwTxFlags|hwRxFlags))
	}
	if mode > Off {
		return Granted{}, fmt.Errorf("tstamp: invalid mode %d", mode)
	}
	g := Granted{Mode: mode}
	if mode == Off {
		if extra != 0 {
			return g, fmt.Errorf("tstamp: extra flags %s with mode off: off asks for no stamps", extra)
		}
		return g, nil
	}
	family, ifname, err := socketDevice(fd)
	if err != nil {
		return g, err
	}
	g.Ifname = ifname
	packet := family == unix.AF_PACKET
	want := swRxFlags | FlagOptRxFilter
	if !packet {
		want |= swTxFlags | keyFlags
	}
	if mode != Software {
		hw, err := hardwareFlags(fd, &g, packet)
		if err != nil {
			return g, err
		}
		want |= hw
	}
	return setTimestamping(fd, g, want|extra, optionalFlags|extra)
}

// hardwareFlags decides the HW bits from the bound device's capabilities.
func hardwareFlags(fd int, g *Granted, packet bool) (Flags, error) {
	if g.Ifname == "" {
		if g.Mode == Hardware {
			return 0, fmt.Errorf("tstamp: hardware timestamps need a socket bound to a device (SO_BINDTODEVICE or an AF_PACKET ifindex), so the NIC capabilities can be checked: %w", errors.ErrUnsupported)
		}
		g.Fallbacks = append(g.Fallbacks, "socket not bound to a device: NIC capabilities unknown, hardware stamps requested anyway")
		f := hwRxFlags
		if !packet {
			f |= hwTxFlags | FlagOptTxSwHw
		}
		return f, nil
	}
	caps, err := capabilitiesFD(fd, g.Ifname)
	if err != nil {
		return 0, err
	}
	g.Caps = caps
	var f Flags
	var missing []string
	if caps.HardwareRX() {
		f |= hwRxFlags
	} else {
		missing = append(missing, "RX")
	}
	if !packet {
		if caps.HardwareTX() {
			f |= hwTxFlags | FlagOptTxSwHw
		} else {
			missing = append(missing, "TX")
		}
	}
	if len(missing) > 0 {
		what := strings.Join(missing, "+")
		if g.Mode == Hardware {
			return 0, fmt.Errorf("tstamp: %s cannot timestamp %s in hardware (%s): %w; use mode software or auto",
				g.Ifname, what, caps, errors.ErrUnsupported)
		}
		g.Fallbacks = append(g.Fallbacks, g.Ifname+": no hardware "+what+" stamping, software only for "+what)
	}
	return f, nil
}

// setsockoptInt is a seam for tests that play an older kernel.
var setsockoptInt = unix.SetsockoptInt

// setTimestamping sets want (NEW option first) and reads the result back.
func setTimestamping(fd int, g Granted, want, optional Flags) (Granted, error) {
	g.Requested = want
	opt := unix.SO_TIMESTAMPING_NEW
	g.New = true
	for {
		err := setsockoptInt(fd, unix.SOL_SOCKET, opt, int(want))
		if err == nil {
			break
		}
		switch {
		case opt == unix.SO_TIMESTAMPING_NEW && errors.Is(err, unix.ENOPROTOOPT):
			opt, g.New = unix.SO_TIMESTAMPING, false
			g.Fallbacks = append(g.Fallbacks, "SO_TIMESTAMPING_NEW unknown (kernel < 5.1): using SO_TIMESTAMPING")
			continue
		case errors.Is(err, unix.EINVAL) && want&optional != 0:
			bit := highestBit(want & optional)
			want &^= bit
			g.Fallbacks = append(g.Fallbacks, bit.String()+" rejected (EINVAL): retried without it")
			continue
		}
		return g, fmt.Errorf("tstamp: setsockopt(%s, %s): %w", optName(opt), want, err)
	}
	got, err := getTimestamping(fd, opt)
	if err != nil {
		return g, err
	}
	g.Flags = got
	return g, nil
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

// getTimestamping reads struct so_timestamping {int flags; int bind_phc;}
// (older kernels return only the int).
func getTimestamping(fd, opt int) (Flags, error) {
	var buf [8]byte
	n, err := getsockopt(fd, unix.SOL_SOCKET, opt, buf[:])
	if err != nil {
		return 0, fmt.Errorf("tstamp: getsockopt(%s): %w", optName(opt), err)
	}
	if n < 4 {
		return 0, fmt.Errorf("tstamp: getsockopt(%s) returned %d bytes, want 4 or 8", optName(opt), n)
	}
	return Flags(nativeEndian.Uint32(buf[:4])), nil
}
