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
// stamps are absent when none of them carried one. Where stamps come,
// proofPairs pairs of consecutive stamped packets decide: that many
// plausible pairs prove them, that many implausible ones (repeated
// stamps, stamps that disagree with the packets' software stamps) make
// them absent.
const (
	ProofWindow = 16
	proofPairs  = ProofWindow / 2
)

// PlausibleSkew bounds how far the hardware and the software stamps of
// two packets may disagree on the time between the packets. The two run
// on different clocks (PHC, CLOCK_REALTIME) whose offset is unknown, so
// only differences compare; what remains is the jitter of the NIC-to-
// stack delay (interrupt moderation, NAPI), below this. A stamp
// outside it belongs to another packet (a stale latched register) or is
// garbage.
const PlausibleSkew = time.Millisecond

// stampPair is one packet's hardware and software stamps (0: absent).
type stampPair struct{ hw, sw int64 }

// plausible reports whether b's hardware stamp, taken after a's packet's,
// is a real one: not a repeat of a's (a stale register, or a completion
// that shares its block's first stamp: mlx5 CQE compression), and, where
// both packets carry software stamps, the time between the hardware
// stamps agrees with the time between the software ones within
// PlausibleSkew. An existing hardware stamp alone proves nothing.
func plausible(a, b stampPair) bool {
	dhw := b.hw - a.hw
	if dhw == 0 {
		return false
	}
	if a.sw == 0 || b.sw == 0 {
		return true
	}
	d := dhw - (b.sw - a.sw)
	return -int64(PlausibleSkew) <= d && d <= int64(PlausibleSkew)
}

// pairs follows the stamped packets of one direction: each one after the
// first is compared with the one before (plausible).
type pairs struct {
	last      stampPair
	good, bad int // plausible and implausible pairs
}

// add files a stamped packet and returns the verdict so far: delivered
// after proofPairs plausible pairs, absent after proofPairs implausible
// ones, else pending. Most pairs must agree, not one: a compressed
// completion repeats its block's stamp, and one pair across a block's edge
// can look right.
func (q *pairs) add(hw, sw int64) Proof {
	if q.last.hw != 0 {
		if plausible(q.last, stampPair{hw, sw}) {
			q.good++
		} else {
			q.bad++
		}
	}
	q.last = stampPair{hw, sw}
	switch {
	case q.good >= proofPairs:
		return ProofDelivered
	case q.bad >= proofPairs:
		return ProofAbsent
	}
	return ProofPending
}

// final is the verdict at the end of a round: more plausible pairs than
// not, or a single stamp (nothing to compare it with: a round of one
// packet), deliver.
func (q *pairs) final() Proof {
	if q.good > q.bad || q.last.hw != 0 && q.good+q.bad == 0 {
		return ProofDelivered
	}
	return ProofAbsent
}

// missing says what came instead of a proof: none (no stamp at all), or
// stamps most of whose pairs were implausible.
func (q *pairs) missing(none string) string {
	if q.last.hw == 0 {
		return none
	}
	return fmt.Sprintf("no plausible ones (%d of %d pairs of hardware stamps repeated or disagreed with the packets' software stamps by more than %v: stale or garbage stamps)", q.bad, q.good+q.bad, PlausibleSkew)
}

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

// RxProof judges received packets: Observe each packet's stamps.
type RxProof struct {
	seen  int
	pairs pairs
	state Proof
}

// Observe files one received packet's hardware and software stamps (0 =
// none) and returns the state: absent when the window passed without a
// stamp, else as the stamped packets' pairs decide (pairs.add). The state
// changes at most once, away from ProofPending; callers act on that
// change.
func (p *RxProof) Observe(hw, sw int64) Proof {
	if p.state != ProofPending {
		return p.state
	}
	p.seen++
	if hw != 0 {
		p.state = p.pairs.add(hw, sw)
	} else if p.seen >= ProofWindow && p.pairs.last.hw == 0 {
		p.state = ProofAbsent
	}
	return p.state
}

// State is the current state.
func (p *RxProof) State() Proof { return p.state }

// Final is the state at the end of a round: a round that saw packets
// decides on the pairs it has (pairs.final).
func (p *RxProof) Final() Proof {
	if p.state != ProofPending || p.seen == 0 {
		return p.state
	}
	return p.pairs.final()
}

// Err describes absent RX stamps, e.g. what = "requests", where = "the
// responder's UDP socket on ens1f0 (tx_type=ON rx_filter=ALL)".
func (p *RxProof) Err(what, where string) error {
	return fmt.Errorf("RX hardware stamp never came: the first %d %s received on %s carried %s: %w", p.seen, what, where, p.pairs.missing("none"), ErrNoHardwareStamp)
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
	pairs pairs
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

// Stamped files a hardware TX stamp and its packet's software TX stamp
// (0 when not known yet) and returns the state, as the pairs of stamps
// decide (pairs.add).
func (p *TxProof) Stamped(hw, sw int64) Proof {
	if p.state == ProofPending {
		p.state = p.pairs.add(hw, sw)
	}
	return p.state
}

// State is the current state.
func (p *TxProof) State() Proof { return p.state }

// Final is the state at the end of a round, after the last stamps were
// collected: sends decide on the pairs of stamps they got (pairs.final).
func (p *TxProof) Final() Proof {
	if p.state != ProofPending || p.sent == 0 {
		return p.state
	}
	return p.pairs.final()
}

// Err describes absent TX stamps.
func (p *TxProof) Err(what, where string) error {
	return fmt.Errorf("TX hardware stamp never came: %d %s sent on %s, %s within %v of the first: %w", p.sent, what, where, p.pairs.missing("none stamped"), p.Wait, ErrNoHardwareStamp)
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

// Recv files a received packet's hardware and software stamps and returns
// the hardware one to record: hw, or 0 when the direction has no hardware
// column.
func (p *HWProof) Recv(hw, sw int64) int64 {
	if !p.RX() {
		return 0
	}
	if p.rx.Observe(hw, sw) == ProofAbsent {
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

// TxStamp files a TX stamp's hardware part, with its packet's software
// TX stamp where known (0 otherwise), and returns the one to record.
func (p *HWProof) TxStamp(hw, sw int64) int64 {
	if !p.TX() {
		return 0
	}
	if hw != 0 && p.tx.Stamped(hw, sw) == ProofAbsent {
		p.dropTX()
		return 0
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
	p.rxNote = fmt.Sprintf("hardware RX stamps were requested on %s, but the first %d %s carried %s: software stamps", p.where, p.rx.seen, p.rxWhat, p.rx.pairs.missing("none"))
}

func (p *HWProof) dropTX() {
	p.txOn = false
	if p.mode == Hardware {
		p.err = errors.Join(p.err, p.tx.Err(p.txWhat, p.where))
		return
	}
	p.txNote = fmt.Sprintf("hardware TX stamps were requested on %s, but %d %s got %s within %v: software stamps", p.where, p.tx.sent, p.txWhat, p.tx.pairs.missing("none"), p.tx.Wait)
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
