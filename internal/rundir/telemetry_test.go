package rundir

import "testing"

func TestIntervalAt(t *testing.T) {
	r := &TelemetryResult{Intervals: []TelemetryInterval{{Start: 10, End: 20}, {Start: 20, End: 30}}}
	for _, c := range []struct {
		t    int64
		want int
	}{{5, -1}, {10, -1}, {11, 0}, {20, 0}, {21, 1}, {30, 1}, {31, -1}} {
		got := r.IntervalAt(c.t)
		if (c.want < 0) != (got == nil) || (got != nil && got != &r.Intervals[c.want]) {
			t.Errorf("IntervalAt(%d) = %v, want interval %d", c.t, got, c.want)
		}
	}
}
