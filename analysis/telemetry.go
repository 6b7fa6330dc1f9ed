package analysis

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
)

// Telemetry summary: "what else ran on the responder CPU" (docs/reports.md).
// It reads telemetry.json as internal/telemetry writes it: rundir.TelemetryResult.

// telResult is one round's telemetry.json as the summary reads it
// (decodeTelemetry): checked, with the watched thread's context switches
// added as two sources. Times are CLOCK_REALTIME ns of the responder host.
type telResult struct {
	rundir.TelemetryResult
	Error string `json:"error"` // the agent's {"error": "..."} when telemetry could not run
}

// Kinds of the two sources made from the watched thread's context
// switches (they are per-interval fields in the file, not sources).
const (
	kindVol   = "ctx_vol"
	kindInvol = "ctx_invol"
)

// decodeTelemetry parses telemetry.json and checks what the summary
// relies on (intervals ordered, one delta per source, thread indexes in
// range). The agent's error form comes back as a telemetryError.
func decodeTelemetry(b []byte) (*telResult, error) {
	var r telResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	if r.Error != "" {
		return nil, telemetryError(r.Error)
	}
	if len(r.CPUs) == 0 || len(r.Intervals) == 0 {
		return nil, errors.New("no CPUs or no intervals: nothing was sampled")
	}
	prev := int64(0)
	for i, iv := range r.Intervals {
		if len(iv.Deltas) != len(r.Sources) {
			return nil, fmt.Errorf("interval %d has %d deltas for %d sources", i, len(iv.Deltas), len(r.Sources))
		}
		if iv.End <= iv.Start || iv.Start < prev {
			return nil, fmt.Errorf("interval %d [%d, %d] is empty or out of order", i, iv.Start, iv.End)
		}
		prev = iv.End
		for _, k := range iv.Threads {
			if k < 0 || k >= len(r.Threads) {
				return nil, fmt.Errorf("interval %d names thread %d of %d", i, k, len(r.Threads))
			}
		}
	}
	if r.Start > r.Intervals[0].Start || r.End < prev {
		r.Start, r.End = r.Intervals[0].Start, prev
	}
	// The watched thread's context switches become two sources; the sum of
	// the interval deltas is the total (the round total of the file reads 0
	// when the thread exited before the last sample).
	if r.Thread != nil {
		var vol, inv uint64
		for _, iv := range r.Intervals {
			vol += iv.Vol
			inv += iv.Invol
		}
		secs := float64(r.End-r.Start) / 1e9
		for _, s := range []struct {
			kind string
			tot  uint64
		}{{kindVol, vol}, {kindInvol, inv}} {
			src := rundir.TelemetrySource{CPU: -1, Kind: s.kind, Total: s.tot}
			if secs > 0 {
				src.PerSec = float64(s.tot) / secs
			}
			r.Sources = append(r.Sources, src)
		}
		for i := range r.Intervals {
			iv := &r.Intervals[i]
			iv.Deltas = append(iv.Deltas[:len(iv.Deltas):len(iv.Deltas)], iv.Vol, iv.Invol)
		}
	}
	return &r, nil
}

type telemetryError string

func (e telemetryError) Error() string { return string(e) }

// srcKey identifies a source across rounds.
func srcKey(s *rundir.TelemetrySource) string { return fmt.Sprintf("%d/%s/%s", s.CPU, s.Kind, s.ID) }

// srcLabel is a short human name: "cpu1 irq 36 virtio1-req.0".
func srcLabel(s *rundir.TelemetrySource) string {
	switch s.Kind {
	case kindVol:
		return "responder thread voluntary ctx switches"
	case kindInvol:
		return "responder thread involuntary ctx switches"
	case "idle_usage":
		return fmt.Sprintf("cpu%d idle entries %s %s", s.CPU, s.ID, s.Name)
	case "idle_time_us":
		return fmt.Sprintf("cpu%d idle residency %s %s", s.CPU, s.ID, s.Name)
	}
	l := fmt.Sprintf("cpu%d %s %s", s.CPU, s.Kind, s.ID)
	if s.CPU < 0 {
		l = s.Kind + " " + s.ID
	}
	if s.Name != "" && s.Name != s.ID {
		l += " " + s.Name
	}
	return l
}

// alwaysShown are sources that mean trouble whatever their rate.
func alwaysShown(s *rundir.TelemetrySource) bool {
	return s.Kind == "nic" || s.Kind == "thermal" || s.Kind == kindInvol || s.Kind == kindVol ||
		(s.Kind == "softnet" && (s.ID == "dropped" || s.ID == "time_squeeze"))
}

// at returns the interval that contains t (Start < t ≤ End) or -1, as
// rundir.TelemetryResult.IntervalAt (which returns a pointer, not the index).
func (r *telResult) at(t int64) int {
	i, _ := slices.BinarySearchFunc(r.Intervals, t, func(iv rundir.TelemetryInterval, t int64) int {
		if iv.End < t {
			return -1
		}
		return 1
	})
	if i == len(r.Intervals) || t <= r.Intervals[i].Start {
		return -1
	}
	return i
}

// busiest is rundir.TelemetryResult.Summary with this package's labels: the n
// sources that moved most in interval i (idle residency excluded: it is
// time, not events) and the threads a scan saw at its end, other than the
// responder thread.
func (r *telResult) busiest(i, n int) string {
	iv := &r.Intervals[i]
	type sd struct {
		k int
		d uint64
	}
	var top []sd
	for k, d := range iv.Deltas {
		if d > 0 && r.Sources[k].Kind != "idle_time_us" {
			top = append(top, sd{k, d})
		}
	}
	slices.SortStableFunc(top, func(a, b sd) int { return cmpDesc(a.d, b.d) })
	var parts []string
	for _, t := range top[:min(n, len(top))] {
		parts = append(parts, fmt.Sprintf("%s ×%d", srcLabel(&r.Sources[t.k]), t.d))
	}
	for _, k := range iv.Threads {
		if th := r.Threads[k]; r.Thread == nil || th.TID != r.Thread.TID {
			parts = append(parts, "thread "+th.Comm)
		}
	}
	if len(parts) == 0 {
		return "nothing counted"
	}
	return strings.Join(parts, ", ")
}

func cmpDesc[T int | uint64 | float64 | int64](a, b T) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// standout is a source that moved more than usual in one interval.
type standout struct {
	src      *rundir.TelemetrySource
	delta    uint64
	expected float64
}

// unusual lists the sources of interval i whose count is more than twice
// the usual for the interval's length (the round's median per-interval
// rate; a starved sampler makes long intervals) and at least 1, most
// unusual first, at most n.
func (r *telResult) unusual(i int, medians []float64, n int) []standout {
	iv := &r.Intervals[i]
	secs := float64(iv.End-iv.Start) / 1e9
	var out []standout
	for k, d := range iv.Deltas {
		exp := medians[k] * secs
		if r.Sources[k].Kind == "idle_time_us" || d == 0 || float64(d) <= 2*exp {
			continue
		}
		out = append(out, standout{&r.Sources[k], d, exp})
	}
	score := func(s standout) float64 { return (float64(s.delta) + 1) / (s.expected + 1) }
	slices.SortStableFunc(out, func(a, b standout) int { return cmpDesc(score(a), score(b)) })
	return out[:min(n, len(out))]
}

// medianRates is each source's median (lower middle) per-interval rate,
// per second.
func (r *telResult) medianRates() []float64 {
	out := make([]float64, len(r.Sources))
	col := make([]float64, len(r.Intervals))
	for k := range r.Sources {
		for i, iv := range r.Intervals {
			col[i] = float64(iv.Deltas[k]) / (float64(iv.End-iv.Start) / 1e9)
		}
		out[k] = medianF(col)
	}
	return out
}

// Sizes of the section.
const (
	telTopSources = 8
	telTopThreads = 8
)

// telRound is one round's decoded telemetry, or why there is none.
type telRound struct {
	k       int
	r       *telResult
	medians []float64
	why     string
}

// SummarizeTelemetry is the default TelemetryFunc. For one arm it reads
// every round's telemetry.json and builds: the rate of every source on the
// responder CPU (and SMT sibling) per second, median [min–max] across the
// rounds, top telTopSources plus the ones that mean trouble; the threads
// other than the responder thread seen running there; and for the arm's
// worst headline samples the telemetry interval each fell in, with what
// moved more than usual in it. A missing, unreadable or error
// telemetry.json is one line; it never fails. Rounds whose responder CPU
// was chosen by ranking (cpu-rank.json) lead with the ranking.
func SummarizeTelemetry(a *TelemetryArm) ([]TelemetryBlock, error) {
	out := rankBlocks(a) // the CPU the rounds ran on, when a ranking chose it
	text := func(f string, args ...any) { out = append(out, TelemetryBlock{Text: fmt.Sprintf(f, args...)}) }
	var rounds []telRound
	byK := map[int]*telRound{}
	var missing []string
	for _, rd := range a.Rounds {
		tr := telRound{k: rd.K}
		path := rd.TelemetryPath()
		b, err := rundir.ReadRegular(path) // a FIFO must not hang the report
		var te telemetryError
		switch {
		case errors.Is(err, os.ErrNotExist):
			tr.why = "no telemetry.json"
		case err != nil:
			tr.why = err.Error()
		default:
			tr.r, err = decodeTelemetry(b)
			switch {
			case errors.As(err, &te):
				tr.why = "telemetry could not run: " + string(te)
			case err != nil:
				tr.why = fmt.Sprintf("%s: damaged: %v", path, err)
			default:
				tr.medians = tr.r.medianRates()
			}
		}
		if tr.why != "" {
			missing = append(missing, fmt.Sprintf("round %d: %s", rd.K, tr.why))
		}
		rounds = append(rounds, tr)
	}
	var ok []*telRound
	for i := range rounds {
		byK[rounds[i].k] = &rounds[i]
		if rounds[i].r != nil {
			ok = append(ok, &rounds[i])
		}
	}
	if len(missing) > 0 {
		text("No telemetry for %d of %d rounds: %s.", len(missing), len(rounds), strings.Join(missing, "; "))
	}
	if len(ok) == 0 {
		return out, nil
	}
	first := ok[0].r
	watched, from := first.Watched, fmt.Sprintf("CPU %d", first.PinCPU)
	if watched == "" {
		watched = "the responder CPU and its SMT siblings"
	}
	if first.PinCPU < 0 {
		from = "an unpinned thread"
	}
	text("%d of %d rounds sampled CPU %s (%s) every %s from %s, from procfs/sysfs. "+
		"Rates are per second over each round; a cell is the median across those rounds [min–max]; a source that did not move in a round counts as 0 there.",
		len(ok), len(rounds), cpuList(first.CPUs), watched, time.Duration(first.IntervalNS), from)
	out = append(out, rateTable(ok))
	if tb, ok := threadTable(ok); ok {
		out = append(out, tb)
	}
	out = append(out, worstBlocks(a, byK)...)
	var extra []string
	for _, tr := range ok {
		r := tr.r
		if r.ReadErrors > 0 {
			extra = append(extra, fmt.Sprintf("round %d: %d failed reads (first: %s)", tr.k, r.ReadErrors, r.FirstError))
		}
		if r.Missed > 0 {
			extra = append(extra, fmt.Sprintf("round %d: %d samples not taken (buffer full)", tr.k, r.Missed))
		}
		for _, c := range r.AffinityChanges {
			extra = append(extra, fmt.Sprintf("round %d: IRQ %d affinity changed from %s to %s at %s", tr.k, c.IRQ, c.From, c.To, clock(c.T)))
		}
		for _, n := range r.Notes {
			if !slices.Contains(extra, n) {
				extra = append(extra, n)
			}
		}
	}
	if len(extra) > 0 {
		text("Telemetry notes: %s.", strings.Join(extra, "; "))
	}
	return out, nil
}

// rateTable is "what else ran on the responder CPU": per-second rates.
func rateTable(ok []*telRound) TelemetryBlock {
	type agg struct {
		src   rundir.TelemetrySource
		rates []float64
		moved int
	}
	byKey := map[string]*agg{}
	var order []string
	for i, tr := range ok {
		for _, s := range tr.r.Sources {
			g := byKey[srcKey(&s)]
			if g == nil {
				g = &agg{src: s, rates: make([]float64, len(ok))}
				byKey[srcKey(&s)] = g
				order = append(order, srcKey(&s))
			}
			g.rates[i] += s.PerSec
			if s.Total > 0 {
				g.moved++
			}
		}
	}
	var events, idle []*agg
	for _, k := range order {
		g := byKey[k]
		if g.src.Kind == "idle_time_us" {
			idle = append(idle, g)
		} else {
			events = append(events, g)
		}
	}
	med := func(g *agg) float64 { return medianF(g.rates) }
	slices.SortStableFunc(events, func(a, b *agg) int { return cmpDesc(med(a), med(b)) })
	bl := TelemetryBlock{Head: []string{"source", "per second", "rounds it moved in"}}
	shown, left := 0, 0
	for _, g := range events {
		if shown >= telTopSources && !alwaysShown(&g.src) {
			left++
			continue
		}
		shown++
		lo, hi := slices.Min(g.rates), slices.Max(g.rates)
		bl.Rows = append(bl.Rows, []string{srcLabel(&g.src), fmt.Sprintf("%s [%s–%s]", rate(med(g)), rate(lo), rate(hi)), fmt.Sprintf("%d/%d", g.moved, len(ok))})
	}
	for _, g := range idle {
		// µs of residency per second → share of the time.
		lo, hi := slices.Min(g.rates)/1e4, slices.Max(g.rates)/1e4
		bl.Rows = append(bl.Rows, []string{srcLabel(&g.src), fmt.Sprintf("%.1f %% [%.1f–%.1f] of the time", med(g)/1e4, lo, hi), fmt.Sprintf("%d/%d", g.moved, len(ok))})
	}
	bl.Text = fmt.Sprintf("What else ran on the responder CPU: the %d busiest sources by median rate", min(telTopSources, len(events)))
	if left > 0 {
		bl.Text += fmt.Sprintf("; %d more moved less and are left out (each round's telemetry.json has them all)", left)
	}
	bl.Text += ". NIC and softnet drops and the responder thread's context switches are always shown; idle residency is a share of the time."
	return bl
}

// threadTable lists the threads other than the responder thread that ran on
// the measured CPUs, by name across the rounds.
func threadTable(ok []*telRound) (TelemetryBlock, bool) {
	type agg struct {
		name   string
		rounds map[int]bool
		tids   map[int]bool
		scans  int
		runNS  uint64
	}
	byName := map[string]*agg{}
	totalScans, lastCPU, period := 0, false, time.Duration(0)
	for _, tr := range ok {
		r := tr.r
		if r.ThreadScanEvery > 0 {
			// Scans at samples ThreadScanEvery, 2·ThreadScanEvery, … (sample 0 only
			// primes the counters).
			totalScans += (r.Samples - 1) / r.ThreadScanEvery
			period = time.Duration(int64(r.ThreadScanEvery) * r.IntervalNS)
		}
		lastCPU = lastCPU || r.ThreadsMode == "last_cpu"
		for _, th := range r.Threads {
			name := th.Comm
			if r.Thread != nil {
				if th.TID == r.Thread.TID {
					continue
				}
				if th.PID == r.Thread.PID {
					name += " (responder process)"
				}
			}
			g := byName[name]
			if g == nil {
				g = &agg{name: name, rounds: map[int]bool{}, tids: map[int]bool{}}
				byName[name] = g
			}
			g.rounds[tr.k] = true
			g.tids[th.TID] = true
			g.runNS += th.RunNS
		}
		// A scan that saw several threads of one name counts once.
		for _, iv := range r.Intervals {
			seen := map[*agg]bool{}
			for _, k := range iv.Threads {
				th := r.Threads[k]
				name := th.Comm
				if r.Thread != nil && th.PID == r.Thread.PID {
					name += " (responder process)"
				}
				if g := byName[name]; g != nil && !seen[g] {
					seen[g] = true
					g.scans++
				}
			}
		}
	}
	if totalScans == 0 && len(byName) == 0 {
		return TelemetryBlock{}, false
	}
	var all []*agg
	for _, g := range byName {
		all = append(all, g)
	}
	slices.SortFunc(all, func(a, b *agg) int {
		if c := cmpDesc(a.scans, b.scans); c != 0 {
			return c
		}
		if c := cmpDesc(a.runNS, b.runNS); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	bl := TelemetryBlock{Head: []string{"thread (comm)", "threads", "rounds", "scans that saw it run", "CPU time (all CPUs)"}}
	for _, g := range all[:min(telTopThreads, len(all))] {
		bl.Rows = append(bl.Rows, []string{g.name, strconv.Itoa(len(g.tids)), fmt.Sprintf("%d/%d", len(g.rounds), len(ok)),
			fmt.Sprintf("%d/%d", g.scans, totalScans), fmt.Sprintf("%.2f ms", float64(g.runNS)/1e6)})
	}
	how := "a scan counts a thread when it ran on the CPU since the previous scan"
	if lastCPU {
		how = "without schedstat a scan counts every thread whose last CPU was a measured one, even asleep"
	}
	bl.Text = fmt.Sprintf("Threads other than the responder thread seen on the CPU: %d names", len(all))
	if len(all) > telTopThreads {
		bl.Text += fmt.Sprintf(" (%d shown, %d left out)", telTopThreads, len(all)-telTopThreads)
	}
	bl.Text += fmt.Sprintf(", %d scans over the rounds; %s, a scan every %s; CPU time is the threads' total over the rounds, on any CPU.", totalScans, how, period)
	if len(all) == 0 {
		bl.Text = fmt.Sprintf("No thread other than the responder thread was seen running on the CPU in %d scans.", totalScans)
	}
	return busyText(ok, bl), true
}

// busyText adds to the thread table how busy each CPU was — every task of
// the node, which the names may not cover — and why names may be missing.
func busyText(ok []*telRound, bl TelemetryBlock) TelemetryBlock {
	share := map[int][]float64{}
	var cpus []int
	var srcs []string
	note := ""
	for _, tr := range ok {
		for _, b := range tr.r.Busy {
			if share[b.CPU] == nil {
				cpus = append(cpus, b.CPU)
			}
			share[b.CPU] = append(share[b.CPU], 100*b.Share)
			if !slices.Contains(srcs, b.Source) {
				srcs = append(srcs, b.Source)
			}
		}
		note = cmp.Or(note, tr.r.ThreadsNote)
	}
	var parts []string
	slices.Sort(cpus)
	for _, c := range cpus {
		v := share[c]
		parts = append(parts, fmt.Sprintf("CPU %d %.1f %% [%.1f–%.1f] in %d rounds", c, medianF(v), slices.Min(v), slices.Max(v), len(v)))
	}
	if len(parts) > 0 {
		bl.Text += fmt.Sprintf(" Busy (every task of the node, named or not; %s): %s, median [min–max] of the rounds.", strings.Join(srcs, ", "), strings.Join(parts, "; "))
	}
	if note != "" {
		bl.Text += " Names: " + note + "."
	}
	return bl
}

// worstBlocks lines the arm's worst samples up with the telemetry
// intervals they fell in.
func worstBlocks(a *TelemetryArm, byK map[int]*telRound) []TelemetryBlock {
	if len(a.Worst) == 0 {
		return []TelemetryBlock{{Text: fmt.Sprintf("Worst samples: %s was not computed for this arm; nothing to line up.", a.Metric)}}
	}
	bl := TelemetryBlock{Head: []string{"#", "round", "seq", a.Metric + " µs", "time (UTC)", "stamp", "interval", "more than twice the usual for its length", "busiest in the interval"}}
	counts := map[string]int{}
	var order []string
	found, intervals, stamps := 0, 0, map[string]bool{}
	seen := map[[2]int]int{}            // (round, interval) → # of its first row
	seenLabels := map[[2]int][]string{} // what stood out in it
	for i, w := range a.Worst {
		row := []string{strconv.Itoa(i + 1), strconv.Itoa(w.Round), strconv.FormatUint(w.Seq, 10), FormatUS(w.ValueNS)}
		ps := PlacedSample{WorstSample: w, Unusual: []string{}}
		tr := byK[w.Round]
		if w.At != "" {
			stamps[w.At] = true
		}
		switch {
		case w.At == "":
			row = append(row, "—", "none", "no CLOCK_REALTIME stamp (NIC stamps are PHC time)", "—", "—")
		case tr == nil || tr.r == nil:
			why := "round not analysed"
			if tr != nil {
				why = tr.why
			}
			row = append(row, clock(w.AtNS), w.At, "no telemetry: "+why, "—", "—")
		default:
			r := tr.r
			iv := r.at(w.AtNS)
			if iv < 0 {
				row = append(row, clock(w.AtNS), w.At, fmt.Sprintf("outside the sampled time (%s…%s)", clock(r.Start), clock(r.End)), "—", "—")
				break
			}
			found++
			ps.Placed = true
			it := &r.Intervals[iv]
			where := fmt.Sprintf("+%.1f s, %.0f ms", float64(it.Start-r.Start)/1e9, float64(it.End-it.Start)/1e6)
			key := [2]int{w.Round, iv}
			if first, ok := seen[key]; ok {
				// One stall often makes several of the worst samples.
				same := fmt.Sprintf("same interval as #%d", first)
				row = append(row, clock(w.AtNS), w.At, where, same, same)
				for _, l := range seenLabels[key] {
					counts[l]++
				}
				ps.Unusual = append(ps.Unusual, seenLabels[key]...)
				break
			}
			seen[key] = i + 1
			intervals++
			var un []string
			for _, s := range r.unusual(iv, tr.medians, 4) {
				l := srcLabel(s.src)
				un = append(un, fmt.Sprintf("%s ×%d (usual %.0f)", l, s.delta, s.expected))
				if counts[l] == 0 {
					order = append(order, l)
				}
				counts[l]++
				seenLabels[key] = append(seenLabels[key], l)
			}
			ps.Unusual = append(ps.Unusual, seenLabels[key]...)
			row = append(row, clock(w.AtNS), w.At, where, orDash(strings.Join(un, ", ")), r.busiest(iv, 3))
		}
		bl.Rows = append(bl.Rows, row)
		bl.Samples = append(bl.Samples, ps)
	}
	var used []string
	for s := range stamps {
		used = append(used, s)
	}
	slices.Sort(used)
	bl.Text = fmt.Sprintf("The %d largest %s samples (%s) after warm-up, over all rounds, and the telemetry interval each fell in, found by the request's CLOCK_REALTIME stamp (%s). "+
		"req_rx_sw, req_rx_user, rep_tx_* are the responder host's clock, the one telemetry uses; cap_req_sw, due, tx_user are another host's realtime clock and are off by its clock error. "+
		"Interval = its start after the round's first sample, and its length (a sampler starved of CPU makes it longer than nominal); "+
		"usual = the round's median per-interval rate of the source times that length.",
		len(a.Worst), a.Metric, orDash(a.Source), orDash(strings.Join(used, ", ")))
	out := []TelemetryBlock{bl}
	// The one-line finding: what moved more than usual in several of them.
	slices.SortStableFunc(order, func(x, y string) int { return cmpDesc(counts[x], counts[y]) })
	var co []string
	for _, l := range order {
		if counts[l] >= 2 || (found == 1 && counts[l] == 1) {
			co = append(co, fmt.Sprintf("%s (%d of %d)", l, counts[l], found))
		}
	}
	switch {
	case found == 0:
		out = append(out, TelemetryBlock{Text: fmt.Sprintf("None of the %d worst samples could be placed in a telemetry interval.", len(a.Worst))})
	case len(co) == 0:
		out = append(out, TelemetryBlock{Text: fmt.Sprintf("In the %d telemetry intervals of the %d worst samples placed, no source moved more than usual for more than one sample.", intervals, found)})
	default:
		out = append(out, TelemetryBlock{Text: fmt.Sprintf("The %d worst samples placed (in %d telemetry intervals) coincide with more than usual: %s.", found, intervals, strings.Join(co[:min(4, len(co))], "; "))})
	}
	return out
}

func medianF(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[(len(s)-1)/2] // lower middle, as the tables
}

func rate(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 1000:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

func clock(ns int64) string { return time.Unix(0, ns).UTC().Format("15:04:05.000000") }

func cpuList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

// keepLargest inserts w into top (largest ValueNS first, earlier sample
// first on ties) and keeps at most n.
func keepLargest(top []WorstSample, w WorstSample, n int) []WorstSample {
	if len(top) == n && w.ValueNS <= top[n-1].ValueNS {
		return top
	}
	i := len(top)
	for i > 0 && top[i-1].ValueNS < w.ValueNS {
		i--
	}
	if len(top) < n {
		top = append(top, WorstSample{})
	}
	copy(top[i+1:], top[i:len(top)-1])
	top[i] = w
	return top
}

// largest returns the n largest of ws (value, then round and seq).
func largest(ws []WorstSample, n int) []WorstSample {
	s := slices.Clone(ws)
	slices.SortStableFunc(s, func(a, b WorstSample) int {
		if c := cmpDesc(a.ValueNS, b.ValueNS); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Round, b.Round); c != 0 {
			return c
		}
		return cmp.Compare(a.Seq, b.Seq)
	})
	return s[:min(n, len(s))]
}

// realtimeOrder is the preference of stamps to place a sample in time:
// the responder's own (the telemetry host's clock) first.
var realtimeOrder = []samples.Stamp{samples.ReqRxSW, samples.ReqRxUser, samples.RepTxUser, samples.RepTxSW,
	samples.CapReqSW, samples.Due, samples.TxUser}

// realtimeStamp returns the first stamp of realtimeOrder that rec carries
// on CLOCK_REALTIME in round j.
func realtimeStamp(j *samples.Joined, rec *samples.Record) (string, int64) {
	for _, s := range realtimeOrder {
		if ck, ok := clockOf(j, s); ok && clockName(ck) == "CLOCK_REALTIME" && rec.T[s] != 0 {
			return s.String(), rec.T[s]
		}
	}
	return "", 0
}
