package responder

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rig-project/rig/internal/testbin"
	"github.com/rig-project/rig/internal/wire"
)

// wireCheck is the native engine's wire codec behind a pipe
// (native/test/wirecheck.c, built under ASan and UBSan): Go encodes, it
// decodes and answers, Go compares with its own.
type wireCheck struct {
	in  io.Writer
	out *bufio.Reader
}

var (
	wireOnce sync.Once
	wireC    *wireCheck
	wireErr  error
)

// startWireCheck starts the checker once per process: the one
// testbin.Native builds, or $RIG_WIRE_CHECK (a command line: the arm64
// build under qemu-user, in .ci/test-arm64.sh).
func startWireCheck(t testing.TB) *wireCheck {
	argv := strings.Fields(os.Getenv("RIG_WIRE_CHECK"))
	if len(argv) == 0 {
		argv = []string{filepath.Join(testbin.Native(t), "rig-wire-check")}
	}
	wireOnce.Do(func() {
		cmd := exec.Command(argv[0], argv[1:]...)
		in, err := cmd.StdinPipe()
		if err != nil {
			wireErr = err
			return
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			wireErr = err
			return
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		wireC, wireErr = &wireCheck{in: in, out: bufio.NewReader(out)}, cmd.Start()
	})
	if wireErr != nil {
		t.Fatal(wireErr)
	}
	return wireC
}

// verdicts are wire.Decode's results in the order of native/rig.h's enum wire_err.
var verdicts = []error{nil, wire.ErrShort, wire.ErrMagic, wire.ErrVersion, wire.ErrType, wire.ErrLength, wire.ErrRunID}

// check has the native codec decode b for runID and compares its
// verdict, its foreign-or-malformed count, the header and the reply with
// wire.Decode, Responder.countBad and wire.MakeReply.
func (w *wireCheck) check(runID uint64, b []byte) error {
	var pre [12]byte
	binary.LittleEndian.PutUint64(pre[:], runID)
	binary.LittleEndian.PutUint32(pre[8:], uint32(len(b)))
	if _, err := w.in.Write(append(pre[:], b...)); err != nil {
		return fmt.Errorf("writing to rig-wire-check: %w", err)
	}
	var got [2]byte
	if _, err := io.ReadFull(w.out, got[:]); err != nil {
		return fmt.Errorf("rig-wire-check died (a sanitizer report is on stderr): %w", err)
	}
	var h wire.Header
	err := wire.Decode(b, runID, &h)
	want := 0
	for i, v := range verdicts {
		if err == v {
			want = i
		}
	}
	if int(got[0]) != want {
		return fmt.Errorf("run %#x, % x: native verdict %d, Go's %v", runID, b, got[0], err)
	}
	if err != nil {
		var r Responder
		r.countBad(err)
		if (got[1] == 1) != (r.cnt.Foreign == 1) {
			return fmt.Errorf("% x: native counts it foreign=%d, Go %+v", b, got[1], r.cnt)
		}
		return nil
	}
	nh := make([]byte, 40+len(b))
	if _, err := io.ReadFull(w.out, nh); err != nil {
		return err
	}
	le := binary.LittleEndian
	n := wire.Header{Version: nh[0], Type: wire.Type(nh[1]), Len: le.Uint16(nh[2:]), RunID: le.Uint64(nh[4:]), Arm: le.Uint32(nh[12:]),
		Round: le.Uint32(nh[16:]), Seq: le.Uint64(nh[20:]), Due: int64(le.Uint64(nh[28:])), Responder: le.Uint32(nh[36:])}
	if n != h {
		return fmt.Errorf("% x: native header %+v, Go's %+v", b, n, h)
	}
	reply := append([]byte(nil), b...)
	wire.MakeReply(reply, 0xA1B2C3D4)
	if !bytes.Equal(nh[40:], reply) {
		return fmt.Errorf("% x: native reply % x, Go's % x", b, nh[40:], reply)
	}
	return nil
}

// TestWireCrossCheck: the native engine reads, counts and answers wire
// format 2 (and 1) exactly as the Go engine does, over requests, replies
// and 100 000 damaged or foreign datagrams.
func TestWireCrossCheck(t *testing.T) {
	w := startWireCheck(t)
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, wire.MaxSize+64)
	for i := range 100_000 {
		h := wire.Header{Type: wire.Type(1 + rng.IntN(2)), RunID: rng.Uint64(), Arm: rng.Uint32(), Round: rng.Uint32(),
			Seq: rng.Uint64(), Due: rng.Int64(), Responder: rng.Uint32()}
		size := wire.HeaderLen + rng.IntN(64)
		if i%100 == 0 {
			size = wire.MaxSize
		}
		b := append([]byte(nil), wire.Encode(buf, size, &h)...)
		runID := h.RunID
		switch rng.IntN(9) {
		case 0: // as it came
		case 1:
			b[4] = 1 // version 1
		case 2:
			b[rng.IntN(min(48, len(b)))] ^= byte(1 + rng.IntN(255))
		case 3:
			b = b[:rng.IntN(len(b))]
		case 4:
			b = append(b, byte(rng.Uint32()))
		case 5:
			b[4] = byte(rng.Uint32())
		case 6:
			b[5] = byte(rng.Uint32())
		case 7:
			runID = rng.Uint64() // another run's
		case 8:
			runID = 0 // any run
		}
		if err := w.check(runID, b); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
	}
}

// FuzzWireCrossCheck: for any datagram and run id, the native codec and
// Go's agree (the native one under ASan and UBSan).
func FuzzWireCrossCheck(f *testing.F) {
	w := startWireCheck(f) // built before the fuzzing starts: a build inside an input counts as a hang
	buf := make([]byte, 128)
	f.Add(uint64(7), append([]byte(nil), wire.Encode(buf, 64, &wire.Header{Type: wire.Request, RunID: 7, Seq: 3})...))
	f.Add(uint64(0), append([]byte(nil), wire.Encode(buf, 44, &wire.Header{Type: wire.Reply, RunID: 9, Responder: 2})...))
	f.Add(uint64(1), []byte("RIG\xa7\x01\x01\x00\x28"))
	f.Fuzz(func(t *testing.T, runID uint64, b []byte) {
		if len(b) > 1<<16-1 {
			return
		}
		if err := w.check(runID, b); err != nil {
			t.Fatal(err)
		}
	})
}
