package hostinfo

import "golang.org/x/sys/unix"

// MonotonicRaw reads CLOCK_MONOTONIC_RAW in ns: the clock NTP does not
// slew, read next to a counter (the TSC) to give it a rate. It does not
// allocate.
func MonotonicRaw() (int64, error) {
	var ts unix.Timespec
	err := unix.ClockGettime(unix.CLOCK_MONOTONIC_RAW, &ts)
	return ts.Nano(), err
}
