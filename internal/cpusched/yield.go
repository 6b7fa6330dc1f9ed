package cpusched

import (
	"runtime"
	"time"
)

// YieldEvery is how often a Yielder reschedules its goroutine: under the Go
// runtime's forcePreemptNS (10 ms), after which sysmon preempts a goroutine
// that has not been rescheduled.
const YieldEvery = 5 * time.Millisecond

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
type Yielder struct{ last time.Time }

// Quiet tells the Yielder that now is a quiet moment: it yields if
// YieldEvery has passed since the last yield, and reports whether it did.
// It does not allocate.
func (y *Yielder) Quiet(now time.Time) bool {
	if now.Sub(y.last) < YieldEvery {
		return false
	}
	runtime.Gosched()
	y.last = time.Now()
	return true
}
