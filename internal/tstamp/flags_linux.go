package tstamp

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

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

// Socket families PlanFor plans for: a UDP socket's, a packet socket's.
const (
	FamilyUDP    = unix.AF_INET
	FamilyPacket = unix.AF_PACKET
)

// PlanFor is EnableWith's decision for a socket of family (FamilyUDP or
// FamilyPacket) bound to ifname ("" when unbound), with EnableWith's
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
