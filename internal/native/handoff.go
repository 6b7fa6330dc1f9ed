// Package native runs rig's native programs — measuring loops written in
// C (native/ in the repository) that rig spawns as it spawns its probes —
// and reads what they hand back: where a program is found, the line that
// says it is ready (or why it refused), and the handoff of its records
// (docs/formats.md#the-native-handoff). The sample format stays rig's: the
// caller turns a Handoff into samples.
package native

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
)

// HandoffVersion is the handoff format version read (native/handoff.c writes it).
const HandoffVersion = 1

var handoffMagic = [8]byte{'R', 'I', 'G', 'N', 'A', 'T', 'V', '\n'}

// The header's fields, in file order (native/rig.h's H_*).
const (
	hRecords = iota
	hCapacity
	hReceived
	hSent
	hDuplicated
	hForeign
	hMalformed
	hOutOfRange
	hSendErrors
	hLoopStart
	hLoopEnd
	hThreadOK
	hThreadWall
	hThreadCPU
	hThreadVol
	hThreadInvol
	hNAPIID
	hStopSignal
	hKeying
	hCallsRecvmsg
	hCallsSendmsg
	hCallsTxReads
	hCallsWaits
	hCallsRingOps
	hCallsSetsockopt
	hCallsSocket
	hFields // version 1's count; a later version may add fields after them
)

// maxFields and maxCapacity keep a damaged handoff from making the reader
// allocate wildly.
const (
	maxFields   = 1 << 12
	maxCapacity = 1 << 30
)

// recordStamps are the stamps of a handoff record, in order.
var recordStamps = [...]samples.Stamp{samples.ReqRxHW, samples.ReqRxSW, samples.ReqRxUser, samples.RepTxUser, samples.RepTxSW, samples.RepTxHW}

// Calls counts what the program asked of the kernel, through libc or its
// io_uring: the interposer tests compare them with what libc saw.
type Calls struct {
	Recvmsg    uint64 `json:"recvmsg"`      // libc recvmsg, data and error queue
	Sendmsg    uint64 `json:"sendmsg"`      // libc sendmsg
	TxReads    uint64 `json:"tx_reads"`     // error-queue reads in the loop, either way
	Waits      uint64 `json:"waits"`        // epoll_wait or io_uring_enter calls
	RingOps    uint64 `json:"ring_ops"`     // operations submitted to the io_uring
	Setsockopt uint64 `json:"setsockopt"`   // libc setsockopt
	Socket     uint64 `json:"socket_calls"` // libc socket
}

// Handoff is what the native responder hands back after its loop.
type Handoff struct {
	Capacity uint64
	// Counters holds the loop's counts; TxStampsMissing is the caller's
	// to compute (it follows the hardware-stamp proof).
	Counters           samples.Counters
	LoopStart, LoopEnd int64                // CLOCK_REALTIME ns
	Thread             *samples.ThreadUsage // nil when getrusage failed
	NAPIID             uint32               // SO_INCOMING_NAPI_ID at the end (0: none)
	StopSignal         int                  // the signal that ended the loop (0: --count or a failure)
	Keying             tstamp.Keying
	Calls              Calls
	// Records are the answered sequences in increasing order, with the
	// responder's stamps; Responder is left 0.
	Records []samples.Record
}

// ReadHandoff reads a handoff. It refuses a newer version than it knows,
// a header shorter than version 1's, and records that are not the
// header's count of increasing answered sequences within its capacity.
func ReadHandoff(r io.Reader) (*Handoff, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	f, err := readHeader(br, handoffMagic, HandoffVersion, hFields, "handoff")
	if err != nil {
		return nil, err
	}
	h := &Handoff{Capacity: f[hCapacity], LoopStart: int64(f[hLoopStart]), LoopEnd: int64(f[hLoopEnd]),
		NAPIID: uint32(f[hNAPIID]), StopSignal: int(f[hStopSignal]), Keying: tstamp.Keying(f[hKeying]),
		Counters: samples.Counters{Received: f[hReceived], Sent: f[hSent], Duplicated: f[hDuplicated], Foreign: f[hForeign],
			Malformed: f[hMalformed], OutOfRange: f[hOutOfRange], SendErrors: f[hSendErrors]},
		Calls: Calls{Recvmsg: f[hCallsRecvmsg], Sendmsg: f[hCallsSendmsg], TxReads: f[hCallsTxReads], Waits: f[hCallsWaits],
			RingOps: f[hCallsRingOps], Setsockopt: f[hCallsSetsockopt], Socket: f[hCallsSocket]}}
	switch {
	case h.Capacity == 0 || h.Capacity > maxCapacity:
		return nil, fmt.Errorf("native handoff: capacity %d, want 1..%d", h.Capacity, maxCapacity)
	case f[hRecords] > h.Capacity:
		return nil, fmt.Errorf("native handoff: %d records for a capacity of %d", f[hRecords], h.Capacity)
	case f[hKeying] > uint64(tstamp.KeyCounter):
		return nil, fmt.Errorf("native handoff: TX keying %d unknown", f[hKeying])
	case f[hStopSignal] > 64 || f[hNAPIID] > 1<<32-1 || f[hThreadOK] > 1:
		return nil, fmt.Errorf("native handoff: stop signal %d, NAPI id %d, thread figures %d: out of range", f[hStopSignal], f[hNAPIID], f[hThreadOK])
	}
	if f[hThreadOK] == 1 {
		h.Thread = &samples.ThreadUsage{WallNS: int64(f[hThreadWall]), CPUNS: int64(f[hThreadCPU]),
			Voluntary: int64(f[hThreadVol]), Involuntary: int64(f[hThreadInvol])}
	}
	var raw [8 * (2 + len(recordStamps))]byte
	for i := uint64(0); i < f[hRecords]; i++ {
		if _, err := io.ReadFull(br, raw[:]); err != nil {
			return nil, fmt.Errorf("native handoff: record %d of %d: %w", i, f[hRecords], short(err))
		}
		rec := samples.Record{Seq: binary.LittleEndian.Uint64(raw[0:]), Flags: samples.Flags(binary.LittleEndian.Uint64(raw[8:]))}
		for j, s := range recordStamps {
			rec.T[s] = int64(binary.LittleEndian.Uint64(raw[16+8*j:]))
		}
		switch {
		case rec.Seq >= h.Capacity:
			return nil, fmt.Errorf("native handoff: record %d: sequence %d beyond the capacity %d", i, rec.Seq, h.Capacity)
		case i > 0 && rec.Seq <= h.Records[i-1].Seq:
			return nil, fmt.Errorf("native handoff: record %d: sequence %d after %d", i, rec.Seq, h.Records[i-1].Seq)
		case rec.Flags&^samples.FlagDuplicate != 0:
			return nil, fmt.Errorf("native handoff: record %d: unknown flags %#x", i, uint64(rec.Flags))
		case rec.T[samples.ReqRxUser] == 0:
			return nil, fmt.Errorf("native handoff: record %d: sequence %d was never received", i, rec.Seq)
		}
		h.Records = append(h.Records, rec)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return nil, errors.New("native handoff: bytes after the last record")
	}
	return h, nil
}

// short turns an early end into io.ErrUnexpectedEOF, which says so.
func short(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
