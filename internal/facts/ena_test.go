package facts

import (
	"strings"
	"testing"
)

func FuzzENATimestamping(f *testing.F) {
	f.Add("HW TX support: 0\nHW RX support: 1\nTX configuration: 0\nRX configuration: 0\n")
	f.Add("HW TX support: 1\n")
	f.Fuzz(func(t *testing.T, s string) {
		ts, err := parseENATimestamping(s)
		if err == nil && strings.Count(s, ":") < 4 {
			t.Fatalf("accepted %q as %+v", s, ts)
		}
	})
}
