package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rig-project/rig/analysis"
)

// Cyclictest is the histogram of one single-thread `cyclictest -h N` run:
// wake-up latencies in whole µs.
type Cyclictest struct {
	Buckets   []int64 // Buckets[us] = samples with that latency
	Overflows int64   // samples ≥ len(Buckets) µs
	MinUS     int64
	AvgUS     int64
	MaxUS     int64
}

// N is the number of samples, overflows included.
func (c *Cyclictest) N() int64 {
	n := c.Overflows
	for _, b := range c.Buckets {
		n += b
	}
	return n
}

// Percentile returns the nearest-rank percentile in ns (the same rule as
// analysis.Percentile). A rank among the overflows is reported as the
// maximum, the only value cyclictest gives for them; ok is false for no
// samples.
func (c *Cyclictest) Percentile(q analysis.Quantile) (ns int64, ok bool) {
	n := c.N()
	if n == 0 {
		return 0, false
	}
	rank := int64(analysis.Rank(q, int(n)))
	var cum int64
	for us, b := range c.Buckets {
		cum += b
		if cum >= rank {
			return int64(us) * 1000, true
		}
	}
	return c.MaxUS * 1000, true
}

// ErrNoHistogram is returned by ParseCyclictest for output without a
// "# Histogram" block (cyclictest ran without -h, or failed).
var ErrNoHistogram = errors.New("no cyclictest histogram in the input (run it with -h N and one thread)")

// ParseCyclictest parses the output of `cyclictest -q -t 1 -h N` (rt-tests
// 2.x): "# Histogram", then one "<µs> <count>" row per bucket, then the
// "# Min/Avg/Max Latencies" and "# Histogram Overflows" lines. Only one
// thread is supported: with several, the rows have a count per thread.
func ParseCyclictest(r io.Reader) (*Cyclictest, error) {
	c := &Cyclictest{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	inHist, saw := false, false
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "# Histogram" {
			inHist, saw = true, true
			continue
		}
		if strings.HasPrefix(t, "#") {
			inHist = false
			key, val, ok := strings.Cut(strings.TrimPrefix(t, "#"), ":")
			if !ok {
				continue
			}
			key = strings.TrimSpace(key)
			var dst *int64
			switch key {
			case "Min Latencies":
				dst = &c.MinUS
			case "Avg Latencies":
				dst = &c.AvgUS
			case "Max Latencies":
				dst = &c.MaxUS
			case "Histogram Overflows":
				dst = &c.Overflows
			default:
				continue
			}
			f := strings.Fields(val)
			if len(f) != 1 {
				return nil, fmt.Errorf("cyclictest line %d %q: want one value (one thread, -t 1)", line, t)
			}
			v, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("cyclictest line %d %q: bad value", line, t)
			}
			*dst = v
			continue
		}
		if !inHist || t == "" {
			continue
		}
		f := strings.Fields(t)
		if len(f) != 2 {
			return nil, fmt.Errorf("cyclictest histogram line %d %q: want \"<µs> <count>\" (one thread, -t 1)", line, t)
		}
		us, err1 := strconv.ParseInt(f[0], 10, 64)
		n, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || us < 0 || n < 0 || us != int64(len(c.Buckets)) {
			return nil, fmt.Errorf("cyclictest histogram line %d %q: want bucket %d and a count", line, t, len(c.Buckets))
		}
		c.Buckets = append(c.Buckets, n)
		if len(c.Buckets) > 1_000_000 {
			return nil, fmt.Errorf("cyclictest histogram line %d: more than 1000000 buckets", line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !saw {
		return nil, ErrNoHistogram
	}
	return c, nil
}
