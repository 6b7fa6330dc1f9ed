package native

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
)

// encodeSend writes a native sender's handoff as native/send.c does.
func encodeSend(fields []uint64, recs [][8]uint64) []byte {
	var b bytes.Buffer
	b.Write(sendMagic[:])
	binary.Write(&b, binary.LittleEndian, [2]uint32{SendHandoffVersion, uint32(len(fields))})
	binary.Write(&b, binary.LittleEndian, fields)
	for _, r := range recs {
		binary.Write(&b, binary.LittleEndian, r)
	}
	return b.Bytes()
}

func validSendFields() []uint64 {
	f := make([]uint64, shFields)
	f[shCount], f[shSent], f[shForeign], f[shDuplicated], f[shReordered] = 3, 2, 4, 1, 1
	f[shThreadOK], f[shThreadWall], f[shThreadCPU], f[shKeying], f[shCallsSendmsg] = 1, 1e9, 5e8, 1, 2
	return f
}

// Records: flags, then due, tx_user, tx_sw, tx_hw, rx_hw, rx_sw, rx_user.
var validSendRecs = [][8]uint64{{1, 90, 100, 110, 0, 0, 150, 160}, {2, 190, 200, 210, 0, 0, 250, 260}, {0, 290, 0, 0, 0, 0, 0, 0}}

func TestReadSendHandoff(t *testing.T) {
	h, err := ReadSendHandoff(bytes.NewReader(encodeSend(validSendFields(), validSendRecs)))
	if err != nil {
		t.Fatal(err)
	}
	want := samples.Counters{Sent: 2, Foreign: 4, Duplicated: 1, Reordered: 1}
	if h.Counters != want || h.Keying != tstamp.KeyPerSend || h.Thread == nil || h.Thread.CPUNS != 5e8 || h.Calls.Sendmsg != 2 || len(h.Records) != 3 || h.Failed != nil {
		t.Fatalf("%+v", h)
	}
	f := validSendFields()
	f[shFailCall], f[shFailErrno] = 2, uint64(syscall.ENETDOWN)
	if h, err := ReadSendHandoff(bytes.NewReader(encodeSend(f, validSendRecs))); err != nil || !errors.Is(h.Failed, syscall.ENETDOWN) ||
		h.Failed.Error() != "recvmsg: network is down" || len(h.Records) != 3 {
		t.Errorf("a failed loop's handoff: %v, %+v", err, h)
	}
	r := h.Records[1]
	if r.Seq != 1 || r.Flags != samples.FlagReordered || r.T[samples.Due] != 190 || r.T[samples.TxUser] != 200 || r.T[samples.TxSW] != 210 ||
		r.T[samples.RxSW] != 250 || r.T[samples.RxUser] != 260 || r.T[samples.ReqRxUser] != 0 {
		t.Fatalf("record 1: %+v", r)
	}
}

func TestReadSendHandoffRefuses(t *testing.T) {
	newer := encodeSend(validSendFields(), validSendRecs)
	newer[8] = SendHandoffVersion + 1
	mod := func(f func([]uint64), recs [][8]uint64) []byte {
		fs := validSendFields()
		f(fs)
		return encodeSend(fs, recs)
	}
	same := func([]uint64) {}
	for name, c := range map[string]struct {
		b    []byte
		want string
	}{
		"responder's":   {encode(validFields(), validRecs), "bad magic"},
		"newer":         {newer, "newer than this rig reads"},
		"short header":  {encodeSend(validSendFields()[:shFields-1], nil), "header fields"},
		"no count":      {mod(func(f []uint64) { f[shCount] = 0 }, nil), "count 0"},
		"more sent":     {mod(func(f []uint64) { f[shSent] = 4 }, validSendRecs), "4 sent of 3"},
		"sent mismatch": {mod(func(f []uint64) { f[shSent] = 3 }, validSendRecs), "the header says 3"},
		"keying":        {mod(func(f []uint64) { f[shKeying] = 9 }, validSendRecs), "keying 9"},
		"truncated":     {mod(same, validSendRecs[:2]), "record 2 of 3"},
		"trailing":      {append(mod(same, validSendRecs), 0), "bytes after"},
		"flags":         {mod(same, [][8]uint64{{8, 1, 1, 0, 0, 0, 0, 0}, validSendRecs[1], validSendRecs[2]}), "unknown flags"},
		"reply unsent":  {mod(same, [][8]uint64{validSendRecs[0], validSendRecs[1], {0, 290, 0, 0, 0, 0, 0, 5}}), "not sent"},
		"version 1":     {encodeSend(validSendFields()[:shFailCall], validSendRecs), "header fields"},
		"failed call":   {mod(func(f []uint64) { f[shFailCall], f[shFailErrno] = 3, 5 }, validSendRecs), "failed call 3"},
		"no errno":      {mod(func(f []uint64) { f[shFailCall] = 1 }, validSendRecs), "failed call 1 with errno 0"},
		"errno alone":   {mod(func(f []uint64) { f[shFailErrno] = 5 }, validSendRecs), "failed call 0 with errno 5"},
	} {
		if _, err := ReadSendHandoff(bytes.NewReader(c.b)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

func FuzzReadSendHandoff(f *testing.F) {
	f.Add(encodeSend(validSendFields(), validSendRecs))
	f.Add(encodeSend(validSendFields()[:shFields-1], nil))
	failed := validSendFields()
	failed[shFailCall], failed[shFailErrno] = 1, 22
	f.Add(encodeSend(failed, validSendRecs))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ReadSendHandoff(bytes.NewReader(b))
		if err != nil {
			return
		}
		var sent uint64
		for i, r := range h.Records {
			if r.Seq != uint64(i) || r.T[samples.TxUser] == 0 && (r.T[samples.RxUser] != 0 || r.Flags != 0) {
				t.Fatalf("record %d: %+v", i, r)
			}
			if r.T[samples.TxUser] != 0 {
				sent++
			}
		}
		if h.Failed != nil && !strings.HasPrefix(h.Failed.Error(), "ppoll: ") && !strings.HasPrefix(h.Failed.Error(), "recvmsg: ") {
			t.Fatalf("failed: %v", h.Failed)
		}
		if sent != h.Counters.Sent {
			t.Fatalf("%d sent, counters %+v", sent, h.Counters)
		}
	})
}
