package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/rundir"
)

// NoiseResult is the noise part: rounds of `rig noise` and cyclictest on
// one CPU, taking turns going first. The two measure different things: the
// probe every interruption of a spinning loop, cyclictest the wake-up
// latency of a thread sleeping 1 ms between wake-ups.
type NoiseResult struct {
	CPU    int
	Sched  cpusched.Sched
	Rounds []NoiseRound
}

// NoiseRound is one round of both tools.
type NoiseRound struct {
	ProbeFirst bool
	Probe      rundir.Noise // rig noise's result (osnoise's view of the same window in it)
	Cyc        Cyclictest
}

// noise runs the noise part: cfg.NoiseRounds rounds of cfg.NoiseTime per
// tool on the responder CPU, the CPU the other parts' busy loops spin on.
func (b *runner) noise(ctx context.Context) error {
	cfg := b.cfg
	nr := &NoiseResult{CPU: cfg.ResponderCPU, Sched: cfg.NoiseSched}
	b.res.Noise = nr
	count := int(cfg.NoiseTime / time.Millisecond)
	for k := range cfg.NoiseRounds {
		var rd NoiseRound
		dir := filepath.Join(cfg.Dir, "noise")
		probe := func() error {
			b.logf("noise round %d: rig noise", k+1)
			p, err := rigNoise(ctx, cfg, filepath.Join(dir, "rig-noise-"+strconv.Itoa(k)+".json"))
			if err == nil {
				rd.Probe, rd.ProbeFirst = *p, rd.Cyc.N() == 0 // cyclictest has not run yet
			}
			return err
		}
		cyc := func() error {
			b.logf("noise round %d: cyclictest", k+1)
			// -m: mlockall, as the probe does; -p: its SCHED_FIFO priority.
			extra := []string{"-m"}
			if cfg.NoiseSched.Policy == cpusched.FIFO {
				extra = append(extra, "-p", strconv.Itoa(cfg.NoiseSched.Priority))
			}
			c, err := cyclictest(ctx, filepath.Join(dir, "cyclictest-"+strconv.Itoa(k)+".txt"), cfg.ResponderCPU, count, extra...)
			if err == nil {
				rd.Cyc = *c
			}
			return err
		}
		if err := rotate(k, probe, cyc); err != nil {
			return err
		}
		nr.Rounds = append(nr.Rounds, rd)
	}
	return nil
}

// rigNoise runs `rig noise` on the responder CPU and reads its result.
func rigNoise(ctx context.Context, cfg Config, file string) (*rundir.Noise, error) {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return nil, err
	}
	argv := []string{cfg.Rig, "noise", "--cpu", strconv.Itoa(cfg.ResponderCPU), "--for", cfg.NoiseTime.String(),
		"--sched", cfg.NoiseSched.String(), "--out", file}
	out, _, err := runCapture(ctx, argv, cfg.NoiseTime+30*time.Second)
	if err != nil {
		return nil, fmt.Errorf("rig noise: %w\n%s", err, tail(out, 8))
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("rig noise: %w", err)
	}
	var n rundir.Noise
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, fmt.Errorf("rig noise result %s: %w", file, err)
	}
	if len(n.Gaps) == 0 || n.DurationNS <= 0 || n.Interrupted != "" {
		return nil, fmt.Errorf("rig noise result %s: no whole window (%d gap rows over %d ns, interrupted %q)", file, len(n.Gaps), n.DurationNS, n.Interrupted)
	}
	return &n, nil
}

// above is the wake-ups of at least ns (whole µs: a bucket holds the
// latencies from its µs up to the next), the overflows included.
func (c *Cyclictest) above(ns uint64) int64 {
	n := c.Overflows
	for us, v := range c.Buckets {
		if uint64(us)*1000 >= ns {
			n += v
		}
	}
	return n
}

// noiseTable writes the "Platform noise" table (nothing without the part).
func (r *Results) noiseTable(b *strings.Builder) {
	nr := r.Noise
	if nr == nil || len(nr.Rounds) == 0 {
		return
	}
	first := nr.Rounds[0].Probe
	fmt.Fprintf(b, "\n## Platform noise on CPU %d\n\n", nr.CPU)
	fmt.Fprintf(b, "%s of %v per tool on CPU %d (the responder CPU of the other parts), `rig noise` and cyclictest taking turns going first, both %s. Two different quantities: `rig noise` counts every interruption of a loop that only reads the CPU's counter (a gap between two reads); cyclictest (`-m -i 1000 -t 1 -a %d --laptop -h 20000`) measures how late a thread sleeping 1 ms wakes up, once a wake-up — an interruption between two wake-ups is invisible to it. osnoise is the kernel's osnoise tracer timing every interrupt, softirq, NMI and thread on the CPU during the probe's own window (run by `rig noise`, docs/noise.md).\n\n",
		plural(len(nr.Rounds), "round"), r.Config.NoiseTime, nr.CPU, schedName(nr.Sched), nr.CPU)
	b.WriteString("| tool | round | samples |")
	for _, g := range first.Gaps {
		fmt.Fprintf(b, " above %s µs /s |", thr(g.AboveNS))
	}
	b.WriteString(" p99 | p99.9 | longest |\n|---|---|---:|" + strings.Repeat("---:|", len(first.Gaps)+3) + "\n")
	row := func(tool, round, n string, cells []string, p99, p999, longest string) {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", tool, round, n, strings.Join(cells, " | "), p99, p999, longest)
	}
	rname := func(k int, probeFirst bool) string {
		if probeFirst {
			return strconv.Itoa(k+1) + " (rig noise first)"
		}
		return strconv.Itoa(k+1) + " (cyclictest first)"
	}
	// rig noise: per round, then the gaps of all rounds over their time.
	var counts []uint64
	var reads, longest uint64
	var dur int64
	for k, rd := range nr.Rounds {
		var cells []string
		for i, g := range rd.Probe.Gaps {
			cells = append(cells, fmt.Sprintf("%.1f", g.PerSec))
			if len(counts) <= i {
				counts = append(counts, 0)
			}
			counts[i] += g.Count
		}
		reads, dur, longest = reads+rd.Probe.Floor.Reads, dur+rd.Probe.DurationNS, max(longest, rd.Probe.LongestNS)
		row("rig noise (gaps)", rname(k, rd.ProbeFirst), strconv.FormatUint(rd.Probe.Floor.Reads, 10), cells, "n/a", "n/a", usU(rd.Probe.LongestNS))
	}
	var cells []string
	for _, c := range counts {
		cells = append(cells, fmt.Sprintf("%.1f", float64(c)/(float64(dur)/1e9)))
	}
	row("rig noise (gaps)", "all", strconv.FormatUint(reads, 10), cells, "n/a", "n/a", usU(longest))
	// cyclictest: wake-ups of at least each threshold a second of its
	// wake-ups at 1 ms, and its percentiles.
	var pooled Cyclictest
	cycRow := func(round string, c *Cyclictest) {
		s := c.summary()
		var cells []string
		for _, g := range first.Gaps {
			cells = append(cells, fmt.Sprintf("%.1f", float64(c.above(g.AboveNS))*1000/float64(max(s.N, 1))))
		}
		row("cyclictest (wake-up latency)", round, strconv.Itoa(s.N), cells, us(s.P99), us(s.P999), us(s.Max))
	}
	for k, rd := range nr.Rounds {
		cycRow(rname(k, rd.ProbeFirst), &rd.Cyc)
		pooled.add(&rd.Cyc)
	}
	cycRow("all", &pooled)
	// osnoise: the events in the probe's window, or why there were none.
	var detail []string
	for k, rd := range nr.Rounds {
		o := rd.Probe.OSNoise
		if o == nil {
			na := []string{}
			for range first.Gaps {
				na = append(na, "not available")
			}
			row("osnoise (in the probe's window)", rname(k, rd.ProbeFirst), "not available: "+orNA(rd.Probe.OSNoiseMissing), na, "n/a", "n/a", "not available")
			continue
		}
		var cells []string
		for _, g := range rd.Probe.Gaps {
			c := "not counted"
			if g.OSNoise != nil {
				c = fmt.Sprintf("%.1f", float64(*g.OSNoise)/(float64(rd.Probe.DurationNS)/1e9))
			}
			cells = append(cells, c)
		}
		row("osnoise (in the probe's window)", rname(k, rd.ProbeFirst), strconv.FormatUint(o.Events, 10), cells, "n/a", "n/a", usU(o.LongestNS))
		detail = append(detail, fmt.Sprintf("round %d: noise %.3f ms, max single noise %s µs (%s), interference irq %d, softirq %d, thread %d, nmi %d, %d events lost",
			k+1, float64(o.TotalNS)/1e6, usU(o.LongestNS), o.LongestName, o.ByKind["irq"], o.ByKind["softirq"], o.ByKind["thread"], o.ByKind["nmi"], o.Lost))
	}
	if len(detail) > 0 {
		fmt.Fprintf(b, "\nosnoise (%s): %s.\n", first.OSNoise.Mode, strings.Join(detail, "; "))
	}
	for k, rd := range nr.Rounds { // what the host did to the loop (RT throttling, mlockall, drift)
		for _, n := range rd.Probe.Notes {
			fmt.Fprintf(b, "\nrig noise round %d: %s\n", k+1, n)
		}
	}
	typLo, typHi, short := first.Floor.TypicalNS, first.Floor.TypicalNS, first.Floor.ShortestNS
	for _, rd := range nr.Rounds {
		f := rd.Probe.Floor
		typLo, typHi, short = min(typLo, f.TypicalNS), max(typHi, f.TypicalNS), min(short, f.ShortestNS)
	}
	fmt.Fprintf(b, "\nThe probe's detection floor: %.1f–%.1f ns between two reads (typical: the mean of those not above 1 µs), %.1f ns shortest, one tick %.3f ns, over %d reads: an interruption shows as a gap of its length plus one read interval, and is recorded above %s µs.\n",
		typLo, typHi, short, first.Floor.TickNS, reads, thr(first.Gaps[0].AboveNS))
	fmt.Fprintf(b, "\nRule: `rig noise` — samples = reads of the counter (%s at %.3f MHz, calibrated against %s before each loop); a gap above T = two consecutive reads more than T apart (one read interval included); per second = gaps ÷ the loop's duration on CLOCK_MONOTONIC, *all* = the gaps of every round ÷ their total duration; longest = the longest gap. cyclictest — samples = wake-ups (CLOCK_MONOTONIC, its default clock; whole µs, truncated); per second = wake-ups of at least T ÷ (samples × 1 ms, its interval); p99/p99.9 nearest rank over its histogram (an overflow rank reports its max), *all* pooled over the rounds; longest = its max. osnoise — samples = noise events in the window (the probe's own thread left out; net durations, nested noise subtracted), per second = events above T ÷ the probe's duration. n/a: the quantity does not exist for that tool (the probe and osnoise count every event, they do not sample).\n",
		first.Counter.Name, first.Counter.HzCalibrated/1e6, first.Counter.CalibratedBy)
	fmt.Fprintf(b, "\nWhat this shows: %s\n", noiseShows(nr, counts, dur, longest, &pooled))
}

// noiseShows is the table's reading, from its figures.
func noiseShows(nr *NoiseResult, counts []uint64, dur int64, longest uint64, cyc *Cyclictest) string {
	gaps := nr.Rounds[0].Probe.Gaps
	perSec := float64(counts[0]) / (float64(dur) / 1e9)
	var s []string
	s = append(s, fmt.Sprintf("the spinning loop lost the CPU %.0f times a second for more than %s µs", perSec, thr(gaps[0].AboveNS)))
	if perSec > 1000 {
		s[0] += ", more often than cyclictest wakes up (1000/s): most of those interruptions fall between its wake-ups and it cannot see them"
	}
	var rate []string
	for _, g := range gaps {
		if uint64(cyc.MinUS)*1000 >= g.AboveNS {
			rate = append(rate, thr(g.AboveNS))
		}
	}
	if len(rate) > 0 {
		s = append(s, fmt.Sprintf("every cyclictest wake-up took at least %d µs, so its counts at %s µs are its wake-up rate, not interruptions", cyc.MinUS, strings.Join(rate, ", ")))
	}
	worse := "the probe's"
	if uint64(cyc.MaxUS)*1000 > longest {
		worse = "cyclictest's"
	}
	s = append(s, fmt.Sprintf("the longest gap was %s µs, the worst wake-up %d µs (%s is the longer stall)", usU(longest), cyc.MaxUS, worse))
	return strings.Join(s, "; ") + "."
}

// schedName is the tools' policy as the table states it.
func schedName(s cpusched.Sched) string {
	if s.Policy == cpusched.FIFO {
		return fmt.Sprintf("SCHED_FIFO priority %d (rig noise --sched %s, cyclictest -p %d)", s.Priority, s, s.Priority)
	}
	return "SCHED_OTHER"
}

// usU is ns in µs, as us.
func usU(ns uint64) string { return us(int64(ns)) }

// thr is a threshold in µs, as few digits as it takes.
func thr(ns uint64) string { return strconv.FormatFloat(float64(ns)/1e3, 'f', -1, 64) }
