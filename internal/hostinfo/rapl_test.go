package hostinfo

import "testing"

// TestRAPLDelta: a step, one wrap unwound, and a step long enough for two
// wraps at RAPLMaxWatts, which cannot be told.
func TestRAPLDelta(t *testing.T) {
	const r = 262143328850 // µJ: 262 s at 1 kW
	for _, c := range []struct {
		prev, cur   uint64
		dtNS        int64
		uj          uint64
		wrapped, ok bool
	}{
		{100, 600, 1e8, 500, false, true},
		{r - 100, 400, 1e8, 500, true, true},
		{100, 600, 263e9, 0, false, false},
	} {
		uj, w, ok := RAPLDelta(c.prev, c.cur, r, c.dtNS)
		if uj != c.uj || w != c.wrapped || ok != c.ok {
			t.Errorf("RAPLDelta(%d, %d, %d ns) = %d, %v, %v; want %d, %v, %v", c.prev, c.cur, c.dtNS, uj, w, ok, c.uj, c.wrapped, c.ok)
		}
	}
}
