package wire

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"
)

func TestEncodeByteExact(t *testing.T) {
	b := make([]byte, 128)
	for i := range b {
		b[i] = 0xEE // padding must be cleared
	}
	h := Header{Type: Request, RunID: 0x0102030405060708, Arm: 2, Round: 3, Seq: 0x1234, Due: 1700000000123456789}
	got := Encode(b, 64, &h)
	want, _ := hex.DecodeString("524947a7" + "01" + "01" + "0040" +
		"0102030405060708" + "00000002" + "00000003" + "0000000000001234" + "17979cfe3d85cd15" +
		"000000000000000000000000000000000000000000000000")
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
		h.Len = uint16(size)
		if d != h {
			t.Fatalf("size %d: got %+v want %+v", size, d, h)
		}
		MakeReply(p)
		if err := Decode(p, 0, &d); err != nil || d.Type != Reply || PeekSeq(p) != 77 {
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
	if err := CheckSize(39); err == nil {
		t.Error("CheckSize(39) accepted")
	}
	if err := CheckSize(1473); err == nil {
		t.Error("CheckSize(1473) accepted")
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
		MakeReply(p)
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
	f.Fuzz(func(t *testing.T, p []byte, runID uint64) {
		var h Header
		if err := Decode(p, runID, &h); err != nil {
			return
		}
		// Whatever decodes must re-encode to the same header bytes.
		out := Encode(make([]byte, len(p)), len(p), &h)
		if !bytes.Equal(out[:HeaderLen], p[:HeaderLen]) {
			t.Fatalf("re-encode differs:\n%x\n%x", out[:HeaderLen], p[:HeaderLen])
		}
	})
}
