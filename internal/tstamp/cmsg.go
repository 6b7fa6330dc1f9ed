//go:build linux

package tstamp

import (
	"golang.org/x/sys/unix"
)

// Control-message constants not (all) in x/sys v0.50.0.
const (
	scmTimestampingNew = unix.SO_TIMESTAMPING_NEW // cmsg type 65
	solIPv6            = unix.SOL_IPV6
	solPacket          = unix.SOL_PACKET
	sizeofTimestamping = 48 // 3 × {int64 sec, int64 nsec}
	sizeofExtendedErr  = 16 // struct sock_extended_err
	eeErrnoENOMSG      = uint32(unix.ENOMSG)
	cmsgHdrLen         = unix.SizeofCmsghdr
)

// Stamps are the RX stamps of one packet, in ns; 0 means absent.
// SW is CLOCK_REALTIME, HW is raw PHC time.
type Stamps struct {
	SW, HW int64
}

// TxStamp is one TX timestamp read from a socket's error queue.
type TxStamp struct {
	Key    uint32 // ee_data: the OPT_ID key (see Conn.SendTo for what it means)
	Kind   Kind
	SW, HW int64 // ns; 0 = absent
}

// cmsgWalk calls fn for every well-formed control message in oob. It stops
// at the first malformed header: a short or overlong length cannot be
// stepped over safely. It reads with encoding/binary so unaligned or
// garbage buffers are fine.
func cmsgNext(b []byte) (level, typ int32, data, rest []byte, ok bool) {
	if len(b) < cmsgHdrLen {
		return 0, 0, nil, nil, false
	}
	var l uint64
	if cmsgHdrLen == 16 {
		l = nativeEndian.Uint64(b[0:8])
	} else {
		l = uint64(nativeEndian.Uint32(b[0:4]))
	}
	if l < cmsgHdrLen || l > uint64(len(b)) {
		return 0, 0, nil, nil, false
	}
	off := cmsgHdrLen - 8
	level = int32(nativeEndian.Uint32(b[off : off+4]))
	typ = int32(nativeEndian.Uint32(b[off+4 : off+8]))
	data = b[cmsgHdrLen:l]
	step := unix.CmsgSpace(int(l) - cmsgHdrLen)
	if step >= len(b) {
		rest = b[len(b):]
	} else {
		rest = b[step:]
	}
	return level, typ, data, rest, true
}

func isTimestamping(level, typ int32) bool {
	return level == unix.SOL_SOCKET && (typ == unix.SCM_TIMESTAMPING || typ == scmTimestampingNew)
}

// tsNano converts a {int64 sec, int64 nsec} at b; 0 when both are 0.
func tsNano(b []byte) int64 {
	sec := int64(nativeEndian.Uint64(b[0:8]))
	nsec := int64(nativeEndian.Uint64(b[8:16]))
	return sec*1e9 + nsec
}

func readStamps(data []byte) (sw, hw int64) {
	return tsNano(data[0:16]), tsNano(data[32:48])
}

// ParseRx extracts the RX stamps from the control messages of a recvmsg.
// It accepts SCM_TIMESTAMPING (37) and SCM_TIMESTAMPING_NEW (65), ignores
// other messages, tolerates truncated or garbage input, and does not
// allocate. ok reports whether a timestamping message was present.
func ParseRx(oob []byte) (st Stamps, ok bool) {
	for b := oob; ; {
		level, typ, data, rest, more := cmsgNext(b)
		if !more {
			return st, ok
		}
		if isTimestamping(level, typ) && len(data) >= sizeofTimestamping {
			st.SW, st.HW = readStamps(data)
			ok = true
		}
		b = rest
	}
}

// ParseErrqueue extracts one TX stamp from the control messages of a
// recvmsg(MSG_ERRQUEUE). It needs both a timestamping message (37 or 65)
// and a sock_extended_err with origin SO_EE_ORIGIN_TIMESTAMPING from
// IP_RECVERR, IPV6_RECVERR or PACKET_TX_TIMESTAMP. Entries with any other
// origin (ICMP errors) give ok=false. It tolerates truncated or garbage
// input and does not allocate.
func ParseErrqueue(oob []byte) (ts TxStamp, ok bool) {
	var haveTs, haveErr bool
	for b := oob; ; {
		level, typ, data, rest, more := cmsgNext(b)
		if !more {
			break
		}
		b = rest
		switch {
		case isTimestamping(level, typ) && len(data) >= sizeofTimestamping:
			ts.SW, ts.HW = readStamps(data)
			haveTs = true
		case isRecvErr(level, typ) && len(data) >= sizeofExtendedErr:
			errno := nativeEndian.Uint32(data[0:4])
			origin := data[4]
			if origin != unix.SO_EE_ORIGIN_TIMESTAMPING || errno != eeErrnoENOMSG {
				return TxStamp{}, false
			}
			ts.Kind = Kind(nativeEndian.Uint32(data[8:12]))
			ts.Key = nativeEndian.Uint32(data[12:16])
			haveErr = true
		}
	}
	if !haveTs || !haveErr {
		return TxStamp{}, false
	}
	return ts, true
}

func isRecvErr(level, typ int32) bool {
	switch level {
	case unix.SOL_IP:
		return typ == unix.IP_RECVERR
	case solIPv6:
		return typ == unix.IPV6_RECVERR
	case solPacket:
		return typ == unix.PACKET_TX_TIMESTAMP
	}
	return false
}
