package capture

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/internal/wire"
)

// readPcap reads path back: its link type and, per frame, its stamp (ns)
// and its rig header.
func readPcap(t *testing.T, path string) (layers.LinkType, []int64, []wire.Header) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// gopacket 1.1.19's Reader.Resolution says µs for ns files: the magic
	// tells.
	var magic [4]byte
	if _, err := f.ReadAt(magic[:], 0); err != nil || binary.LittleEndian.Uint32(magic[:]) != 0xa1b23c4d {
		t.Errorf("pcap magic % x (%v), want the nanosecond one a1b23c4d", magic, err)
	}
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var ts []int64
	var hs []wire.Header
	for {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			break
		}
		p, _, ok := udpFrame(data)
		var h wire.Header
		if !ok || wire.Decode(p, 9, &h) != nil {
			t.Fatalf("frame %d is not a rig frame: % x", len(ts), data)
		}
		ts, hs = append(ts, ci.Timestamp.UnixNano()), append(hs, h)
	}
	return r.LinkType(), ts, hs
}

// TestWritePcapStamps: each frame of the pcap file carries the stamp its
// sample file's record holds: the NIC's when they were granted and came,
// else the kernel's.
func TestWritePcapStamps(t *testing.T) {
	for _, hw := range []bool{false, true} {
		c := newTestCapture(4)
		if hw {
			c = newHWCapture(4, tstamp.Hardware)
		}
		c.cfg.Pcap = "cap.pcap"
		c.allocate()
		b := make([]byte, 64)
		for seq := range uint64(3) {
			req := frame(append([]byte(nil), wire.Encode(b, 64, &wire.Header{Type: wire.Request, RunID: 9, Seq: seq})...), false)
			rep := replyFrame(append([]byte(nil), wire.Encode(b, 64, &wire.Header{Type: wire.Reply, RunID: 9, Seq: seq})...), false)
			c.onFrame(req, tstamp.PacketMulticast, tstamp.Stamps{SW: int64(1000 + seq), HW: int64(5000 + seq)})
			c.onFrame(rep, tstamp.PacketMulticast, tstamp.Stamps{SW: int64(2000 + seq), HW: int64(7000 + seq)})
		}
		c.hw.Finish()
		path := filepath.Join(t.TempDir(), "cap.pcap")
		if err := c.WritePcap(path); err != nil {
			t.Fatal(err)
		}
		lt, ts, hs := readPcap(t, path)
		if lt != layers.LinkTypeEthernet || len(ts) != 6 {
			t.Fatalf("hw %v: link type %v, %d frames, want Ethernet and 6", hw, lt, len(ts))
		}
		req, rep := samples.CapReqSW, samples.CapRepSW
		if hw {
			req, rep = samples.CapReqHW, samples.CapRepHW
		}
		recs := c.Records()
		for i, h := range hs {
			col := req
			if h.Type == wire.Reply {
				col = rep
			}
			if want := recs[h.Seq].T[col]; ts[i] != want {
				t.Errorf("hw %v: frame %d (seq %d %v) stamped %d, its record's %v is %d", hw, i, h.Seq, h.Type, ts[i], col, want)
			}
		}
		if got := c.Header(0, 0).Settings["pcap"].(map[string]any)["stamps"]; got != "cap_*_"+c.Source() {
			t.Errorf("hw %v: header says the pcap stamps are %v", hw, got)
		}
	}
}

// TestWritePcapFullDisk: a write the disk refuses is an error naming the
// file, never a short pcap file passed off as the round's.
func TestWritePcapFullDisk(t *testing.T) {
	c := newTestCapture(1 << 10)
	c.cfg.Pcap = "/dev/full"
	c.allocate()
	b := make([]byte, 64)
	for seq := range uint64(1 << 10) {
		f := frame(append([]byte(nil), wire.Encode(b, 64, &wire.Header{Type: wire.Request, RunID: 9, Seq: seq})...), false)
		c.onFrame(f, tstamp.PacketMulticast, tstamp.Stamps{SW: int64(1 + seq)})
	}
	err := c.WritePcap("/dev/full")
	if err == nil || !strings.Contains(err.Error(), "/dev/full") || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("WritePcap to a full device: %v", err)
	}
}
