package sender

import "time"

// Schedule is the absolute send schedule: request k is due at
// Start + k·Interval, whatever happened to request k−1 (irtt's rule: a late
// send does not shift the rest, and its lateness is recorded as data).
type Schedule struct {
	Start    time.Time // carries Go's monotonic reading: waits use it
	StartNS  int64     // Start as CLOCK_REALTIME ns: due stamps use it
	Interval time.Duration
}

// NewSchedule starts a schedule at start.
func NewSchedule(start time.Time, interval time.Duration) Schedule {
	return Schedule{Start: start, StartNS: start.UnixNano(), Interval: interval}
}

// Due returns request k's due time on the monotonic clock.
func (s Schedule) Due(k uint64) time.Time { return s.Start.Add(time.Duration(k) * s.Interval) }

// DueNS returns request k's due time as CLOCK_REALTIME ns.
func (s Schedule) DueNS(k uint64) int64 { return s.StartNS + int64(k)*int64(s.Interval) }
