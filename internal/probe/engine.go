package probe

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rig-project/rig/internal/cpusched"
)

// Engine is what runs a probe's measuring loop: rig's own Go code, or the
// native program beside rig (docs/probes.md#the-native-engine), which no
// language runtime interrupts and which a kernel-bypass stack preloaded in
// front of libc can accelerate; or, for the responder, the reflector: an
// XDP program that answers in the driver (docs/probes.md#reflector-floor).
type Engine int

const (
	EngineGo Engine = iota
	EngineNative
	EngineXDP        // the reflector in the driver's receive path (native XDP)
	EngineXDPGeneric // the reflector in the stack's receive path (generic XDP)
	EngineTC         // the reflector at tc ingress, for NICs without XDP
)

var engineNames = []string{EngineGo: "go", EngineNative: "native", EngineXDP: "xdp", EngineXDPGeneric: "xdp-generic", EngineTC: "tc"}

func (e Engine) String() string { return engineNames[e] }

// Reflector reports whether e is the XDP reflector, which no loop runs.
func (e Engine) Reflector() bool { return e >= EngineXDP }

// MarshalText writes String: rig respond --engine.
func (e Engine) MarshalText() ([]byte, error) { return []byte(e.String()), nil }

// UnmarshalText reads what MarshalText wrote, with ParseEngine.
func (e *Engine) UnmarshalText(b []byte) error {
	v, err := ParseEngine(string(b))
	*e = v
	return err
}

// ParseEngine parses "go", "native", "xdp", "xdp-generic" or "tc"; "" is go.
func ParseEngine(s string) (Engine, error) {
	if s == "" {
		return EngineGo, nil
	}
	if i := slices.Index(engineNames, s); i >= 0 {
		return Engine(i), nil
	}
	return 0, fmt.Errorf("engine %q: want go, native, xdp, xdp-generic or tc", s)
}

// checkReflector refuses what the reflector cannot honour: it has no loop
// to pin, schedule or poll with — it runs in the NIC's receive softirq, on
// the CPU that takes the queue's interrupt (steer that with nicctl).
func checkReflector(r Respond) error {
	switch {
	case !r.Engine.Reflector():
		return nil
	case r.CPU >= 0:
		return fmt.Errorf("--cpu %d with --engine %s: the program has no thread to pin; it runs on the CPU that takes the NIC queue's interrupt (steer it with nicctl)", r.CPU, r.Engine)
	case r.Poll != Poll{}:
		return fmt.Errorf("--poll %s with --engine %s: the program does not wait, the driver runs it for each frame", r.Poll, r.Engine)
	case r.Sched != cpusched.Sched{}:
		return fmt.Errorf("--sched %s with --engine %s: the program has no thread to schedule", r.Sched, r.Engine)
	}
	return nil
}

// The poll modes only the native engine has.
const (
	// PreferBusyPoll blocks in recvmsg, which first busy-polls the NIC's
	// queue for BusyPollUS with SO_PREFER_BUSY_POLL and SO_BUSY_POLL_BUDGET
	// set (Budget): the kernel defers the NIC's interrupts to the polling.
	PreferBusyPoll PollMode = iota + Busy + 1
	// Epoll waits in epoll_wait, then reads without blocking.
	Epoll
	// IOUring keeps a recvmsg in an io_uring and waits in io_uring_enter.
	IOUring
	// IOUringSQPoll has a kernel thread take the ring's submissions and
	// spins on its completions: no system call per request.
	IOUringSQPoll
)

// DefaultBudget is prefer-busy-poll's SO_BUSY_POLL_BUDGET when not given:
// NAPI_POLL_WEIGHT, what a NAPI poll gets from the softirq.
const DefaultBudget = 64

var nativeModes = map[PollMode]string{PreferBusyPoll: "prefer-busy-poll", Epoll: "epoll", IOUring: "io-uring", IOUringSQPoll: "io-uring-sqpoll"}

// nativeString is the text of a native-only poll ("" for the others).
func (p Poll) nativeString() string {
	if p.Mode != PreferBusyPoll {
		return nativeModes[p.Mode]
	}
	s := "prefer-busy-poll:" + strconv.Itoa(p.BusyPollUS)
	if p.Budget != DefaultBudget {
		s += ":" + strconv.Itoa(p.Budget)
	}
	return s
}

// ParseEnginePoll parses a poll mode for engine e: ParsePoll's for both,
// and for the native engine also "prefer-busy-poll:µs[:budget]", "epoll",
// "io-uring" and "io-uring-sqpoll". The Go engine refuses those, saying so.
func ParseEnginePoll(s string, e Engine) (Poll, error) {
	p, err := ParsePoll(s)
	if err == nil {
		return p, nil
	}
	np, nerr, native := parseNativePoll(s)
	switch {
	case !native:
		return Poll{}, err
	case nerr != nil:
		return Poll{}, nerr
	}
	if err := checkEnginePoll(np, e); err != nil {
		return Poll{}, err
	}
	return np, nil
}

// checkEnginePoll refuses a native-only poll mode for the Go engine.
func checkEnginePoll(p Poll, e Engine) error {
	if p.Mode > Busy && e != EngineNative {
		return fmt.Errorf("poll mode %q needs --engine native: the Go engine waits by block, busy or busy-poll:µs", p)
	}
	return nil
}

// parseNativePoll parses a native-only mode; native reports whether s
// names one at all.
func parseNativePoll(s string) (p Poll, err error, native bool) {
	for m, name := range nativeModes {
		if s == name && m != PreferBusyPoll {
			return Poll{Mode: m}, nil, true
		}
	}
	if !strings.HasPrefix(s, "prefer-busy-poll") {
		return Poll{}, nil, false
	}
	bad := fmt.Errorf("poll mode %q: prefer-busy-poll needs a time in µs, 1..1000000, and may add a budget, 1..65535 (e.g. prefer-busy-poll:50 or prefer-busy-poll:50:64)", s)
	rest, ok := strings.CutPrefix(s, "prefer-busy-poll:")
	if !ok {
		return Poll{}, bad, true
	}
	us, budget, two := strings.Cut(rest, ":")
	p = Poll{Mode: PreferBusyPoll, Budget: DefaultBudget}
	if p.BusyPollUS, err = strconv.Atoi(us); err != nil || p.BusyPollUS < 1 || p.BusyPollUS > 1_000_000 {
		return Poll{}, bad, true
	}
	if two {
		if p.Budget, err = strconv.Atoi(budget); err != nil || p.Budget < 1 || p.Budget > 65535 {
			return Poll{}, bad, true
		}
	}
	return p, nil, true
}
