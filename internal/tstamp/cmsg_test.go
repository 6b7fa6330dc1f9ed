package tstamp

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"
)

// cmsg builds one control message exactly as the kernel lays it out:
// header (Len = CmsgLen(len(data))), data, zero padding to CmsgSpace.
func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, unix.CmsgSpace(len(data)))
	if cmsgHdrLen == 16 {
		nativeEndian.PutUint64(b[0:8], uint64(unix.CmsgLen(len(data))))
	} else {
		nativeEndian.PutUint32(b[0:4], uint32(unix.CmsgLen(len(data))))
	}
	nativeEndian.PutUint32(b[cmsgHdrLen-8:], uint32(level))
	nativeEndian.PutUint32(b[cmsgHdrLen-4:], uint32(typ))
	copy(b[cmsgHdrLen:], data)
	return b
}

// scmTs is struct scm_timestamping64: three {sec, nsec} pairs.
func scmTs(sw, legacy, hw [2]int64) []byte {
	b := make([]byte, 48)
	for i, t := range [][2]int64{sw, legacy, hw} {
		nativeEndian.PutUint64(b[16*i:], uint64(t[0]))
		nativeEndian.PutUint64(b[16*i+8:], uint64(t[1]))
	}
	return b
}

// extErr is struct sock_extended_err.
func extErr(errno uint32, origin uint8, info, data uint32) []byte {
	b := make([]byte, 16)
	nativeEndian.PutUint32(b[0:], errno)
	b[4] = origin
	nativeEndian.PutUint32(b[8:], info)
	nativeEndian.PutUint32(b[12:], data)
	return b
}

func cat(bs ...[]byte) []byte { return bytes.Join(bs, nil) }

var (
	tsNew  = cmsg(unix.SOL_SOCKET, 65, scmTs([2]int64{1, 2}, [2]int64{}, [2]int64{3, 4}))
	tsOld  = cmsg(unix.SOL_SOCKET, 37, scmTs([2]int64{1700000000, 123456789}, [2]int64{}, [2]int64{}))
	tsHW   = cmsg(unix.SOL_SOCKET, 65, scmTs([2]int64{}, [2]int64{}, [2]int64{55, 999999999}))
	pktinf = cmsg(unix.SOL_SOCKET, unix.SCM_TIMESTAMPING_PKTINFO, make([]byte, 8))
	eeIPv4 = cmsg(unix.SOL_IP, unix.IP_RECVERR, extErr(uint32(unix.ENOMSG), unix.SO_EE_ORIGIN_TIMESTAMPING, uint32(unix.SCM_TSTAMP_SCHED), 777777))
	eeIPv6 = cmsg(unix.SOL_IPV6, unix.IPV6_RECVERR, extErr(uint32(unix.ENOMSG), unix.SO_EE_ORIGIN_TIMESTAMPING, uint32(unix.SCM_TSTAMP_SND), 7))
	eePkt  = cmsg(unix.SOL_PACKET, unix.PACKET_TX_TIMESTAMP, extErr(uint32(unix.ENOMSG), unix.SO_EE_ORIGIN_TIMESTAMPING, 3, 0xfffffffe))
	eeICMP = cmsg(unix.SOL_IP, unix.IP_RECVERR, extErr(uint32(unix.EHOSTUNREACH), unix.SO_EE_ORIGIN_ICMP, 0, 0))
)

func TestParseRx(t *testing.T) {
	tests := []struct {
		name string
		oob  []byte
		want Stamps
		ok   bool
	}{
		{"new type 65", tsNew, Stamps{SW: 1e9 + 2, HW: 3e9 + 4}, true},
		{"old type 37 SW only", tsOld, Stamps{SW: 1700000000123456789}, true},
		{"HW only", tsHW, Stamps{HW: 55999999999}, true},
		{"pktinfo first", cat(pktinf, tsNew), Stamps{SW: 1e9 + 2, HW: 3e9 + 4}, true},
		{"pktinfo after", cat(tsHW, pktinf), Stamps{HW: 55999999999}, true},
		{"last cmsg unpadded", cat(pktinf, tsNew[:unix.CmsgLen(48)]), Stamps{SW: 1e9 + 2, HW: 3e9 + 4}, true},
		{"empty", nil, Stamps{}, false},
		{"only pktinfo", pktinf, Stamps{}, false},
		{"truncated payload", tsNew[:len(tsNew)-8], Stamps{}, false},
		{"header only", tsNew[:cmsgHdrLen], Stamps{}, false},
		{"short header", tsNew[:cmsgHdrLen-1], Stamps{}, false},
		{"wrong level", cmsg(unix.SOL_IP, 65, scmTs([2]int64{1, 2}, [2]int64{}, [2]int64{})), Stamps{}, false},
		{"other type", cmsg(unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, make([]byte, 16)), Stamps{}, false},
		{"short data", cmsg(unix.SOL_SOCKET, 65, make([]byte, 47)), Stamps{}, false},
		{"len below header", cat(lenHdr(4), tsNew), Stamps{}, false},
		{"len beyond buffer", cat(lenHdr(1000), tsNew), Stamps{}, false},
		{"garbage after good", cat(tsNew, []byte{1, 2, 3}), Stamps{SW: 1e9 + 2, HW: 3e9 + 4}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseRx(tt.oob)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("ParseRx = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// lenHdr is a cmsg header with a chosen (bad) length and nothing else.
func lenHdr(l uint64) []byte {
	b := make([]byte, cmsgHdrLen)
	if cmsgHdrLen == 16 {
		nativeEndian.PutUint64(b, l)
	} else {
		nativeEndian.PutUint32(b, uint32(l))
	}
	return b
}

func TestParseErrqueue(t *testing.T) {
	tests := []struct {
		name string
		oob  []byte
		want TxStamp
		ok   bool
	}{
		{"ipv4 sched", cat(tsNew, eeIPv4), TxStamp{Key: 777777, Kind: KindSched, SW: 1e9 + 2, HW: 3e9 + 4}, true},
		{"reverse order", cat(eeIPv4, tsOld), TxStamp{Key: 777777, Kind: KindSched, SW: 1700000000123456789}, true},
		{"ipv6 snd", cat(tsHW, eeIPv6), TxStamp{Key: 7, Kind: KindSnd, HW: 55999999999}, true},
		{"packet completion", cat(tsOld, eePkt), TxStamp{Key: 0xfffffffe, Kind: KindCompletion, SW: 1700000000123456789}, true},
		{"icmp error skipped", cat(tsOld, eeICMP), TxStamp{}, false},
		{"icmp before stamp", cat(eeICMP, tsNew, eeIPv4), TxStamp{}, false},
		{"no stamp", eeIPv4, TxStamp{}, false},
		{"no ext err", tsNew, TxStamp{}, false},
		{"wrong errno", cat(tsNew, cmsg(unix.SOL_IP, unix.IP_RECVERR, extErr(5, unix.SO_EE_ORIGIN_TIMESTAMPING, 0, 1))), TxStamp{}, false},
		{"short ext err", cat(tsNew, cmsg(unix.SOL_IP, unix.IP_RECVERR, make([]byte, 15))), TxStamp{}, false},
		{"ext err wrong level", cat(tsNew, cmsg(unix.SOL_SOCKET, unix.IP_RECVERR, extErr(uint32(unix.ENOMSG), 4, 0, 1))), TxStamp{}, false},
		{"truncated ext err", cat(tsNew, eeIPv4[:len(eeIPv4)-4]), TxStamp{}, false},
		{"empty", nil, TxStamp{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseErrqueue(tt.oob)
			if got != tt.want || ok != tt.ok {
				t.Fatalf("ParseErrqueue = %+v, %v; want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{KindSnd: "SND", KindSched: "SCHED", KindAck: "ACK", KindCompletion: "COMPLETION", 9: "Kind(9)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d) = %q, want %q", k, got, want)
		}
	}
}

func TestParseAllocs(t *testing.T) {
	rx := cat(pktinf, tsNew)
	eq := cat(tsNew, eeIPv4)
	var sink int64
	if n := testing.AllocsPerRun(1000, func() {
		st, _ := ParseRx(rx)
		ts, _ := ParseErrqueue(eq)
		sink += st.SW + ts.SW
	}); n != 0 {
		t.Fatalf("ParseRx+ParseErrqueue: %v allocs per run, want 0", n)
	}
	_ = sink
}

// reference parses with x/sys (allocating) for differential fuzzing.
func referenceRx(oob []byte) (Stamps, bool, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return Stamps{}, false, false
	}
	var st Stamps
	ok := false
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && (m.Header.Type == 37 || m.Header.Type == 65) && len(m.Data) >= 48 {
			st.SW, st.HW = readStamps(m.Data)
			ok = true
		}
	}
	return st, ok, true
}

func FuzzParseRx(f *testing.F) {
	for _, s := range [][]byte{tsNew, tsOld, cat(pktinf, tsNew), tsNew[:20], cat(lenHdr(3), tsNew), nil, cat(tsNew, tsHW)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, oob []byte) {
		st, ok := ParseRx(oob)
		if !ok && st != (Stamps{}) {
			t.Fatalf("stamps %+v without ok", st)
		}
		if rst, rok, valid := referenceRx(oob); valid && (rst != st || rok != ok) {
			t.Fatalf("ParseRx = %+v,%v; x/sys reference = %+v,%v", st, ok, rst, rok)
		}
	})
}

func FuzzParseErrqueue(f *testing.F) {
	for _, s := range [][]byte{cat(tsNew, eeIPv4), cat(eeIPv6, tsHW), cat(tsOld, eePkt), cat(tsOld, eeICMP), eeIPv4, cat(tsNew, eeIPv4)[:60]} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, oob []byte) {
		ts, ok := ParseErrqueue(oob)
		if !ok && ts != (TxStamp{}) {
			t.Fatalf("stamp %+v without ok", ts)
		}
		if ok {
			// A timestamping message must be present for ok.
			if _, rxOK := ParseRx(oob); !rxOK {
				t.Fatalf("ok without a timestamping message")
			}
		}
	})
}

func BenchmarkParseRx(b *testing.B) {
	oob := cat(pktinf, tsNew)
	b.ReportAllocs()
	for b.Loop() {
		ParseRx(oob)
	}
}

func BenchmarkParseErrqueue(b *testing.B) {
	oob := cat(tsNew, eeIPv4)
	b.ReportAllocs()
	for b.Loop() {
		ParseErrqueue(oob)
	}
}
