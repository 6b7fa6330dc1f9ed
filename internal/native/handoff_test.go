package native

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
)

// encode writes a handoff as native/handoff.c does: fields (hFields of
// them unless given more) and records of seq, flags and the six stamps.
func encode(fields []uint64, recs [][8]uint64) []byte {
	var b bytes.Buffer
	b.Write(handoffMagic[:])
	binary.Write(&b, binary.LittleEndian, [2]uint32{HandoffVersion, uint32(len(fields))})
	binary.Write(&b, binary.LittleEndian, fields)
	for _, r := range recs {
		binary.Write(&b, binary.LittleEndian, r)
	}
	return b.Bytes()
}

func validFields() []uint64 {
	f := make([]uint64, hFields)
	f[hRecords], f[hCapacity], f[hReceived], f[hSent], f[hForeign] = 2, 10, 3, 2, 4
	f[hThreadOK], f[hThreadWall], f[hThreadCPU], f[hThreadInvol] = 1, 1e9, 5e8, 7
	f[hKeying], f[hNAPIID], f[hStopSignal], f[hCallsRecvmsg], f[hCallsSendmsg] = 2, 259, 15, 9, 2
	return f
}

var validRecs = [][8]uint64{{1, 0, 0, 100, 110, 120, 130, 0}, {4, 1, 0, 200, 210, 220, 0, 0}}

func TestReadHandoff(t *testing.T) {
	h, err := ReadHandoff(bytes.NewReader(encode(validFields(), validRecs)))
	if err != nil {
		t.Fatal(err)
	}
	c := h.Counters
	if h.Capacity != 10 || c.Received != 3 || c.Sent != 2 || c.Foreign != 4 || h.Keying != tstamp.KeyCounter || h.NAPIID != 259 ||
		h.StopSignal != 15 || h.Calls.Recvmsg != 9 || h.Calls.Sendmsg != 2 {
		t.Errorf("header read as %+v", h)
	}
	if h.Thread == nil || h.Thread.WallNS != 1e9 || h.Thread.CPUNS != 5e8 || h.Thread.Involuntary != 7 {
		t.Errorf("thread %+v", h.Thread)
	}
	r := h.Records
	if len(r) != 2 || r[0].Seq != 1 || r[0].T[samples.ReqRxSW] != 100 || r[0].T[samples.RepTxSW] != 130 || r[1].Seq != 4 ||
		r[1].Flags != samples.FlagDuplicate || r[1].T[samples.RepTxUser] != 220 {
		t.Errorf("records %+v", r)
	}
	// A later version's extra header fields are skipped.
	if h, err := ReadHandoff(bytes.NewReader(encode(append(validFields(), 42, 43), validRecs))); err != nil || len(h.Records) != 2 {
		t.Errorf("extra fields: %v", err)
	}
}

// TestReadHandoffFromProgram reads a handoff rig-respond-native wrote (5
// requests on loopback, software stamps): the file the program writes is
// the one the reader reads.
func TestReadHandoffFromProgram(t *testing.T) {
	b, err := os.ReadFile("testdata/handoff-v1.bin")
	if err != nil {
		t.Fatal(err)
	}
	h, err := ReadHandoff(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Records) != 5 || h.Counters.Sent != 5 || h.Counters.Foreign != 2 || h.Keying != tstamp.KeyPerSend || h.Thread == nil {
		t.Fatalf("%+v", h)
	}
	for _, r := range h.Records {
		for _, s := range []samples.Stamp{samples.ReqRxSW, samples.ReqRxUser, samples.RepTxUser, samples.RepTxSW} {
			if r.T[s] == 0 {
				t.Errorf("seq %d lacks %s", r.Seq, s)
			}
		}
	}
}

func TestReadHandoffRefuses(t *testing.T) {
	good := encode(validFields(), validRecs)
	with := func(i int, v uint64) []byte { f := validFields(); f[i] = v; return encode(f, validRecs) }
	for name, c := range map[string]struct {
		b    []byte
		want string
	}{
		"empty":          {nil, "unexpected EOF"},
		"magic":          {append([]byte("RIGSMPL\n"), good[8:]...), "bad magic"},
		"newer":          {append(append(append([]byte{}, good[:8]...), 2, 0, 0, 0), good[12:]...), "version 2 is newer"},
		"few fields":     {encode(validFields()[:hFields-1], nil), "header fields"},
		"truncated":      {good[:len(good)-1], "record 1 of 2: unexpected EOF"},
		"trailing":       {append(append([]byte{}, good...), 0), "bytes after the last record"},
		"capacity":       {with(hCapacity, 0), "capacity 0"},
		"count":          {with(hRecords, 11), "11 records for a capacity of 10"},
		"keying":         {with(hKeying, 3), "TX keying 3"},
		"beyond":         {encode(validFields(), [][8]uint64{{10, 0, 0, 0, 1}, {11, 0, 0, 0, 1}}), "beyond the capacity"},
		"order":          {encode(validFields(), [][8]uint64{{4, 0, 0, 0, 1}, {4, 0, 0, 0, 1}}), "sequence 4 after 4"},
		"flags":          {encode(validFields(), [][8]uint64{{1, 2, 0, 0, 1}, {4, 0, 0, 0, 1}}), "unknown flags 0x2"},
		"never received": {encode(validFields(), [][8]uint64{{1, 0, 0, 0, 0}, {4, 0, 0, 0, 1}}), "never received"},
	} {
		if _, err := ReadHandoff(bytes.NewReader(c.b)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// FuzzReadHandoff: any input gives a handoff or an error, and a handoff
// holds what the format promises.
func FuzzReadHandoff(f *testing.F) {
	f.Add(encode(validFields(), validRecs))
	if b, err := os.ReadFile("testdata/handoff-v1.bin"); err == nil {
		f.Add(b)
	}
	f.Add(encode(validFields()[:hFields-1], nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ReadHandoff(bytes.NewReader(b))
		if err != nil {
			return
		}
		for i, r := range h.Records {
			if r.Seq >= h.Capacity || i > 0 && r.Seq <= h.Records[i-1].Seq || r.T[samples.ReqRxUser] == 0 {
				t.Fatalf("record %d: %+v", i, r)
			}
		}
	})
}

func TestParseReady(t *testing.T) {
	r, err := ParseReady("ready tid=123 ts_flags=0x2089a ts_old=1 ts_dropped=0x20000 ts_assumed=0 rcvbuf=16777216 mlockall=12 later=x")
	want := Ready{TID: 123, RcvBuf: 16777216, MlockAll: syscall.ENOMEM, Remainder: "later=x",
		TS: tstamp.SetResult{Flags: 0x2089a, Old: true, Dropped: tstamp.FlagOptRxFilter}}
	if err != nil || r != want {
		t.Fatalf("%+v, %v\nwant %+v", r, err, want)
	}
	if r, err := ParseReady("ready tid=1 ts_flags=0 ts_old=0 ts_dropped=0 ts_assumed=0 rcvbuf=0 mlockall=0 presence=no"); err != nil || r.Presence != "no" {
		t.Errorf("presence: %+v, %v", r, err)
	}
	const base = "ready tid=1 ts_flags=0 ts_old=0 ts_dropped=0 ts_assumed=0 rcvbuf=0 mlockall=0 "
	for line, want := range map[string]Ready{"accelerated=yes stack=rig id=0": {Accelerated: "yes", FdStack: "rig"},
		"accelerated=yes stack=- id=3": {Accelerated: "yes", FdStack: "-", FdStackID: 3}, "accelerated=no": {Accelerated: "no"},
		"accelerated=absent": {Accelerated: "absent"}, "accelerated=error:22": {Accelerated: "error:22"}} {
		want.TID = 1
		if r, err := ParseReady(base + line); err != nil || r != want {
			t.Errorf("%s: %+v, %v", line, r, err)
		}
	}
	for _, bad := range []string{"accelerated=yes", "accelerated=no stack=x id=1", "accelerated=yes stack=x", "accelerated=maybe",
		"accelerated=error:", "accelerated=error:x", "accelerated=no accelerated=no", "accelerated=yes stack=x id=1 id=2", "accelerated=yes stack= id=1"} {
		if _, err := ParseReady(base + bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	for _, bad := range []string{"", "ready tid=1 ts_flags=0 ts_old=0 ts_dropped=0 ts_assumed=0 rcvbuf=0 mlockall=0 presence=maybe",
		"ready tid=1 ts_flags=0 ts_old=0 ts_dropped=0 ts_assumed=0 rcvbuf=0 mlockall=0 presence=yes presence=yes", "refused x", "ready tid=1", "ready tid=1 tid=2 ts_flags=0 ts_old=0 ts_dropped=0 ts_assumed=0 rcvbuf=0 mlockall=0",
		"ready tid=x ts_flags=0 ts_old=0 ts_dropped=0 ts_assumed=0 rcvbuf=0 mlockall=0", "ready tid=1 ts_flags=0 ts_old=2 ts_dropped=0 ts_assumed=0 rcvbuf=0 mlockall=0",
		"ready tid ts_flags=0"} {
		if _, err := ParseReady(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	var ref *Refusal
	if err := lineErr("p", "refused poll io-uring: no"); !errors.As(err, &ref) || !errors.Is(err, errors.ErrUnsupported) || err.Error() != "poll io-uring: no" {
		t.Errorf("refused line: %v", err)
	}
	if err := lineErr("p", "failed recvmsg: EBADF"); err == nil || err.Error() != "p: recvmsg: EBADF" || errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("failed line: %v", err)
	}
}

// FuzzParseReady: a line parses or is refused; a parsed one has every field.
func FuzzParseReady(f *testing.F) {
	f.Add("ready tid=123 ts_flags=0x2089a ts_old=0 ts_dropped=0 ts_assumed=0 rcvbuf=2000000 mlockall=0")
	f.Add("ready tid=1")
	f.Add("ready tid=1 ts_flags=0 ts_old=0 ts_dropped=0 ts_assumed=0 rcvbuf=0 mlockall=0 presence=yes")
	f.Add("ready tid=1 ts_flags=0 ts_old=0 ts_dropped=0 ts_assumed=0 rcvbuf=0 mlockall=0 accelerated=yes stack=rig id=2")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseReady(s)
		if err != nil {
			return
		}
		for _, k := range readyKeys {
			if !strings.Contains(s, k+"=") {
				t.Fatalf("%q parsed as %+v without %s", s, r, k)
			}
		}
	})
}

// TestFind: the program beside rig, or as make dist names it; missing, an
// error naming where it looked and how to build it.
func TestFind(t *testing.T) {
	dir := t.TempDir()
	if _, err := find(dir, "rig-x"); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "make build") || !strings.Contains(err.Error(), dir+"/rig-x") {
		t.Errorf("missing: %v", err)
	}
	dist := dir + "/rig-x-linux-" + runtime.GOARCH
	os.WriteFile(dist, []byte("#!/bin/sh\n"), 0o755)
	if p, err := find(dir, "rig-x"); err != nil || p != dist {
		t.Errorf("dist name: %q, %v", p, err)
	}
	os.WriteFile(dir+"/rig-x", []byte("not executable"), 0o644)
	if p, err := find(dir, "rig-x"); err != nil || p != dist {
		t.Errorf("a file that is not executable was taken: %q, %v", p, err)
	}
	os.Chmod(dir+"/rig-x", 0o755)
	if p, err := find(dir, "rig-x"); err != nil || p != dir+"/rig-x" {
		t.Errorf("plain name: %q, %v", p, err)
	}
	t.Setenv(EnvDir, dir)
	if p, err := Find("rig-x"); err != nil || p != dir+"/rig-x" {
		t.Errorf("%s: %q, %v", EnvDir, p, err)
	}
}
