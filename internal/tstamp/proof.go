package tstamp

import (
	"errors"
	"fmt"
	"time"
)

// Capability bits and a config that covers the need are promises; the
// stamps on the first packets are the proof. RxProof and TxProof watch
// them so that a column is labelled hardware only when hardware stamps
// really arrived, and a run that demands them fails fast when they do
// not. Both are a few integer operations per packet and never allocate.

// ProofWindow is how many packets of one direction decide: hardware
// stamps are proven when any of them carried one, absent when none did.
const ProofWindow = 16

// Proof is the state of a hardware-stamp check.
type Proof uint8

const (
	// ProofPending: fewer than ProofWindow packets so far, none stamped.
	ProofPending Proof = iota
	// ProofDelivered: a hardware stamp arrived.
	ProofDelivered
	// ProofAbsent: ProofWindow packets (and, for TX, the stamp wait)
	// passed without a single hardware stamp.
	ProofAbsent
)

func (p Proof) String() string {
	switch p {
	case ProofPending:
		return "pending"
	case ProofDelivered:
		return "delivered"
	case ProofAbsent:
		return "absent"
	}
	return fmt.Sprintf("Proof(%d)", uint8(p))
}

// ErrNoHardwareStamp is wrapped by the errors of RxProof.Err and
// TxProof.Err: hardware stamps were demanded and did not arrive.
var ErrNoHardwareStamp = errors.New("hardware stamps never arrived")

// RxProof judges received packets: Observe each packet's HW stamp.
type RxProof struct {
	seen, stamped int
	state         Proof
}

// Observe files one received packet's hardware stamp (0 = none) and
// returns the state. The state changes at most once, away from
// ProofPending; callers act on that change.
func (p *RxProof) Observe(hw int64) Proof {
	if p.state != ProofPending {
		return p.state
	}
	p.seen++
	if hw != 0 {
		p.stamped++
		p.state = ProofDelivered
	} else if p.seen >= ProofWindow {
		p.state = ProofAbsent
	}
	return p.state
}

// State is the current state.
func (p *RxProof) State() Proof { return p.state }

// Final is the state at the end of a round: a round shorter than the
// window that saw packets and no stamp counts as absent.
func (p *RxProof) Final() Proof {
	if p.state == ProofPending && p.seen > 0 {
		return ProofAbsent
	}
	return p.state
}

// Err describes absent RX stamps, e.g. what = "requests", where = "the
// responder's UDP socket on ens1f0 (tx_type=ON rx_filter=ALL)".
func (p *RxProof) Err(what, where string) error {
	return fmt.Errorf("RX hardware stamp never came: the first %d %s received on %s carried none: %w", p.seen, what, where, ErrNoHardwareStamp)
}

// TxProof judges sent packets: call Sent after each send and Stamped when
// a hardware TX stamp arrives from the error queue. A TX stamp can arrive
// long after its packet (ConnectX-4: up to 500 ms), so absence is decided
// only once ProofWindow packets were sent and the first of them is older
// than the stamp wait.
type TxProof struct {
	Wait  time.Duration // how long a TX stamp may take (the probe's TX wait)
	first int64
	sent  int
	state Proof
}

// Sent files one send at now (ns, any clock used consistently) and returns
// the state.
func (p *TxProof) Sent(now int64) Proof {
	if p.state != ProofPending {
		return p.state
	}
	if p.sent == 0 {
		p.first = now
	}
	p.sent++
	if p.sent >= ProofWindow && now-p.first >= int64(p.Wait) {
		p.state = ProofAbsent
	}
	return p.state
}

// Stamped files the arrival of a hardware TX stamp.
func (p *TxProof) Stamped() {
	if p.state == ProofPending {
		p.state = ProofDelivered
	}
}

// State is the current state.
func (p *TxProof) State() Proof { return p.state }

// Final is the state at the end of a round, after the last stamps were
// collected: sends and no stamp count as absent.
func (p *TxProof) Final() Proof {
	if p.state == ProofPending && p.sent > 0 {
		return ProofAbsent
	}
	return p.state
}

// Err describes absent TX stamps.
func (p *TxProof) Err(what, where string) error {
	return fmt.Errorf("TX hardware stamp never came: %d %s sent on %s, none stamped within %v of the first: %w", p.sent, what, where, p.Wait, ErrNoHardwareStamp)
}

// HWProof watches the hardware stamps of one socket in both directions,
// for a probe's loop: it hands back the hardware stamp to record (0 once a
// direction is proven absent), and acts on the proof as the mode says:
// Hardware fails (Err), Auto drops the direction's hardware column and
// says why (Note). It does not allocate per packet. A nil *HWProof is a
// socket that asked for no hardware stamps.
type HWProof struct {
	mode           Mode
	rxAsk, txAsk   bool // hardware stamps were requested
	rxOn, txOn     bool
	rx             RxProof
	tx             TxProof
	where          string
	rxWhat, txWhat string
	err            error
	rxNote, txNote string
}

// NewHWProof watches a socket granted g. socket names it ("the responder's
// UDP socket"), rxWhat and txWhat its packets ("requests", "replies"),
// txWait how long a TX stamp may take.
func NewHWProof(g Granted, txWait time.Duration, socket, rxWhat, txWhat string) *HWProof {
	cfg := "config unknown"
	if g.NIC.ConfigKnown {
		cfg = g.NIC.Config.String()
	}
	return &HWProof{mode: g.Mode, rxAsk: g.HardwareRX(), txAsk: g.HardwareTX(), rxOn: g.HardwareRX(), txOn: g.HardwareTX(), tx: TxProof{Wait: txWait},
		where: fmt.Sprintf("%s on %s (%s)", socket, g.Ifname, cfg), rxWhat: rxWhat, txWhat: txWhat}
}

// RX and TX report whether hardware stamps are still expected in that
// direction (requested, and not proven absent).
func (p *HWProof) RX() bool { return p != nil && p.rxOn }
func (p *HWProof) TX() bool { return p != nil && p.txOn }

// Recv files a received packet's hardware stamp and returns the one to
// record: hw, or 0 when the direction has no hardware column.
func (p *HWProof) Recv(hw int64) int64 {
	if !p.RX() {
		return 0
	}
	if p.rx.Observe(hw) == ProofAbsent {
		p.dropRX()
		return 0
	}
	return hw
}

// Sent files a send at now (ns).
func (p *HWProof) Sent(now int64) {
	if p.TX() && p.tx.Sent(now) == ProofAbsent {
		p.dropTX()
	}
}

// TxStamp files a TX stamp's hardware part and returns the one to record.
func (p *HWProof) TxStamp(hw int64) int64 {
	if !p.TX() {
		return 0
	}
	if hw != 0 {
		p.tx.Stamped()
	}
	return hw
}

// Finish decides what is still pending at the end of a round, after the
// last TX stamps were collected.
func (p *HWProof) Finish() {
	if p == nil {
		return
	}
	if p.rxOn && p.rx.Final() == ProofAbsent {
		p.dropRX()
	}
	if p.txOn && p.tx.Final() == ProofAbsent {
		p.dropTX()
	}
}

func (p *HWProof) dropRX() {
	p.rxOn = false
	if p.mode == Hardware {
		p.err = errors.Join(p.err, p.rx.Err(p.rxWhat, p.where))
		return
	}
	p.rxNote = fmt.Sprintf("hardware RX stamps were requested on %s, but none of the first %d %s carried one: software stamps", p.where, p.rx.seen, p.rxWhat)
}

func (p *HWProof) dropTX() {
	p.txOn = false
	if p.mode == Hardware {
		p.err = errors.Join(p.err, p.tx.Err(p.txWhat, p.where))
		return
	}
	p.txNote = fmt.Sprintf("hardware TX stamps were requested on %s, but none of %d %s got one within %v: software stamps", p.where, p.tx.sent, p.txWhat, p.tx.Wait)
}

// Err is set, in Hardware mode, once a direction's stamps are proven
// absent; it wraps ErrNoHardwareStamp. The loop stops on it.
func (p *HWProof) Err() error {
	if p == nil {
		return nil
	}
	return p.err
}

// RxNote and TxNote say why a direction's hardware column was dropped
// (Auto mode), "" otherwise.
func (p *HWProof) RxNote() string {
	if p == nil {
		return ""
	}
	return p.rxNote
}

func (p *HWProof) TxNote() string {
	if p == nil {
		return ""
	}
	return p.txNote
}

// String summarizes both directions, e.g. "rx delivered, tx absent" or
// "rx not requested, tx not requested".
func (p *HWProof) String() string {
	if p == nil {
		return "rx not requested, tx not requested"
	}
	state := func(ask bool, pr Proof) string {
		if !ask {
			return "not requested"
		}
		return pr.String()
	}
	return "rx " + state(p.rxAsk, p.rx.Final()) + ", tx " + state(p.txAsk, p.tx.Final())
}
