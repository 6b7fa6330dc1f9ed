package tstamp

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// TxKinds is the set of TX stamps a TxTable waits for.
type TxKinds uint8

const (
	WantSW    TxKinds = 1 << iota // SND software stamp
	WantHW                        // SND hardware stamp
	WantSched                     // SCHED (qdisc entry) software stamp
)

// TxKindsFor derives what to wait for from what Enable granted.
func TxKindsFor(g Granted) TxKinds {
	var k TxKinds
	if g.Flags&(FlagTxSoftware|FlagSoftware) == FlagTxSoftware|FlagSoftware {
		k |= WantSW
	}
	if g.HardwareTX() {
		k |= WantHW
	}
	if g.Flags&(FlagTxSched|FlagSoftware) == FlagTxSched|FlagSoftware {
		k |= WantSched
	}
	return k
}

// DefaultTxWait is how long a TX stamp may take: ConnectX-4 has delivered
// stamps up to 500 ms late.
const DefaultTxWait = 500 * time.Millisecond

// TxEntry is the outcome for one sent key. Stamps are ns, 0 = missing.
type TxEntry struct {
	Key   uint32
	Sent  int64 // the caller's clock at Sent
	SW    int64 // SND software stamp (CLOCK_REALTIME)
	HW    int64 // SND hardware stamp (PHC)
	Sched int64 // SCHED software stamp (CLOCK_REALTIME)
	// Missing lists the wanted stamps that had not arrived by the deadline.
	Missing TxKinds
}

// TxStats counts what happened to stamps. All counters only grow.
type TxStats struct {
	Sent       uint64 // keys registered
	Recorded   uint64 // stamps stored in time
	Complete   uint64 // entries that got every wanted stamp
	Missing    uint64 // wanted stamps absent at the deadline (one per kind)
	Late       uint64 // stamps for a known key after its deadline (dropped)
	Duplicate  uint64 // second stamp of the same kind for a key (dropped)
	Unknown    uint64 // stamps for keys never sent or long gone (dropped)
	Unwanted   uint64 // stamp kinds not asked for (ACK, COMPLETION, …)
	Overflowed uint64 // Sent calls refused because the table was full
}

// ErrTxTableFull is returned by Sent when the key would overwrite an entry
// that is still waiting: the table is smaller than (wait / send interval),
// or Next is not being called.
var ErrTxTableFull = errors.New("tstamp: TX table full: entry for an older key still pending")

// ErrKeyOrder is returned by Sent for a key not after the previous one.
var ErrKeyOrder = errors.New("tstamp: TX table keys must increase")

type txSlot struct {
	state uint8   // slotEmpty, slotPending, slotDone
	have  TxKinds // stamps recorded so far
	TxEntry
	deadline int64
}

const (
	slotEmpty uint8 = iota
	slotPending
	slotDone
)

// TxTable matches TX stamps to sequence keys. The sender registers each key
// with Sent, the error-queue reader calls Record for every stamp, and the
// consumer calls Next to take entries in key order once they are complete or
// their deadline (Sent time + wait) has passed. A stamp counts only if it is
// recorded by its deadline, so results do not depend on how often Next runs.
//
// It is a ring of preallocated slots indexed by key modulo capacity; no
// method allocates and none panics on any input. It is safe for concurrent
// use (one mutex; the critical sections are a few dozen ns).
//
// Times passed to Sent, Record and Next are the caller's clock in ns; use one
// clock consistently (e.g. time.Now().UnixNano()).
type TxTable struct {
	mu      sync.Mutex
	slots   []txSlot
	want    TxKinds
	wait    int64
	started bool
	first   uint32 // first key ever registered
	head    uint32 // oldest key not yet returned by Next
	tail    uint32 // last registered key + 1
	stats   TxStats
}

// NewTxTable makes a table for capacity keys in flight that waits up to
// wait (0 = DefaultTxWait) for the wanted stamps. Size capacity to at least
// 2 × wait / send interval. want must not be empty.
func NewTxTable(capacity int, wait time.Duration, want TxKinds) (*TxTable, error) {
	if capacity <= 0 || capacity > 1<<24 {
		return nil, fmt.Errorf("tstamp: TX table capacity %d out of range 1..%d", capacity, 1<<24)
	}
	if wait < 0 {
		return nil, fmt.Errorf("tstamp: TX table wait %v is negative", wait)
	}
	if wait == 0 {
		wait = DefaultTxWait
	}
	if want == 0 || want&^(WantSW|WantHW|WantSched) != 0 {
		return nil, fmt.Errorf("tstamp: TX table: invalid wanted stamp set %#x", want)
	}
	return &TxTable{slots: make([]txSlot, capacity), want: want, wait: int64(wait)}, nil
}

// Sent registers key as sent at now. Keys must increase (uint32
// wrap-around is fine); gaps are allowed. Errors: ErrKeyOrder,
// ErrTxTableFull (the key is not registered and counts as Overflowed).
func (t *TxTable) Sent(key uint32, now int64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.started {
		t.started, t.first, t.head, t.tail = true, key, key, key
	}
	if int32(key-t.tail) < 0 {
		return ErrKeyOrder
	}
	capacity := uint32(len(t.slots))
	if key-t.head >= capacity {
		// Entries older than key-capacity can only be ones still pending
		// (or gaps); refuse rather than lose them silently.
		if t.hasPending(t.head, key-capacity+1) {
			t.stats.Overflowed++
			return ErrTxTableFull
		}
		t.head = key - capacity + 1
	}
	s := &t.slots[key%capacity]
	s.state = slotPending
	s.have = 0
	s.TxEntry = TxEntry{Key: key, Sent: now}
	s.deadline = now + t.wait
	t.tail = key + 1
	t.stats.Sent++
	return nil
}

// hasPending reports whether a key in [from, to) is still pending.
func (t *TxTable) hasPending(from, to uint32) bool {
	capacity := uint32(len(t.slots))
	if to-from > capacity {
		to = from + capacity
	}
	for k := from; k != to; k++ {
		s := &t.slots[k%capacity]
		if s.state == slotPending && s.Key == k {
			return true
		}
	}
	return false
}

// Record stores one TX stamp received at now. Stamps for unknown keys,
// after the deadline, duplicated, or of unwanted kinds are dropped and
// counted. It never fails.
func (t *TxTable) Record(st TxStamp, now int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var kinds TxKinds
	switch st.Kind {
	case KindSnd:
		if st.SW > 0 {
			kinds |= WantSW
		}
		if st.HW > 0 {
			kinds |= WantHW
		}
	case KindSched:
		if st.SW > 0 {
			kinds |= WantSched
		}
	}
	kinds &= t.want
	if kinds == 0 {
		t.stats.Unwanted++
		return
	}
	capacity := uint32(len(t.slots))
	s := &t.slots[st.Key%capacity]
	if !t.started || int32(st.Key-t.tail) >= 0 || int32(st.Key-t.first) < 0 {
		t.stats.Unknown++ // never sent
		return
	}
	if s.state == slotEmpty || s.Key != st.Key {
		if int32(st.Key-t.head) < 0 {
			t.stats.Late++ // its slot has been reused since
		} else {
			t.stats.Unknown++ // a gap key that was never registered
		}
		return
	}
	if s.state == slotDone || now > s.deadline {
		t.stats.Late++
		return
	}
	if s.have&kinds != 0 {
		t.stats.Duplicate++
		return
	}
	if kinds&WantSW != 0 {
		s.SW = st.SW
	}
	if kinds&WantHW != 0 {
		s.HW = st.HW
	}
	if kinds&WantSched != 0 {
		s.Sched = st.SW
	}
	s.have |= kinds
	t.stats.Recorded++
}

// Next returns the oldest registered entry once it has every wanted stamp
// or its deadline has passed at now, and removes it from the wait. Entries
// come out in key order; ok is false when the oldest is still waiting or
// nothing is registered. Missing in the returned entry lists the stamps that
// did not arrive in time.
func (t *TxTable) Next(now int64) (e TxEntry, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	capacity := uint32(len(t.slots))
	for t.started && t.head != t.tail {
		s := &t.slots[t.head%capacity]
		if s.state != slotPending || s.Key != t.head {
			t.head++ // gap: key never registered
			continue
		}
		have := s.have
		if have != t.want && now <= s.deadline {
			return TxEntry{}, false
		}
		s.state = slotDone
		e = s.TxEntry
		e.Missing = t.want &^ have
		t.stats.Missing += uint64(popcount(uint8(e.Missing)))
		if e.Missing == 0 {
			t.stats.Complete++
		}
		t.head++
		return e, true
	}
	return TxEntry{}, false
}

// Stats returns a snapshot of the counters.
func (t *TxTable) Stats() TxStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stats
}

// Pending returns how many registered keys Next has not returned yet.
func (t *TxTable) Pending() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.started {
		return 0
	}
	n := 0
	capacity := uint32(len(t.slots))
	for k := t.head; k != t.tail; k++ {
		s := &t.slots[k%capacity]
		if s.state == slotPending && s.Key == k {
			n++
		}
	}
	return n
}

func popcount(v uint8) int {
	n := 0
	for ; v != 0; v &= v - 1 {
		n++
	}
	return n
}
