package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/rig-project/rig/internal/samples"
)

// Sockperf is what one `sockperf ping-pong` run reported: its summary
// (stdout) and, when the input holds the --full-log CSV, every round trip.
type Sockperf struct {
	FullRTT bool // figures are round trips (--full-rtt), not half round trips

	// From "[Total Run]": the whole run, warm-up included.
	TotalRunTimeSec float64
	TotalSent       int
	TotalReceived   int

	// From "[Valid Duration]": the measured part, warm-up excluded (zero
	// when sockperf found no valid observations).
	RunTimeSec float64
	Sent       int
	Received   int
	Dropped    int
	Duplicated int
	OutOfOrder int

	// Percentiles as sockperf printed them, in ns, keyed "50.000",
	// "99.900", "MAX", "MIN". sockperf interpolates; the bench computes its
	// own nearest-rank figures from RTTs instead and keeps these to check.
	Printed map[string]int64

	// RTTs are the --full-log rtt column in ns, one per answered message,
	// in send order. Rows without a receive time are counted in Unanswered.
	RTTs       []int64
	Unanswered int

	// ClientUsage and ServerUsage are the two processes' CPU use over their
	// whole life (the bench fills them in; nil when not known).
	ClientUsage, ServerUsage *samples.ThreadUsage
}

// Rate is the measured message rate (received/s) of the valid part, or of
// the whole run when sockperf reported no valid part.
func (s *Sockperf) Rate() float64 {
	switch {
	case s.RunTimeSec > 0:
		return float64(s.Received) / s.RunTimeSec
	case s.TotalRunTimeSec > 0:
		return float64(s.TotalReceived) / s.TotalRunTimeSec
	}
	return 0
}

var (
	ansiRE      = regexp.MustCompile(`\x1b\[[0-9;]*m`)
	totalRE     = regexp.MustCompile(`\[Total Run\] RunTime=([0-9.]+) sec; Warm up time=[0-9]+ msec; SentMessages=([0-9]+); ReceivedMessages=([0-9]+)`)
	validRE     = regexp.MustCompile(`\[Valid Duration\] RunTime=([0-9.]+) sec; SentMessages=([0-9]+); ReceivedMessages=([0-9]+)`)
	droppedRE   = regexp.MustCompile(`# dropped messages = ([0-9]+); # duplicated messages = ([0-9]+); # out-of-order messages = ([0-9]+)`)
	percentRE   = regexp.MustCompile(`---> percentile +([0-9.]+) = +([0-9.]+)`)
	extremeRE   = regexp.MustCompile(`---> <(MAX|MIN)> observation = +([0-9.]+)`)
	csvHeaderRE = regexp.MustCompile(`^packet, *txTime\(sec\), *rxTime\(sec\), *(rtt|latency)\(usec\)`)
)

// ErrNoSockperfResult is returned by ParseSockperf for input that holds
// neither a "[Total Run]" summary nor full-log rows (sockperf failed, or
// this is not its output).
var ErrNoSockperfResult = errors.New("no sockperf result ([Total Run] summary or full-log rows) in the input")

// ParseSockperf parses the output of `sockperf ping-pong` (version 3.x),
// its --full-log CSV file, or both concatenated. Sockperf prints every
// summary twice (screen and log); the last one wins, which is the same.
// Time values are µs with three decimals and are converted exactly to ns.
func ParseSockperf(r io.Reader) (*Sockperf, error) {
	s := &Sockperf{Printed: map[string]int64{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	inCSV, sawValid := false, false
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(ansiRE.ReplaceAllString(sc.Text(), ""))
		switch {
		case csvHeaderRE.MatchString(t):
			inCSV = true
			s.FullRTT = strings.Contains(t, "rtt(usec)")
			continue
		case strings.HasPrefix(t, "---"):
			if !strings.HasPrefix(t, "--->") {
				inCSV = false
			}
		}
		if inCSV {
			if err := s.csvRow(t); err != nil {
				return nil, fmt.Errorf("sockperf full log line %d %q: %w", line, t, err)
			}
			continue
		}
		if strings.Contains(t, "following parameters:") && strings.Contains(t, "--full-rtt") {
			s.FullRTT = true
		}
		if strings.Contains(t, "avg-rtt=") {
			s.FullRTT = true
		}
		if m := totalRE.FindStringSubmatch(t); m != nil {
			sawValid = true
			s.TotalRunTimeSec, _ = strconv.ParseFloat(m[1], 64)
			s.TotalSent, _ = strconv.Atoi(m[2])
			s.TotalReceived, _ = strconv.Atoi(m[3])
		} else if m := validRE.FindStringSubmatch(t); m != nil {
			sawValid = true
			s.RunTimeSec, _ = strconv.ParseFloat(m[1], 64)
			s.Sent, _ = strconv.Atoi(m[2])
			s.Received, _ = strconv.Atoi(m[3])
		} else if m := droppedRE.FindStringSubmatch(t); m != nil {
			s.Dropped, _ = strconv.Atoi(m[1])
			s.Duplicated, _ = strconv.Atoi(m[2])
			s.OutOfOrder, _ = strconv.Atoi(m[3])
		} else if m := percentRE.FindStringSubmatch(t); m != nil {
			v, err := parseMicros(m[2])
			if err != nil {
				return nil, fmt.Errorf("sockperf output line %d %q: %w", line, t, err)
			}
			s.Printed[m[1]] = v
		} else if m := extremeRE.FindStringSubmatch(t); m != nil {
			v, err := parseMicros(m[2])
			if err != nil {
				return nil, fmt.Errorf("sockperf output line %d %q: %w", line, t, err)
			}
			s.Printed[m[1]] = v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !sawValid && len(s.RTTs) == 0 {
		return nil, ErrNoSockperfResult
	}
	return s, nil
}

// csvRow parses "seq, tx, rx, rtt".
func (s *Sockperf) csvRow(t string) error {
	if t == "" {
		return nil
	}
	f := strings.Split(t, ",")
	if len(f) != 4 {
		return fmt.Errorf("want 4 comma-separated fields, got %d", len(f))
	}
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	if _, err := strconv.ParseUint(f[0], 10, 64); err != nil {
		return fmt.Errorf("packet number: %w", err)
	}
	rx, err := strconv.ParseFloat(f[2], 64)
	if err != nil {
		return fmt.Errorf("rxTime: %w", err)
	}
	if rx == 0 {
		s.Unanswered++
		return nil
	}
	v, err := parseMicros(f[3])
	if err != nil {
		return err
	}
	s.RTTs = append(s.RTTs, v)
	return nil
}

// parseMicros converts a decimal µs figure ("439.755") to ns exactly
// (digits beyond the third decimal are dropped).
func parseMicros(s string) (int64, error) {
	ip, fp, _ := strings.Cut(s, ".")
	if ip == "" || len(ip) > 12 || len(fp) > 9 {
		return 0, fmt.Errorf("µs value %q: want digits[.digits]", s)
	}
	n, err := strconv.ParseUint(ip, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("µs value %q: %w", s, err)
	}
	ns := int64(n) * 1000
	for i := 0; i < 3; i++ {
		d := byte('0')
		if i < len(fp) {
			d = fp[i]
		}
		if d < '0' || d > '9' {
			return 0, fmt.Errorf("µs value %q: want digits[.digits]", s)
		}
		ns += int64(d-'0') * []int64{100, 10, 1}[i]
	}
	for i := 3; i < len(fp); i++ {
		if fp[i] < '0' || fp[i] > '9' {
			return 0, fmt.Errorf("µs value %q: want digits[.digits]", s)
		}
	}
	return ns, nil
}
