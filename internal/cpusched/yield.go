package cpusched

import (
	"runtime"
	"time"
)

// YieldEvery is how often a Yielder reschedules its goroutine when its
// caller's cycle is unknown (Yielder.Cycle 0): under the Go runtime's
// forcePreemptNS (10 ms), after which sysmon preempts a goroutine that has
// not been rescheduled, by enough for a quiet moment to come 5 ms late.
const YieldEvery = 5 * time.Millisecond

// yieldBy: with a known cycle, a Yielder yields when the next quiet moment
// (up to a cycle away) could come later than this after the last yield:
// 1 ms under sysmon's 10 ms for its own scheduling.
const yieldBy = 9 * time.Millisecond

// Yielder keeps the Go runtime from preempting a measuring thread at a
// moment it did not choose.
//
// Why: a goroutine that spins, or runs its loop without ever blocking in
// the Go scheduler, is preempted by sysmon after 10 ms (SIGURG, which also
// interrupts a ppoll in progress with EINTR); a goroutine locked to its
// thread then hands its P to another thread and waits to be handed it back,
// several context switches on the measured CPU at a random point of the
// cycle (measured: 53 SIGURGs a second on a sender spinning between 1 ms
// sends). Yielding every YieldEvery at a quiet moment (after a reply, far
// from the next send) pays the same hand-off where it cannot touch a
// measurement, and sysmon never fires.
//
// Blocking loops use it, busy loops do not. Interleaved A/B on a 2-vCPU VM
// (rig user RTT, same lab, ~20 000 requests each): blocking sender and
// responder p99 / p99.9 235 / 2207 µs with the Yielder against 1020 / 3479
// µs without; busy-polling ends 1625 / 1463 µs p99.9 yielding every 5 / 8
// ms against 692 µs without (when both CPUs spin, the hand-off sometimes
// leaves the CPU idle for a millisecond).
//
// A yield is not free: a goroutine locked to its thread hands its P to
// another thread and is handed it back, about four futex calls (measured:
// 0.84 futex per round trip at 1 request/ms, 200 yields a second). So a
// caller that knows its cycle says so (Cycle), and the Yielder yields as
// seldom as sysmon allows: at 1 request/ms every 8 ms, not 5.
type Yielder struct {
	last time.Time
	// Cycle is how far apart the caller's quiet moments are at most (the
	// sender's interval, the responder's last gap between requests); 0:
	// unknown, yield every YieldEvery.
	Cycle time.Duration
}

// Gap tells the Yielder one gap between the caller's quiet moments when
// they follow outside events (a responder's requests): Cycle becomes the
// longest gap lately, decaying by an eighth a gap, so a burst of overdue
// requests does not shorten it at once. It does not allocate.
func (y *Yielder) Gap(d time.Duration) { y.Cycle = max(d, y.Cycle-y.Cycle/8) }

// Every is how long the Yielder lets pass between yields.
func (y *Yielder) Every() time.Duration {
	if y.Cycle <= 0 {
		return YieldEvery
	}
	return min(yieldBy-time.Millisecond, max(0, yieldBy-y.Cycle))
}

// Quiet tells the Yielder that now is a quiet moment: it yields if Every
// has passed since the last yield, and reports whether it did. It does not
// allocate.
func (y *Yielder) Quiet(now time.Time) bool {
	if now.Sub(y.last) < y.Every() {
		return false
	}
	runtime.Gosched()
	y.last = time.Now()
	return true
}
