package sender

import (
	"testing"
	"time"

	"github.com/rig-project/rig/internal/native"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
)

// TestNativeTake: a native sender's handoff is filed where the Go loop
// files what it reads, and finish counts it as it counts the Go loop's:
// received, lost, late (from the send), TX stamps missing, not sent.
func TestNativeTake(t *testing.T) {
	cfg := probe.DefaultSend()
	cfg.Count, cfg.ReplyTimeout = 5, time.Millisecond
	s := &Sender{cfg: cfg, lastSeq: -1, nat: &nativeLoop{prog: native.SendProgram}}
	s.allocate()
	s.granted = tstamp.Granted{Flags: tstamp.FlagSoftware | tstamp.FlagTxSoftware | tstamp.FlagRxSoftware}
	s.hw = tstamp.NewHWProof(s.granted, cfg.TxWait, "the sender's UDP socket", "replies", "requests")
	const ms = int64(time.Millisecond)
	rec := func(flags samples.Flags, due, txUser, txSW, rxSW, rxUser int64) samples.Record {
		r := samples.Record{Flags: flags}
		r.T[samples.Due], r.T[samples.TxUser], r.T[samples.TxSW], r.T[samples.RxSW], r.T[samples.RxUser] = due, txUser, txSW, rxSW, rxUser
		return r
	}
	h := &native.SendHandoff{Counters: samples.Counters{Sent: 4, Duplicated: 1, Foreign: 2}, Keying: tstamp.KeyPerSend, Records: []samples.Record{
		rec(samples.FlagDuplicate, 10*ms, 10*ms+1, 10*ms+2, 10*ms+50, 10*ms+60), // answered twice
		rec(0, 11*ms, 11*ms+1, 11*ms+2, 14*ms, 14*ms+10),                        // answered 3 ms after it left: late
		rec(0, 12*ms, 12*ms+1, 0, 0, 0),                                         // lost, and its TX stamp missing
		rec(0, 13*ms, 13*ms+1, 13*ms+2, 13*ms+50, 13*ms+60),
		rec(0, 14*ms, 0, 0, 0, 0), // not sent
	}}
	for i := range h.Records {
		h.Records[i].Seq = uint64(i)
	}
	s.take(h)
	s.hw.Finish()
	s.txWant = samples.TxWanted(s.granted.Software(), s.hw.TX())
	s.finish()
	want := samples.Counters{Sent: 4, Received: 3, Lost: 1, Late: 1, Duplicated: 1, Foreign: 2, TxStampsMissing: 1}
	if got := s.Counters(); got != want {
		t.Errorf("counters %+v\nwant     %+v", got, want)
	}
	out := s.Records()
	if len(out) != 5 || out[0].Flags != samples.FlagDuplicate || out[1].Flags != samples.FlagLate || out[4].Flags != samples.FlagNotSent ||
		out[3].T[samples.RxUser] != 13*ms+60 || out[3].T[samples.TxSW] != 13*ms+2 || s.lastSeq != 3 || s.keying() != tstamp.KeyPerSend {
		t.Errorf("records %+v, last %d", out, s.lastSeq)
	}
	if hd := s.Header(); hd.Settings["engine"] != "native" || hd.Settings["tx_keying"] != "SCM_TS_OPT_ID" {
		t.Errorf("settings %v", hd.Settings)
	}
}
