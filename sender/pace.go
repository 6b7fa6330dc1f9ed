package sender

import "time"

// Schedule is the absolute send schedule: request k is due at
// Start + k·Interval, whatever happened to request k−1 (irtt's rule: a late
// send does not shift the rest, and its lateness is recorded as data).
//
// The schedule is kept on the monotonic clock (Start carries Go's
// monotonic reading), and so is lateness: CLOCK_REALTIME, which every
// stamp is written in, can be stepped during a round (ntpd or chrony
// stepping, phc2sys, a VM's clock resynchronised after a pause), and
// start + k·interval on it would turn every such step into lateness of
// every later request (docs/measurement.md#stamps).
type Schedule struct {
	Start    time.Time
	Interval time.Duration
}

// NewSchedule starts a schedule at start, which must carry a monotonic
// reading (time.Now's does).
func NewSchedule(start time.Time, interval time.Duration) Schedule {
	return Schedule{Start: start, Interval: interval}
}

// Due returns request k's due time on the monotonic clock.
func (s Schedule) Due(k uint64) time.Time { return s.Start.Add(time.Duration(k) * s.Interval) }

// DueNS returns request k's due time as CLOCK_REALTIME ns, read at now
// (which must carry a monotonic reading): now's wall time less how late now
// is for it on the monotonic clock. tx_user − due is then the lateness the
// monotonic clock measured, whatever the wall clock did since Start.
func (s Schedule) DueNS(k uint64, now time.Time) int64 {
	return now.UnixNano() - int64(now.Sub(s.Due(k)))
}
