package probe

import (
	"testing"
)

func TestParsePoll(t *testing.T) {
	for in, want := range map[string][2]int{"": {0, 0}, "block": {0, 0}, "busy": {1, 0}, "busy-poll:50": {0, 50}} {
		p, err := ParsePoll(in)
		if err != nil || int(p.Mode) != want[0] || p.BusyPollUS != want[1] {
			t.Errorf("ParsePoll(%q) = %v %v %v", in, p.Mode, p.BusyPollUS, err)
		}
	}
	for _, bad := range []string{"spin", "busy-poll:", "busy-poll:0", "busy-poll:x"} {
		if _, err := ParsePoll(bad); err == nil {
			t.Errorf("ParsePoll(%q) accepted", bad)
		}
	}
}

// TestPollText: String is what ParsePoll reads, and the manifest's JSON
// form is the same text.
func TestPollText(t *testing.T) {
	for _, in := range []string{"block", "busy", "busy-poll:50", "busy-poll:1000000"} {
		p, err := ParsePoll(in)
		if err != nil || p.String() != in {
			t.Errorf("ParsePoll(%q) = %v (String %q), %v", in, p, p.String(), err)
		}
		b, _ := p.MarshalText()
		var q Poll
		if err := q.UnmarshalText(b); err != nil || q != p {
			t.Errorf("text %q read back as %v, %v", b, q, err)
		}
	}
	var q Poll
	if err := q.UnmarshalText([]byte("spin")); err == nil {
		t.Error("UnmarshalText accepted spin")
	}
	// What String writes of the native engine's modes reads back too
	// (rig respond --poll takes them; --engine is checked after).
	for _, in := range []string{"epoll", "io-uring", "prefer-busy-poll:50", "prefer-busy-poll:50:16"} {
		var q Poll
		if err := q.UnmarshalText([]byte(in)); err != nil || q.String() != in {
			t.Errorf("native %q read back as %v, %v", in, q, err)
		}
	}
	// rig send's --poll and rig respond's --engine are text values too.
	for _, m := range []PollMode{Block, Busy} {
		b, _ := m.MarshalText()
		var back PollMode = 7
		if err := back.UnmarshalText(b); err != nil || back != m {
			t.Errorf("poll mode %v read back as %v, %v", m, back, err)
		}
	}
	var m PollMode
	if err := m.UnmarshalText([]byte("epoll")); err == nil || err.Error() != "want block or busy" {
		t.Errorf("the sender's epoll: %v", err)
	}
	for _, e := range []Engine{EngineGo, EngineNative} {
		b, _ := e.MarshalText()
		var back Engine = 7
		if err := back.UnmarshalText(b); err != nil || back != e {
			t.Errorf("engine %v read back as %v, %v", e, back, err)
		}
	}
}

// FuzzParsePoll: whatever ParsePoll accepts prints back to a text it reads
// as the same mode.
func FuzzParsePoll(f *testing.F) {
	for _, s := range []string{"", "block", "busy", "busy-poll:50", "busy-poll:0", "busy-poll:-1", "busy-poll:1000001", "BUSY"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePoll(s)
		if err != nil {
			return
		}
		q, err := ParsePoll(p.String())
		if err != nil || q != p {
			t.Fatalf("ParsePoll(%q) = %v; its String %q reads as %v, %v", s, p, p.String(), q, err)
		}
		if p.Mode == Busy && p.BusyPollUS != 0 {
			t.Fatalf("ParsePoll(%q) = busy with SO_BUSY_POLL %d", s, p.BusyPollUS)
		}
	})
}
