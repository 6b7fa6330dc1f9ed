package analysis

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The forms of numbers and words that report.json's sentences and the
// rendered tables share.

// FormatUS formats integer nanoseconds as microseconds with 2 decimals,
// rounding half away from zero at 5 ns: 3904 → "3.90", 3905 → "3.91".
func FormatUS(ns int64) string {
	neg := ns < 0
	if neg {
		ns = -ns
	}
	c := (ns + 5) / 10 // hundredths of a µs
	s := fmt.Sprintf("%d.%02d", c/100, c%100)
	if neg && c != 0 {
		s = "-" + s
	}
	return s
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// rateCell prints a false-positive rate as a percentage: "33 %", "0.79 %",
// "< 0.01 %"; "—" without one.
func rateCell(p *float64) string {
	switch {
	case p == nil:
		return "—"
	case *p < 0.0001:
		return "< 0.01 %"
	case *p < 0.1:
		return strconv.FormatFloat(100**p, 'f', 2, 64) + " %"
	}
	return strconv.FormatFloat(100**p, 'f', 0, 64) + " %"
}
