package native

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"syscall"

	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
)

// SendHandoffVersion is the native sender's handoff version read
// (native/send.c writes it).
const SendHandoffVersion = 2

// The native sender's live page (Launch.Live): requests sent and replies
// received so far, as its loop counts them (native/send.c's LIVE_*).
const (
	LiveSent = iota
	LiveReceived
	SendLive // counters in the page
)

var sendMagic = [8]byte{'R', 'I', 'G', 'N', 'S', 'N', 'D', '\n'}

// The native sender's header fields, in file order (native/rig.h's SH_*).
const (
	shCount = iota
	shSent
	shSendErrors
	shForeign
	shMalformed
	shDuplicated
	shReordered
	shTxLate
	shLoopStart
	shLoopEnd
	shThreadOK
	shThreadWall
	shThreadCPU
	shThreadVol
	shThreadInvol
	shStopSignal
	shKeying
	shCallsRecvmsg
	shCallsSendmsg
	shCallsTxReads
	shCallsWaits
	shCallsSetsockopt
	shCallsSocket
	shFailCall // version 2: failCalls' index, 0 when the loop did not fail
	shFailErrno
	shFields
)

// failCalls name the calls whose failure ends the loop (rig.h's FAIL_*).
var failCalls = []string{"", "ppoll", "recvmsg"}

// sendStamps are the stamps of a native sender's record, in order.
var sendStamps = [...]samples.Stamp{samples.Due, samples.TxUser, samples.TxSW, samples.TxHW, samples.RxHW, samples.RxSW, samples.RxUser}

// SendHandoff is what the native sender hands back after its loop.
type SendHandoff struct {
	// Counters holds what the loop counted: sent, send errors, foreign,
	// malformed, duplicated, reordered and late TX stamps. What follows
	// from the records (received, lost, late, TX stamps missing) is the
	// caller's to compute, as the Go sender does after its loop.
	Counters           samples.Counters
	LoopStart, LoopEnd int64                // CLOCK_REALTIME ns
	Thread             *samples.ThreadUsage // nil when getrusage failed
	StopSignal         int                  // the signal that ended the loop (0: it ran out)
	Keying             tstamp.Keying
	Calls              Calls // RingOps stays 0; Waits counts ppoll and clock_nanosleep
	// Failed is why the loop stopped early when a call failed in it (nil:
	// it did not); the records are those taken until then.
	Failed error
	// Records are one per sequence of the round, in order: Seq, Flags
	// (duplicate, reordered) and the sender's stamps; Responder is 0.
	Records []samples.Record
}

// ReadSendHandoff reads a native sender's handoff. It refuses a newer
// version than it knows, a header shorter than version 2's, a count out of range, an
// unknown failed call or an errno that does not go with it, unknown
// flags, and a reply or TX stamp on a request not sent.
func ReadSendHandoff(r io.Reader) (*SendHandoff, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	f, err := readHeader(br, sendMagic, SendHandoffVersion, shFields, "sender handoff")
	if err != nil {
		return nil, err
	}
	h := &SendHandoff{LoopStart: int64(f[shLoopStart]), LoopEnd: int64(f[shLoopEnd]), StopSignal: int(f[shStopSignal]),
		Keying: tstamp.Keying(f[shKeying]),
		Counters: samples.Counters{Sent: f[shSent], SendErrors: f[shSendErrors], Foreign: f[shForeign], Malformed: f[shMalformed],
			Duplicated: f[shDuplicated], Reordered: f[shReordered], TxStampsLate: f[shTxLate]},
		Calls: Calls{Recvmsg: f[shCallsRecvmsg], Sendmsg: f[shCallsSendmsg], TxReads: f[shCallsTxReads], Waits: f[shCallsWaits],
			Setsockopt: f[shCallsSetsockopt], Socket: f[shCallsSocket]}}
	bad := func(format string, a ...any) (*SendHandoff, error) {
		return nil, fmt.Errorf("native sender handoff: "+format, a...)
	}
	switch {
	case f[shCount] == 0 || f[shCount] > maxCapacity:
		return bad("count %d, want 1..%d", f[shCount], maxCapacity)
	case f[shSent] > f[shCount]:
		return bad("%d sent of %d", f[shSent], f[shCount])
	case f[shKeying] > uint64(tstamp.KeyCounter):
		return bad("TX keying %d unknown", f[shKeying])
	case f[shStopSignal] > 64 || f[shThreadOK] > 1:
		return bad("stop signal %d, thread figures %d: out of range", f[shStopSignal], f[shThreadOK])
	case f[shFailCall] >= uint64(len(failCalls)) || (f[shFailCall] == 0) != (f[shFailErrno] == 0) || f[shFailErrno] > 4095:
		return bad("failed call %d with errno %d: unknown", f[shFailCall], f[shFailErrno])
	}
	if f[shFailCall] != 0 {
		h.Failed = fmt.Errorf("%s: %w", failCalls[f[shFailCall]], syscall.Errno(f[shFailErrno]))
	}
	if f[shThreadOK] == 1 {
		h.Thread = &samples.ThreadUsage{WallNS: int64(f[shThreadWall]), CPUNS: int64(f[shThreadCPU]),
			Voluntary: int64(f[shThreadVol]), Involuntary: int64(f[shThreadInvol])}
	}
	var raw [8 * (1 + len(sendStamps))]byte
	sent := uint64(0)
	for k := range f[shCount] {
		if _, err := io.ReadFull(br, raw[:]); err != nil {
			return bad("record %d of %d: %w", k, f[shCount], short(err))
		}
		rec := samples.Record{Seq: k, Flags: samples.Flags(binary.LittleEndian.Uint64(raw[0:]))}
		for j, s := range sendStamps {
			rec.T[s] = int64(binary.LittleEndian.Uint64(raw[8+8*j:]))
		}
		if rec.Flags&^(samples.FlagDuplicate|samples.FlagReordered) != 0 {
			return bad("record %d: unknown flags %#x", k, uint64(rec.Flags))
		}
		if rec.T[samples.TxUser] == 0 {
			for _, s := range sendStamps[2:] {
				if rec.T[s] != 0 || rec.Flags != 0 {
					return bad("record %d: a TX stamp, reply or flag on a request not sent", k)
				}
			}
		} else {
			sent++
		}
		h.Records = append(h.Records, rec)
	}
	if sent != h.Counters.Sent {
		return bad("%d records sent, the header says %d", sent, h.Counters.Sent)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return nil, errors.New("native sender handoff: bytes after the last record")
	}
	return h, nil
}

// WaitSend is Wait for the native sender (rig-send-native).
func (p *Proc) WaitSend(ctx context.Context) (*SendHandoff, error) {
	return wait(p, ctx, ReadSendHandoff)
}
