package tstamp

import (
	"errors"
	"testing"
	"time"
)

const ms = int64(time.Millisecond)

func newTable(t *testing.T, capacity int, want TxKinds) *TxTable {
	t.Helper()
	tt, err := NewTxTable(capacity, 100*time.Millisecond, want)
	if err != nil {
		t.Fatal(err)
	}
	return tt
}

func TestTxTableComplete(t *testing.T) {
	tt := newTable(t, 8, WantSW|WantHW|WantSched)
	for k := uint32(10); k < 13; k++ {
		if err := tt.Sent(k, int64(k)*ms); err != nil {
			t.Fatal(err)
		}
	}
	// Stamps arrive out of order and as separate SW/HW messages (OPT_TX_SWHW).
	tt.Record(TxStamp{Key: 11, Kind: KindSnd, HW: 1100}, 12*ms)
	tt.Record(TxStamp{Key: 10, Kind: KindSched, SW: 999}, 12*ms)
	tt.Record(TxStamp{Key: 10, Kind: KindSnd, SW: 1000}, 12*ms)
	if _, ok := tt.Next(12 * ms); ok {
		t.Fatal("key 10 returned before its HW stamp or deadline")
	}
	tt.Record(TxStamp{Key: 10, Kind: KindSnd, HW: 1001}, 13*ms)
	e, ok := tt.Next(13 * ms)
	if !ok || e != (TxEntry{Key: 10, Sent: 10 * ms, SW: 1000, HW: 1001, Sched: 999}) {
		t.Fatalf("Next = %+v, %v", e, ok)
	}
	// Key 11 waits for its deadline (11ms + 100ms), then reports what is missing.
	if _, ok := tt.Next(111 * ms); ok {
		t.Fatal("key 11 returned at its deadline")
	}
	e, ok = tt.Next(111*ms + 1)
	if !ok || e.Key != 11 || e.HW != 1100 || e.Missing != WantSW|WantSched {
		t.Fatalf("Next = %+v, %v", e, ok)
	}
	e, ok = tt.Next(time.Hour.Nanoseconds())
	if !ok || e.Key != 12 || e.Missing != WantSW|WantHW|WantSched {
		t.Fatalf("Next = %+v, %v", e, ok)
	}
	if _, ok := tt.Next(time.Hour.Nanoseconds()); ok {
		t.Fatal("Next on empty table")
	}
	st := tt.Stats()
	want := TxStats{Sent: 3, Recorded: 4, Complete: 1, Missing: 5}
	if st != want {
		t.Fatalf("stats %+v, want %+v", st, want)
	}
}

func TestTxTableLateDuplicateUnknown(t *testing.T) {
	tt := newTable(t, 4, WantSW)
	tt.Sent(100, 0)
	tt.Sent(101, 0)
	tt.Record(TxStamp{Key: 100, Kind: KindSnd, SW: 5}, 1*ms)
	tt.Record(TxStamp{Key: 100, Kind: KindSnd, SW: 6}, 2*ms)        // duplicate
	tt.Record(TxStamp{Key: 101, Kind: KindSnd, SW: 7}, 100*ms+1)    // after deadline: late
	tt.Record(TxStamp{Key: 102, Kind: KindSnd, SW: 7}, 2*ms)        // never sent
	tt.Record(TxStamp{Key: 99, Kind: KindSnd, SW: 7}, 2*ms)         // before the first key
	tt.Record(TxStamp{Key: 100, Kind: KindAck, SW: 7}, 2*ms)        // unwanted kind
	tt.Record(TxStamp{Key: 100, Kind: KindCompletion, SW: 7}, 2*ms) // unwanted kind
	tt.Record(TxStamp{Key: 100, Kind: KindSnd, HW: 7}, 2*ms)        // HW not wanted
	tt.Record(TxStamp{Key: 100, Kind: KindSnd}, 2*ms)               // empty stamp
	if e, ok := tt.Next(2 * ms); !ok || e.SW != 5 || e.Missing != 0 {
		t.Fatalf("Next = %+v, %v", e, ok)
	}
	tt.Record(TxStamp{Key: 100, Kind: KindSnd, SW: 8}, 3*ms) // after Next: late
	if e, ok := tt.Next(200 * ms); !ok || e.Key != 101 || e.Missing != WantSW {
		t.Fatalf("Next = %+v, %v", e, ok)
	}
	// Reuse every slot, then a stamp for 100 (slot now holds 104) is late.
	for k := uint32(102); k < 106; k++ {
		if err := tt.Sent(k, 300*ms); err != nil {
			t.Fatal(err)
		}
	}
	tt.Record(TxStamp{Key: 100, Kind: KindSnd, SW: 9}, 300*ms)
	st := tt.Stats()
	want := TxStats{Sent: 6, Recorded: 1, Complete: 1, Missing: 1, Late: 3, Duplicate: 1, Unknown: 2, Unwanted: 4}
	if st != want {
		t.Fatalf("stats %+v\nwant  %+v", st, want)
	}
}

func TestTxTableFullAndOrder(t *testing.T) {
	tt := newTable(t, 4, WantSW)
	for k := uint32(0); k < 4; k++ {
		if err := tt.Sent(k, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := tt.Sent(4, 0); !errors.Is(err, ErrTxTableFull) {
		t.Fatalf("Sent into a full table: %v", err)
	}
	if err := tt.Sent(2, 0); !errors.Is(err, ErrKeyOrder) {
		t.Fatalf("Sent of an old key: %v", err)
	}
	if tt.Pending() != 4 {
		t.Fatalf("Pending = %d", tt.Pending())
	}
	if _, ok := tt.Next(200 * ms); !ok {
		t.Fatal("expired entry not returned")
	}
	if err := tt.Sent(4, 0); err != nil {
		t.Fatalf("Sent after a slot freed: %v", err)
	}
	// Gaps: key 10 jumps ahead; 5..9 were never sent.
	for _, ok := tt.Next(time.Hour.Nanoseconds()); ok; _, ok = tt.Next(time.Hour.Nanoseconds()) {
	}
	if err := tt.Sent(10, 0); err != nil {
		t.Fatal(err)
	}
	tt.Record(TxStamp{Key: 7, Kind: KindSnd, SW: 1}, 0) // gap key: unknown
	tt.Record(TxStamp{Key: 10, Kind: KindSnd, SW: 1}, 0)
	if e, ok := tt.Next(0); !ok || e.Key != 10 {
		t.Fatalf("Next after gap = %+v, %v", e, ok)
	}
	if st := tt.Stats(); st.Overflowed != 1 || st.Unknown != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestTxTableWrap(t *testing.T) {
	tt := newTable(t, 8, WantSW)
	start := uint32(0xfffffffc)
	for i := uint32(0); i < 8; i++ {
		k := start + i
		if err := tt.Sent(k, 0); err != nil {
			t.Fatalf("Sent(%#x): %v", k, err)
		}
		tt.Record(TxStamp{Key: k, Kind: KindSnd, SW: int64(i + 1)}, 0)
	}
	for i := uint32(0); i < 8; i++ {
		e, ok := tt.Next(0)
		if !ok || e.Key != start+i || e.SW != int64(i+1) {
			t.Fatalf("Next %d = %+v, %v", i, e, ok)
		}
	}
}

func TestNewTxTableErrors(t *testing.T) {
	for _, c := range []struct {
		capacity int
		wait     time.Duration
		want     TxKinds
	}{{0, 0, WantSW}, {-1, 0, WantSW}, {8, -1, WantSW}, {8, 0, 0}, {8, 0, 0x80}} {
		if _, err := NewTxTable(c.capacity, c.wait, c.want); err == nil {
			t.Errorf("NewTxTable(%d, %v, %#x) accepted", c.capacity, c.wait, c.want)
		}
	}
	tt, err := NewTxTable(8, 0, WantSW)
	if err != nil || tt.wait != int64(DefaultTxWait) {
		t.Fatalf("default wait: %v %v", tt, err)
	}
}

func TestTxKindsFor(t *testing.T) {
	g := Granted{Flags: FlagTxSoftware | FlagSoftware | FlagTxSched}
	if k := TxKindsFor(g); k != WantSW|WantSched {
		t.Fatalf("TxKindsFor(SW) = %#x", k)
	}
	g = Granted{Flags: FlagTxSoftware | FlagSoftware | FlagTxHardware | FlagRawHardware, Caps: Caps{TxTypes: 1 << TxOn}}
	if k := TxKindsFor(g); k != WantSW|WantHW {
		t.Fatalf("TxKindsFor(HW) = %#x", k)
	}
}

func FuzzTxTable(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Fuzz(func(t *testing.T, ops []byte) {
		tt, _ := NewTxTable(4, 10*time.Millisecond, WantSW|WantHW)
		now := int64(0)
		for i := 0; i+2 < len(ops); i += 3 {
			key := uint32(ops[i+1] % 16)
			now += int64(ops[i+2]) * ms / 4
			switch ops[i] % 4 {
			case 0:
				tt.Sent(key, now)
			case 1:
				tt.Record(TxStamp{Key: key, Kind: Kind(ops[i+2] % 4), SW: int64(ops[i+2])}, now)
			case 2:
				tt.Record(TxStamp{Key: key, Kind: KindSnd, HW: 1}, now)
			case 3:
				tt.Next(now)
			}
			if p := tt.Pending(); p > 4 {
				t.Fatalf("pending %d > capacity", p)
			}
		}
	})
}

func TestTxTableAllocs(t *testing.T) {
	tt := newTable(t, 1024, WantSW|WantHW)
	k := uint32(0)
	if n := testing.AllocsPerRun(1000, func() {
		tt.Sent(k, int64(k))
		tt.Record(TxStamp{Key: k, Kind: KindSnd, SW: 1}, int64(k))
		tt.Record(TxStamp{Key: k, Kind: KindSnd, HW: 1}, int64(k))
		tt.Next(int64(k))
		k++
	}); n != 0 {
		t.Fatalf("%v allocs per stamp cycle, want 0", n)
	}
}

func BenchmarkTxTable(b *testing.B) {
	tt, _ := NewTxTable(1024, 0, WantSW|WantHW)
	k := uint32(0)
	b.ReportAllocs()
	for b.Loop() {
		tt.Sent(k, int64(k))
		tt.Record(TxStamp{Key: k, Kind: KindSnd, SW: 1, HW: 1}, int64(k))
		tt.Next(int64(k))
		k++
	}
}
