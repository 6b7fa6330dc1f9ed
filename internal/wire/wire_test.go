package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func TestEncodeByteExact(t *testing.T) {
	b := make([]byte, 128)
	for i := range b {
		b[i] = 0xEE // padding must be cleared
	}
	h := Header{Type: Request, RunID: 0x0102030405060708, Arm: 2, Round: 3, Seq: 0x1234, Due: 1700000000123456789, Responder: 0x0a0b}
	got := Encode(b, 64, &h)
	want, _ := hex.DecodeString("524947a7" + "02" + "01" + "0040" +
		"0102030405060708" + "00000002" + "00000003" + "0000000000001234" + "17979cfe3d85cd15" + "00000a0b" +
		"0000000000000000000000000000000000000000")
	if !bytes.Equal(got, want) {
		t.Fatalf("encode:\n got %x\nwant %x", got, want)
	}
}

func TestRoundTrip(t *testing.T) {
	b := make([]byte, MaxSize)
	for _, size := range []int{HeaderLen, DefaultSize, 200, MaxSize} {
		h := Header{Type: Request, RunID: 42, Arm: 1, Round: 9, Seq: 77, Due: -5}
		p := Encode(b, size, &h)
		var d Header
		if err := Decode(p, 42, &d); err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		h.Len, h.Version = uint16(size), Version
		if d != h {
			t.Fatalf("size %d: got %+v want %+v", size, d, h)
		}
		MakeReply(p, 3)
		if err := Decode(p, 0, &d); err != nil || d.Type != Reply || d.Responder != 3 || d.Seq != 77 {
			t.Fatalf("reply: %v %+v", err, d)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	b := make([]byte, 64)
	good := func() []byte {
		return Encode(b, 64, &Header{Type: Request, RunID: 7, Seq: 1})
	}
	var h Header
	cases := []struct {
		name  string
		mut   func() []byte
		runID uint64
		want  error
	}{
		{"short", func() []byte { return good()[:39] }, 7, ErrShort},
		{"short v2", func() []byte { p := good()[:42]; binary.BigEndian.PutUint16(p[6:8], 42); return p }, 7, ErrShort},
		{"magic", func() []byte { p := good(); p[0] = 'X'; return p }, 7, ErrMagic},
		{"version", func() []byte { p := good(); p[4] = 9; return p }, 7, ErrVersion},
		{"type", func() []byte { p := good(); p[5] = 3; return p }, 7, ErrType},
		{"length", func() []byte { return good()[:50] }, 7, ErrLength},
		{"run id", good, 8, ErrRunID},
	}
	for _, c := range cases {
		if err := Decode(c.mut(), c.runID, &h); !errors.Is(err, c.want) {
			t.Errorf("%s: got %v want %v", c.name, err, c.want)
		}
	}
	if err := CheckSize(43); err == nil {
		t.Error("CheckSize(43) accepted")
	}
	if err := CheckSize(1473); err == nil {
		t.Error("CheckSize(1473) accepted")
	}
}

// A version 1 packet (40-byte header, no responder id), as written by
// rigs before the responder id, still decodes: responder 0, and its reply
// stays version 1.
func TestDecodeVersion1(t *testing.T) {
	p, _ := hex.DecodeString("524947a7" + "01" + "01" + "0040" +
		"0102030405060708" + "00000002" + "00000003" + "0000000000001234" + "17979cfe3d85cd15" +
		"ffffffff" + strings.Repeat("00", 20))
	var h Header
	if err := Decode(p, 0x0102030405060708, &h); err != nil {
		t.Fatal(err)
	}
	want := Header{Version: 1, Type: Request, Len: 64, RunID: 0x0102030405060708, Arm: 2, Round: 3, Seq: 0x1234, Due: 1700000000123456789}
	if h != want {
		t.Fatalf("got %+v want %+v", h, want)
	}
	MakeReply(p, 5)
	if err := Decode(p, 0, &h); err != nil || h.Type != Reply || h.Responder != 0 || p[40] != 0xff {
		t.Fatalf("v1 reply: %v %+v %x", err, h, p[40:44])
	}
	if err := Decode(p[:40], 0, &h); !errors.Is(err, ErrLength) {
		t.Fatalf("v1 40-byte packet with length 64: %v", err)
	}
}

func TestZeroAllocs(t *testing.T) {
	b := make([]byte, 64)
	h := Header{Type: Request, RunID: 1, Seq: 1}
	var d Header
	n := testing.AllocsPerRun(1000, func() {
		h.Seq++
		p := Encode(b, 64, &h)
		if Decode(p, 1, &d) != nil {
			panic("decode")
		}
		MakeReply(p, 1)
	})
	if n != 0 {
		t.Fatalf("encode+decode allocated %v times per run", n)
	}
}

func BenchmarkEncodeDecode(b *testing.B) {
	buf := make([]byte, 64)
	h := Header{Type: Request, RunID: 1}
	var d Header
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		h.Seq = uint64(i)
		p := Encode(buf, 64, &h)
		_ = Decode(p, 1, &d)
	}
}

func FuzzDecode(f *testing.F) {
	b := make([]byte, 64)
	f.Add(Encode(b, 64, &Header{Type: Request, RunID: 1, Seq: 3}), uint64(1))
	f.Add([]byte("RIG"), uint64(0))
	f.Add(make([]byte, 40), uint64(0))
	v1, _ := hex.DecodeString("524947a7010100280000000000000001000000000000000000000000000000030000000000000000")
	f.Add(v1, uint64(1))
	r := Encode(make([]byte, 44), 44, &Header{Type: Request, RunID: 2, Seq: 9})
	MakeReply(r, 7)
	f.Add(r, uint64(2))
	f.Fuzz(func(t *testing.T, p []byte, runID uint64) {
		var h Header
		if err := Decode(p, runID, &h); err != nil {
			return
		}
		if h.Version != 1 && h.Version != Version {
			t.Fatalf("decoded version %d", h.Version)
		}
		if len(p) < HeaderLen {
			return // a version 1 packet too short to re-encode as this version
		}
		// Whatever decodes must re-encode to the same header bytes (a
		// version 1 packet as this version: its padding where the id goes).
		out := Encode(make([]byte, len(p)), len(p), &h)
		want := append([]byte(nil), p[:HeaderLen]...)
		if h.Version == 1 {
			want[4] = Version
			clear(want[headerLenV1:])
		}
		if !bytes.Equal(out[:HeaderLen], want) {
			t.Fatalf("re-encode differs:\n%x\n%x", out[:HeaderLen], want)
		}
	})
}
