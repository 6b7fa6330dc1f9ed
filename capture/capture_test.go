package capture

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/probe"
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
	c := &Capture{cfg: probe.Capture{Common: probe.Common{Iface: "cap0", Group: netip.MustParseAddrPort("239.1.1.1:9000"), RunID: 9}},
		snaplen: 128, runID: 9, hw: tstamp.NewHWProof(tstamp.Granted{Mode: tstamp.Software}, 0, "the capture's socket", "frames", "")}
	c.cfg.Capacity, c.cfg.Responders = n, 1
	c.allocate()
	return c
}

// hwGrant is a capture socket granted hardware RX stamps in mode m.
func hwGrant(m tstamp.Mode) tstamp.Granted {
	return tstamp.Granted{Mode: m, Ifname: "cap0",
		Flags:    tstamp.FlagRxHardware | tstamp.FlagRawHardware | tstamp.FlagRxSoftware | tstamp.FlagSoftware,
		Decision: tstamp.Decision{Action: tstamp.ActKeep, RX: true}}
}

func newHWCapture(n int, m tstamp.Mode) *Capture {
	c := newTestCapture(n)
	c.cfg.Timestamps = m
	c.granted = hwGrant(m)
	c.hw = tstamp.NewHWProof(c.granted, 0, "the capture's socket", "frames", "")
	return c
}

func TestOnFramePairs(t *testing.T) {
	c := newTestCapture(10)
	b := make([]byte, 64)
	req := frame(append([]byte(nil), wire.Encode(b, 64, &wire.Header{Type: wire.Request, RunID: 9, Seq: 3})...), false)
	rep := replyFrame(append([]byte(nil), wire.Encode(b, 64, &wire.Header{Type: wire.Reply, RunID: 9, Seq: 3})...), true)
	c.onFrame(req, tstamp.PacketMulticast, tstamp.Stamps{SW: 100})
	c.onFrame(rep, tstamp.PacketMulticast, tstamp.Stamps{SW: 150, HW: 7})
	c.onFrame(rep, tstamp.PacketMulticast, tstamp.Stamps{SW: 160})                                                                                 // duplicate
	c.onFrame(frame([]byte("hello"), false), tstamp.PacketMulticast, tstamp.Stamps{SW: 1})                                                         // foreign
	c.onFrame(frame(wire.Encode(b, 64, &wire.Header{Type: wire.Request, RunID: 10, Seq: 4}), false), tstamp.PacketMulticast, tstamp.Stamps{SW: 1}) // other run
	c.onFrame(req[:20], tstamp.PacketMulticast, tstamp.Stamps{SW: 1})                                                                              // runt
	r := c.pair(3, 0)
	if r.T[samples.CapReqSW] != 100 || r.T[samples.CapRepSW] != 150 || r.Flags&samples.FlagDuplicate == 0 {
		t.Fatalf("record %+v", r)
	}
	if r.T[samples.CapRepHW] != 0 {
		t.Fatal("a software capture kept a NIC stamp")
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
		c.onFrame(f, tstamp.PacketMulticast, tstamp.Stamps{SW: 1})
	}
	if c.cnt.Foreign != 5 || c.cnt.Received != 0 || c.pair(5, 0).T != ([samples.NumStamps]int64{}) {
		t.Fatalf("stray frames: counters %+v, record %+v", c.cnt, c.pair(5, 0))
	}
	c.onFrame(frame(wire.Encode(make([]byte, 64), 64, &wire.Header{Type: wire.Request, RunID: 9, Arm: 1, Round: 2, Seq: 5}), false), tstamp.PacketMulticast, tstamp.Stamps{SW: 10})
	c.onFrame(replyFrame(wire.Encode(make([]byte, 64), 64, &wire.Header{Type: wire.Reply, RunID: 9, Arm: 1, Round: 2, Seq: 5}), false), tstamp.PacketMulticast, tstamp.Stamps{SW: 20})
	if c.pair(5, 0).T[samples.CapReqSW] != 10 || c.pair(5, 0).T[samples.CapRepSW] != 20 {
		t.Fatalf("the round's own frames: %+v", c.pair(5, 0))
	}
	// A hardware capture keeps both clocks in their own columns: a frame
	// without its NIC stamp still has its kernel stamp, and is counted.
	h := newHWCapture(10, tstamp.Auto)
	h.onFrame(req, tstamp.PacketMulticast, tstamp.Stamps{SW: 100})
	h.onFrame(rep, tstamp.PacketMulticast, tstamp.Stamps{SW: 150, HW: 7})
	if r := h.pair(3, 0); r.T[samples.CapReqHW] != 0 || r.T[samples.CapReqSW] != 100 || r.T[samples.CapRepHW] != 7 || r.T[samples.CapRepSW] != 150 || h.cnt.RxStampsMissing != 1 {
		t.Fatalf("hw capture: %+v %+v", h.pair(3, 0), h.cnt)
	}
	if !h.hw.RX() || h.Source() != "hw" {
		t.Fatal("a delivered hardware stamp was not kept")
	}
	ck := h.Header(0, 0).Clocks
	if ck["cap_req_hw"].Source != "hw" || ck["cap_req_sw"].Source != "sw" || ck["cap_req_sw"].Note != "" {
		t.Fatalf("clocks %+v", ck)
	}
}

// TestOutgoingDropped: a tap on a NIC this host sends on sees its own
// packets as PACKET_OUTGOING, without hardware RX stamps: never a sample.
func TestOutgoingDropped(t *testing.T) {
	c := newTestCapture(10)
	b := make([]byte, 64)
	req := frame(append([]byte(nil), wire.Encode(b, 64, &wire.Header{Type: wire.Request, RunID: 9, Seq: 3})...), false)
	c.onFrame(req, tstamp.PacketOutgoing, tstamp.Stamps{SW: 100})
	if c.pair(3, 0).T[samples.CapReqSW] != 0 || c.cnt.Outgoing != 1 || c.cnt.Received != 0 || c.Frames() != 0 {
		t.Fatalf("outgoing frame kept: %+v %+v", c.pair(3, 0), c.cnt)
	}
	c.onFrame(req, tstamp.PacketMulticast, tstamp.Stamps{SW: 100})
	if c.pair(3, 0).T[samples.CapReqSW] != 100 || c.cnt.Received != 1 {
		t.Fatalf("mirrored frame lost: %+v", c.cnt)
	}
}

// TestHardwareProof: frames that never carry the NIC's stamp drop the
// hardware columns in auto (and say so) and stop a hardware capture with
// an error naming the missing stamp.
func TestHardwareProof(t *testing.T) {
	b := make([]byte, 64)
	feed := func(c *Capture) {
		for i := 0; i < tstamp.ProofWindow+4; i++ {
			f := frame(append([]byte(nil), wire.Encode(b, 64, &wire.Header{Type: wire.Request, RunID: 9, Seq: uint64(i)})...), false)
			c.onFrame(f, tstamp.PacketMulticast, tstamp.Stamps{SW: int64(100 + i)})
		}
	}
	a := newHWCapture(64, tstamp.Auto)
	feed(a)
	if a.hw.RX() || a.hw.Err() != nil || a.Source() != "sw" {
		t.Fatalf("auto: rx %v err %v", a.hw.RX(), a.hw.Err())
	}
	h := a.Header(0, 0)
	if _, ok := h.Clocks["cap_req_hw"]; ok || !strings.Contains(h.Clocks["cap_req_sw"].Note, "the first 16 frames carried none") {
		t.Fatalf("auto header clocks %+v", h.Clocks)
	}
	if a.pair(3, 0).T[samples.CapReqSW] != 103 {
		t.Fatal("software stamps lost with the hardware column")
	}
	hw := newHWCapture(64, tstamp.Hardware)
	feed(hw)
	if err := hw.hw.Err(); !errors.Is(err, tstamp.ErrNoHardwareStamp) || !strings.Contains(err.Error(), "RX hardware stamp never came: the first 16 frames received on the capture's socket on cap0") {
		t.Fatalf("hardware: %v", err)
	}
}

// TestOnFrameAllocs: with --pcap on, a frame's copy goes to the room
// allocate made for the round.
func TestOnFrameAllocs(t *testing.T) {
	c := newTestCapture(1 << 12)
	c.cfg.Pcap = "cap.pcap"
	c.allocate()
	b := make([]byte, 64)
	f := frame(append([]byte(nil), wire.Encode(b, 64, &wire.Header{Type: wire.Request, RunID: 9})...), false)
	seq := uint64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		binary.BigEndian.PutUint64(f[14+20+8+24:], seq)
		seq++
		c.onFrame(f, tstamp.PacketMulticast, tstamp.Stamps{SW: 5})
	})
	if allocs != 0 || c.pcap.n < 1000 {
		t.Fatalf("one capture packet allocated %v times (%d frames kept for the pcap file)", allocs, c.pcap.n)
	}
}

func BenchmarkOnFrame(b *testing.B) {
	c := newTestCapture(1 << 16)
	p := make([]byte, 64)
	f := frame(append([]byte(nil), wire.Encode(p, 64, &wire.Header{Type: wire.Request, RunID: 9})...), false)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		binary.BigEndian.PutUint64(f[14+20+8+24:], uint64(i&0xffff))
		c.onFrame(f, tstamp.PacketMulticast, tstamp.Stamps{SW: 5})
	}
}

func FuzzUDPPayload(f *testing.F) {
	b := make([]byte, 64)
	f.Add(frame(wire.Encode(b, 64, &wire.Header{Type: wire.Request, RunID: 1}), false))
	f.Add(frame([]byte("x"), true))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, fr []byte) {
		p, _, ok := udpFrame(fr)
		if ok && len(p) > len(fr) {
			t.Fatal("payload longer than frame")
		}
		c := newTestCapture(4)
		c.onFrame(fr, tstamp.PacketMulticast, tstamp.Stamps{SW: 1})
	})
}

// TestNewRefusesTimestampsOff: a capture is nothing but its stamps.
func TestNewRefusesTimestampsOff(t *testing.T) {
	c, err := New(config("lo", func(c *probe.Capture) { c.Timestamps = tstamp.Off }), Options{})
	if err == nil {
		c.Close()
		t.Fatal("capture with timestamps off accepted")
	}
	if !strings.Contains(err.Error(), "timestamps off") {
		t.Fatalf("error %q does not say why", err)
	}
	if !errors.Is(err, cli.ErrUsage) {
		t.Fatalf("error %q is not a usage error (the CLI's exit 2)", err)
	}
	// Without a run id one stray datagram would set the run.
	if c, err := New(config("lo", func(c *probe.Capture) { c.RunID = 0 }), Options{}); !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), "--run-id is required") {
		if c != nil {
			c.Close()
		}
		t.Fatalf("capture without a run id: %v, want the usage error --run-id is required", err)
	}
}

// config is rig capture's command line on iface with software stamps and
// run id 9, changed by set.
func config(iface string, set func(*probe.Capture)) probe.Capture {
	c := probe.DefaultCapture()
	c.Iface, c.Timestamps, c.RunID = iface, tstamp.Software, 9
	set(&c)
	return c
}

// TestOnFrameResponders: with two responders the capture pairs each reply
// with its request under the responder's id, counts what is unpaired and
// duplicated per responder, calls an unknown id foreign, and files a frame
// of either responder without allocating.
func TestOnFrameResponders(t *testing.T) {
	c := newTestCapture(10)
	c.cfg.Responders = 2
	c.allocate()
	b := make([]byte, 64)
	req := func(seq uint64) []byte {
		return frame(append([]byte(nil), wire.Encode(b, 64, &wire.Header{Type: wire.Request, RunID: 9, Seq: seq})...), false)
	}
	rep := func(seq uint64, id uint32) []byte {
		return replyFrame(append([]byte(nil), wire.Encode(b, 64, &wire.Header{Type: wire.Reply, RunID: 9, Seq: seq, Responder: id})...), false)
	}
	c.onFrame(req(3), tstamp.PacketMulticast, tstamp.Stamps{SW: 100})
	c.onFrame(rep(3, 1), tstamp.PacketMulticast, tstamp.Stamps{SW: 170})
	c.onFrame(rep(3, 0), tstamp.PacketMulticast, tstamp.Stamps{SW: 150})
	c.onFrame(rep(3, 1), tstamp.PacketMulticast, tstamp.Stamps{SW: 180}) // duplicate
	c.onFrame(rep(3, 2), tstamp.PacketMulticast, tstamp.Stamps{SW: 190}) // no such responder
	c.onFrame(req(4), tstamp.PacketMulticast, tstamp.Stamps{SW: 200})
	c.onFrame(rep(4, 1), tstamp.PacketMulticast, tstamp.Stamps{SW: 260}) // responder 0 lost seq 4
	c.onFrame(rep(5, 0), tstamp.PacketMulticast, tstamp.Stamps{SW: 350}) // request 5 not seen
	if c.cnt.Foreign != 1 || c.cnt.Duplicated != 1 || c.cnt.Received != 6 {
		t.Fatalf("counters %+v", c.cnt)
	}
	c.countUnpaired()
	c.settlePerResponder()
	for id, want := range []samples.Counters{
		{Received: 6, Foreign: 1, Unpaired: 2},                // seq 4 (no reply), seq 5 (no request)
		{Received: 6, Foreign: 1, Unpaired: 0, Duplicated: 1}, // all paired
	} {
		if got := c.PerResponder()[id]; got != want {
			t.Errorf("responder %d: %+v, want %+v", id, got, want)
		}
	}
	var got []string
	for _, r := range c.Records() {
		got = append(got, fmt.Sprintf("%d/%d:%d-%d", r.Seq, r.Responder, r.T[samples.CapReqSW], r.T[samples.CapRepSW]))
	}
	if want := "3/0:100-150 3/1:100-170 4/0:200-0 4/1:200-260 5/0:0-350"; strings.Join(got, " ") != want {
		t.Errorf("records %s, want %s", strings.Join(got, " "), want)
	}
	if h := c.Header(0, 0); h.Responders != 2 {
		t.Errorf("header responders %d", h.Responders)
	}
	a := newTestCapture(1 << 12)
	a.cfg.Responders, a.cfg.Pcap = 3, "cap.pcap"
	a.allocate()
	f := rep(0, 0)
	k := uint64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		binary.BigEndian.PutUint64(f[14+20+8+24:], k/3)
		binary.BigEndian.PutUint32(f[14+20+8+40:], uint32(k%3))
		k++
		a.onFrame(f, tstamp.PacketMulticast, tstamp.Stamps{SW: 5})
	})
	if allocs != 0 || a.cnt.Received != k {
		t.Fatalf("one reply frame allocated %v times (%d of %d filed)", allocs, a.cnt.Received, k)
	}
}
