package probe

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// PollMode is how a probe's measuring thread waits for packets.
type PollMode int

const (
	// Block sleeps in the kernel until a packet arrives: the thread gives
	// its CPU away between packets and pays the wake-up.
	Block PollMode = iota
	// Busy spins on non-blocking reads on its CPU: no wake-up, one CPU
	// at 100 %.
	Busy
)

func (m PollMode) String() string {
	if m == Busy {
		return "busy"
	}
	if s, ok := nativeModes[m]; ok {
		return s
	}
	return "block"
}

// MarshalText writes String: rig send's --poll.
func (m PollMode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads rig send's --poll: block or busy, the modes of the
// sender's one thread.
func (m *PollMode) UnmarshalText(b []byte) error {
	switch string(b) {
	case "block":
		*m = Block
	case "busy":
		*m = Busy
	default:
		return errors.New("want block or busy")
	}
	return nil
}

// Poll is a poll mode as written on a command line or in a scenario
// ("block", "busy", "busy-poll:50"): a mode, and for the responder's
// busy-poll:µs the SO_BUSY_POLL time.
type Poll struct {
	Mode PollMode
	// BusyPollUS > 0 (Block only): the kernel polls the device queue this
	// many µs inside recvmsg before sleeping (SO_BUSY_POLL).
	BusyPollUS int
	// Budget is PreferBusyPoll's SO_BUSY_POLL_BUDGET (0 for the others).
	Budget int
}

// ParsePoll parses "block", "busy" or "busy-poll:µs" (µs in 1..1000000);
// "" is block. The last is block mode with SO_BUSY_POLL set to µs: the
// kernel polls the device queue that long inside recvmsg before sleeping.
// It is the one parser of a poll mode: the CLI, the scenario loader and
// the round all use it, so an input gets the same error everywhere.
func ParsePoll(s string) (Poll, error) {
	switch {
	case s == "" || s == "block":
		return Poll{Mode: Block}, nil
	case s == "busy":
		return Poll{Mode: Busy}, nil
	case strings.HasPrefix(s, "busy-poll:"):
		n, err := strconv.Atoi(strings.TrimPrefix(s, "busy-poll:"))
		if err != nil || n < 1 || n > 1_000_000 {
			return Poll{}, fmt.Errorf("poll mode %q: busy-poll needs a time in µs, 1..1000000 (e.g. busy-poll:50)", s)
		}
		return Poll{Mode: Block, BusyPollUS: n}, nil
	}
	return Poll{}, fmt.Errorf("poll mode %q: want block, busy or busy-poll:µs", s)
}

// String is the form ParsePoll reads: "block", "busy" or "busy-poll:µs"
// (and ParseEnginePoll the native engine's modes).
func (p Poll) String() string {
	switch {
	case p.nativeString() != "":
		return p.nativeString()
	case p.Mode == Busy:
		return "busy"
	case p.BusyPollUS > 0:
		return "busy-poll:" + strconv.Itoa(p.BusyPollUS)
	}
	return "block"
}

// MarshalText writes String (a run's manifest records "busy-poll:50").
func (p Poll) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText reads what MarshalText wrote, the native engine's modes
// included (ParseEnginePoll): rig respond --poll, whose --engine is
// checked with the other flags.
func (p *Poll) UnmarshalText(b []byte) error {
	v, err := ParseEnginePoll(string(b), EngineNative)
	if err != nil {
		return err
	}
	*p = v
	return nil
}
