package capture

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/internal/wire"
)

// frame builds an Ethernet/IPv4/UDP frame around payload, a request from
// the sender 10.0.0.1:9000 to the group 239.1.1.1:9000.
func frame(payload []byte, vlan bool) []byte {
	return frameTo(payload, vlan, [4]byte{10, 0, 0, 1}, [4]byte{239, 1, 1, 1}, 9000, 9000)
}

// replyFrame is the responder's reply 10.0.0.2:9000 → 10.0.0.1:9000.
func replyFrame(payload []byte, vlan bool) []byte {
	return frameTo(payload, vlan, [4]byte{10, 0, 0, 2}, [4]byte{10, 0, 0, 1}, 9000, 9000)
}

func frameTo(payload []byte, vlan bool, src, dst [4]byte, sport, dport uint16) []byte {
	f := make([]byte, 0, 64+len(payload))
	f = append(f, 0x01, 0x00, 0x5e, 1, 1, 1, 2, 0, 0, 0, 0, 1)
	if vlan {
		f = append(f, 0x81, 0x00, 0, 5)
	}
	f = append(f, 0x08, 0x00)
	ip := make([]byte, 20)
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(20+8+len(payload)))
	ip[8], ip[9] = 1, 17
	copy(ip[12:16], src[:])
	copy(ip[16:20], dst[:])
	f = append(f, ip...)
	udp := make([]byte, 8)
	binary.BigEndian.PutUint16(udp[0:], sport)
	binary.BigEndian.PutUint16(udp[2:], dport)
	binary.BigEndian.PutUint16(udp[4:], uint16(8+len(payload)))
	f = append(f, udp...)
	return append(f, payload...)
}

func newTestCapture(n int) *Capture {
	return &Capture{cfg: Config{Snaplen: 128, Group: netip.MustParseAddrPort("239.1.1.1:9000"), RunID: 9},
		runID: 9, recs: make([]samples.Record, n)}
}

func TestOnFramePairs(t *testing.T) {
	c := newTestCapture(10)
	b := make([]byte, 64)
	req := frame(append([]byte(nil), wire.Encode(b, 64, &wire.Header{Type: wire.Request, RunID: 9, Seq: 3})...), false)
	rep := replyFrame(append([]byte(nil), wire.Encode(b, 64, &wire.Header{Type: wire.Reply, RunID: 9, Seq: 3})...), true)
	c.onFrame(req, tstamp.Stamps{SW: 100})
	c.onFrame(rep, tstamp.Stamps{SW: 150, HW: 7})
	c.onFrame(rep, tstamp.Stamps{SW: 160})                                                                                 // duplicate
	c.onFrame(frame([]byte("hello"), false), tstamp.Stamps{SW: 1})                                                         // foreign
	c.onFrame(frame(wire.Encode(b, 64, &wire.Header{Type: wire.Request, RunID: 10, Seq: 4}), false), tstamp.Stamps{SW: 1}) // other run
	c.onFrame(req[:20], tstamp.Stamps{SW: 1})                                                                              // runt
	r := c.recs[3]
	if r.T[samples.CapReq] != 100 || r.T[samples.CapRep] != 150 || r.Flags&samples.FlagDuplicate == 0 {
		t.Fatalf("record %+v", r)
	}
	if c.cnt.Foreign != 3 || c.cnt.Duplicated != 1 || c.cnt.Received != 2 {
		t.Fatalf("counters %+v", c.cnt)
	}
	// Another arm's or round's packets of the same run, and replies that
	// go the requests' way (to the group, or not from its port), are
	// foreign: they must not take a sequence.
	c = newTestCapture(10)
	c.cfg.ArmIndex, c.cfg.Round = 1, 2
	for _, f := range [][]byte{
		frame(wire.Encode(make([]byte, 64), 64, &wire.Header{Type: wire.Request, RunID: 9, Arm: 0, Round: 2, Seq: 5}), false),
		frame(wire.Encode(make([]byte, 64), 64, &wire.Header{Type: wire.Request, RunID: 9, Arm: 1, Round: 3, Seq: 5}), false),
		frame(wire.Encode(make([]byte, 64), 64, &wire.Header{Type: wire.Reply, RunID: 9, Arm: 1, Round: 2, Seq: 5}), false),
		frameTo(wire.Encode(make([]byte, 64), 64, &wire.Header{Type: wire.Reply, RunID: 9, Arm: 1, Round: 2, Seq: 5}), false,
			[4]byte{10, 0, 0, 9}, [4]byte{10, 0, 0, 1}, 40000, 9000),
		replyFrame(wire.Encode(make([]byte, 64), 64, &wire.Header{Type: wire.Request, RunID: 9, Arm: 1, Round: 2, Seq: 5}), false),
	} {
		c.onFrame(f, tstamp.Stamps{SW: 1})
	}
	if c.cnt.Foreign != 5 || c.cnt.Received != 0 || c.recs[5].T != ([samples.NumStamps]int64{}) {
		t.Fatalf("stray frames: counters %+v, record %+v", c.cnt, c.recs[5])
	}
	c.onFrame(frame(wire.Encode(make([]byte, 64), 64, &wire.Header{Type: wire.Request, RunID: 9, Arm: 1, Round: 2, Seq: 5}), false), tstamp.Stamps{SW: 10})
	c.onFrame(replyFrame(wire.Encode(make([]byte, 64), 64, &wire.Header{Type: wire.Reply, RunID: 9, Arm: 1, Round: 2, Seq: 5}), false), tstamp.Stamps{SW: 20})
	if c.recs[5].T[samples.CapReq] != 10 || c.recs[5].T[samples.CapRep] != 20 {
		t.Fatalf("the round's own frames: %+v", c.recs[5])
	}
	// A HW capture never takes the SW stamp for a frame without HW stamp.
	h := newTestCapture(10)
	h.useHW = true
	h.onFrame(req, tstamp.Stamps{SW: 100})
	if h.recs[3].T[samples.CapReq] != 0 || h.cnt.RxStampsMissing != 1 {
		t.Fatalf("hw capture mixed clocks: %+v %+v", h.recs[3], h.cnt)
	}
}

func TestOnFrameAllocs(t *testing.T) {
	c := newTestCapture(1 << 12)
	c.cfg.PcapFrames = 1 << 12
	c.pcap.data = make([]byte, c.cfg.PcapFrames*128)
	c.pcap.meta = make([]frameMeta, c.cfg.PcapFrames)
	b := make([]byte, 64)
	f := frame(append([]byte(nil), wire.Encode(b, 64, &wire.Header{Type: wire.Request, RunID: 9})...), false)
	seq := uint64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		binary.BigEndian.PutUint64(f[14+20+8+24:], seq)
		seq++
		c.onFrame(f, tstamp.Stamps{SW: 5})
	})
	if allocs != 0 {
		t.Fatalf("one capture packet allocated %v times", allocs)
	}
}

func BenchmarkOnFrame(b *testing.B) {
	c := newTestCapture(1 << 16)
	p := make([]byte, 64)
	f := frame(append([]byte(nil), wire.Encode(p, 64, &wire.Header{Type: wire.Request, RunID: 9})...), false)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		binary.BigEndian.PutUint64(f[14+20+8+24:], uint64(i&0xffff))
		c.onFrame(f, tstamp.Stamps{SW: 5})
	}
}

func FuzzUDPPayload(f *testing.F) {
	b := make([]byte, 64)
	f.Add(frame(wire.Encode(b, 64, &wire.Header{Type: wire.Request, RunID: 1}), false))
	f.Add(frame([]byte("x"), true))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, fr []byte) {
		p, ok := udpPayload(fr)
		if ok && len(p) > len(fr) {
			t.Fatal("payload longer than frame")
		}
		c := newTestCapture(4)
		c.onFrame(fr, tstamp.Stamps{SW: 1})
	})
}

// TestNewRefusesTimestampsOff: a capture is nothing but its stamps.
func TestNewRefusesTimestampsOff(t *testing.T) {
	c, err := New(Config{Iface: "lo", Ports: []uint16{9000}, Timestamps: tstamp.Off, RunID: 1, Group: netip.MustParseAddrPort("239.1.1.1:9000")})
	if err == nil {
		c.Close()
		t.Fatal("capture with timestamps off accepted")
	}
	if !strings.Contains(err.Error(), "timestamps off") {
		t.Fatalf("error %q does not say why", err)
	}
	if !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("error %q does not wrap errors.ErrUnsupported (the CLI's exit 2)", err)
	}
	// Without a run id one stray datagram would set the run.
	if c, err := New(Config{Iface: "lo", Ports: []uint16{9000}, Timestamps: tstamp.Software, Group: netip.MustParseAddrPort("239.1.1.1:9000")}); !errors.Is(err, wire.ErrNoRunID) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("capture without a run id: %v, want wire.ErrNoRunID", err)
	}
}
