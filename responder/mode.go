package responder

import (
	"fmt"
	"strconv"
	"strings"
)

// PollMode is how the responder waits for a request.
type PollMode int

const (
	// Block sleeps in recvmsg(2) until a request arrives: the thread
	// gives its CPU away between requests and pays the wake-up.
	Block PollMode = iota
	// Busy spins on non-blocking recvmsg(2) on its pinned CPU: no wake-up,
	// one CPU at 100 %.
	Busy
)

func (m PollMode) String() string {
	if m == Busy {
		return "busy"
	}
	return "block"
}

// ParsePoll parses "block", "busy" or "busy-poll:µs". The last is block
// mode with SO_BUSY_POLL set to µs: the kernel polls the device queue that
// long inside recvmsg before sleeping.
func ParsePoll(s string) (mode PollMode, busyPollUS int, err error) {
	switch {
	case s == "" || s == "block":
		return Block, 0, nil
	case s == "busy":
		return Busy, 0, nil
	case strings.HasPrefix(s, "busy-poll:"):
		n, err := strconv.Atoi(strings.TrimPrefix(s, "busy-poll:"))
		if err != nil || n < 1 || n > 1_000_000 {
			return 0, 0, fmt.Errorf("poll mode %q: busy-poll needs a time in µs, 1..1000000 (e.g. busy-poll:50)", s)
		}
		return Block, n, nil
	}
	return 0, 0, fmt.Errorf("poll mode %q: want block, busy or busy-poll:µs", s)
}
