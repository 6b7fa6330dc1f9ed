package analysis

import (
	"bytes"
	"cmp"
	"fmt"
	"image/color"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Plot is one rendered chart in both formats.
type Plot struct {
	Name    string // file stem under plots/
	Title   string
	Caption string
	Metric  string // the metric plotted
	SVG     []byte
	PNG     []byte
}

// Plot sizes; PNGs at 1.5× screen resolution stay sharp on laptop screens.
const (
	plotW  = 8 * vg.Inch
	plotH  = 4.5 * vg.Inch
	pngDPI = 144
)

// logRatio is the spread (largest / smallest value) above which a latency
// axis is logarithmic: the median and a tail 30× above it both stay readable.
const logRatio = 30

// tailX maps a percentile (percent) to the x axis: log10(1/(1−p)), so 90 %,
// 99 %, 99.9 % … are evenly spaced.
func tailX(pct float64) float64 { return math.Log10(1 / (1 - pct/100)) }

// Plots renders the percentile-distribution chart of every metric (one line
// per arm, from the pooled HDR histogram after warm-up) and the headline
// metric over time, one chart per round (one series per arm, thinned: every
// sample above the round's p99 and every k-th of the rest; the warm-up
// samples and the worst samples the telemetry placed are marked).
func Plots(r *Report) ([]Plot, error) {
	var charts []func() (Plot, bool, error)
	for _, m := range r.metricsPresent() {
		charts = append(charts, func() (Plot, bool, error) { p, err := percentilePlot(r, m); return p, true, err })
	}
	rounds := map[int]bool{}
	for _, sc := range r.side.scatter {
		for _, s := range sc {
			rounds[s.Round] = true
		}
	}
	ks := make([]int, 0, len(rounds))
	for k := range rounds {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	for _, k := range ks {
		charts = append(charts, func() (Plot, bool, error) { p, err := scatterPlot(r, k); return p, true, err })
	}
	charts = append(charts, func() (Plot, bool, error) { return pairedPlot(r) })
	// Each chart draws alone from r, which none changes: on every CPU at
	// once, as rendering is most of a run's analysis.
	plots, ok, errs := make([]Plot, len(charts)), make([]bool, len(charts)), make([]error, len(charts))
	var wg sync.WaitGroup
	cpus := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, chart := range charts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cpus <- struct{}{}
			plots[i], ok[i], errs[i] = chart()
			<-cpus
		}()
	}
	wg.Wait()
	var out []Plot
	for i := range charts {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if ok[i] {
			out = append(out, plots[i])
		}
	}
	return out, nil
}

func render(p *plot.Plot, pl *Plot) error {
	svg := vgsvg.New(plotW, plotH)
	p.Draw(draw.New(svg))
	var b bytes.Buffer
	if _, err := svg.WriteTo(&b); err != nil {
		return err
	}
	pl.SVG = bytes.Clone(b.Bytes())
	b.Reset()
	img := vgimg.NewWith(vgimg.UseWH(plotW, plotH), vgimg.UseDPI(pngDPI))
	p.Draw(draw.New(img))
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&b); err != nil {
		return err
	}
	pl.PNG = b.Bytes()
	return nil
}

// latencyAxis sets the y axis for latencies ys (µs): logarithmic when
// they are all positive and spread more than logRatio, else linear. It
// returns what the caption says of the scale.
func latencyAxis(p *plot.Plot, what string, ys []float64) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, y := range ys {
		lo, hi = min(lo, y), max(hi, y)
	}
	if len(ys) == 0 || lo <= 0 || hi/lo < logRatio {
		p.Y.Label.Text = what + " (µs)"
		return "linear"
	}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = logTicks{}
	p.Y.Label.Text = what + " (µs, log scale)"
	return "logarithmic"
}

// headroom sets the y range so that the values ys fill the lower share
// of the plot (on the axis' own scale).
func headroom(p *plot.Plot, ys []float64, scale string, share float64) {
	if len(ys) == 0 || share <= 0 {
		return
	}
	lo, hi := slices.Min(ys), slices.Max(ys)
	if scale == "logarithmic" {
		p.Y.Min, p.Y.Max = lo, math.Pow(10, math.Log10(lo)+(math.Log10(hi)-math.Log10(lo))/share)
		return
	}
	lo = min(0, lo)
	p.Y.Min, p.Y.Max = lo, lo+(hi-lo)/share
}

// logTicks labels 1, 2 and 5 × 10^k inside the range (only 10^k when that
// makes more than 12 labels), with minor ticks at the other multiples.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= lo {
		return nil
	}
	dec := math.Floor(math.Log10(lo))
	decades := int(math.Ceil(math.Log10(hi))-dec) + 1
	var ts []plot.Tick
	for d := 0; d < decades; d++ {
		base := math.Pow(10, dec+float64(d))
		for i := 1; i < 10; i++ {
			v := base * float64(i)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			if i == 1 || (decades <= 4 && (i == 2 || i == 5)) {
				t.Label = strconv.FormatFloat(v, 'f', -1, 64)
			}
			ts = append(ts, t)
		}
	}
	return ts
}

func percentilePlot(r *Report, m string) (Plot, error) {
	pl := Plot{Name: "percentiles-" + m, Title: m + ": percentile distribution", Metric: m}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s by percentile — all rounds pooled after warm-up W=%d", m, r.Rules.Warmup)
	p.X.Label.Text = "percentile (log scale of 1/(1−q))"
	p.Legend.Top = true
	p.Legend.Left = true
	var ticks []plot.Tick
	for _, q := range []float64{50, 90, 99, 99.9, 99.99} {
		ticks = append(ticks, plot.Tick{Value: tailX(q), Label: fmt.Sprintf("%g %%", q)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = tailX(50), tailX(99.99)
	p.Add(plotter.NewGrid())
	var ys []float64
	type line struct {
		l     *plotter.Line
		label string
	}
	var lines []line
	for i, a := range r.Arms {
		h := r.side.hists[a.Name+"/"+m]
		mr := a.Metrics[m]
		if h == nil || mr == nil || h.TotalCount() == 0 {
			continue
		}
		n := float64(h.TotalCount())
		var xy plotter.XYs
		for x := tailX(50); x <= tailX(99.99)+1e-9; x += 0.05 {
			q := 100 * (1 - math.Pow(10, -x))
			if n*(1-q/100) < 1 { // beyond the last sample
				break
			}
			xy = append(xy, plotter.XY{X: x, Y: float64(h.ValueAtQuantile(q)) / 1e3})
			ys = append(ys, xy[len(xy)-1].Y)
		}
		if len(xy) < 2 {
			continue
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return pl, err
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.5)
		l.Dashes = plotutil.Dashes(i)
		lines = append(lines, line{l, fmt.Sprintf("%s — %s, n=%d, %s", a.Name, mr.Source, h.TotalCount(), roundsText(len(mr.Rounds), -1))})
	}
	scale := latencyAxis(p, m, ys)
	for _, ln := range lines {
		p.Add(ln.l)
		p.Legend.Add(ln.label, ln.l)
	}
	pl.Caption = fmt.Sprintf("%s by percentile, one line per arm (legend: clock source, samples, rounds); x: 50 %% to 99.99 %% on the log scale of 1/(1−q), "+
		"so each step right is a tenfold rarer value; y: %s. Values from the HDR histogram (3 significant digits) of all rounds after warm-up W=%d; "+
		"a line ends where fewer than one sample lies beyond. The tables use exact samples.", m, scale, r.Rules.Warmup)
	return pl, render(p, &pl)
}

// placedSamples are the worst samples the telemetry section placed for an
// arm (the typed rows of its worst-samples table).
func (r *Report) placedSamples(arm string) []PlacedSample {
	for _, s := range r.Telemetry {
		if s.Arm != arm {
			continue
		}
		for _, b := range s.Blocks {
			if len(b.Samples) > 0 {
				return b.Samples
			}
		}
	}
	return nil
}

// Colours of the over-time marks.
var (
	warmColor      = color.RGBA{R: 140, G: 140, B: 140, A: 255}
	explainedColor = color.RGBA{R: 0, G: 0, B: 0, A: 255}
	unexplained    = color.RGBA{R: 120, G: 120, B: 120, A: 255}
)

func scatterPlot(r *Report, k int) (Plot, error) {
	m := r.Headline
	pl := Plot{Name: fmt.Sprintf("%s-over-time-round-%d", m, k), Title: fmt.Sprintf("%s over time, round %d", m, k), Metric: m}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s per request, round %d", m, k)
	p.X.Label.Text = "sequence"
	p.X.Tick.Marker = intTicks{}
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	stride := 1
	var ys []float64
	var series []struct {
		s     *plotter.Scatter
		label string
	}
	var warm plotter.XYs
	var marks []worstMark
	maxSeq := 0.0
	for i, a := range r.Arms {
		var sr *ScatterRound
		for j := range r.side.scatter[a.Name] {
			if r.side.scatter[a.Name][j].Round == k {
				sr = &r.side.scatter[a.Name][j]
			}
		}
		if sr == nil || len(sr.Seq)+len(sr.WarmSeq) == 0 {
			continue
		}
		stride = max(stride, sr.Stride)
		xy := make(plotter.XYs, len(sr.Seq))
		for j := range sr.Seq {
			xy[j] = plotter.XY{X: float64(sr.Seq[j]), Y: float64(sr.NS[j]) / 1e3}
			ys = append(ys, xy[j].Y)
		}
		for j := range sr.WarmSeq {
			warm = append(warm, plotter.XY{X: float64(sr.WarmSeq[j]), Y: float64(sr.WarmNS[j]) / 1e3})
			ys = append(ys, warm[len(warm)-1].Y)
		}
		if len(xy) > 0 {
			s, err := plotter.NewScatter(xy)
			if err != nil {
				return pl, err
			}
			s.GlyphStyle.Color = plotutil.Color(i)
			s.GlyphStyle.Shape = draw.CircleGlyph{}
			s.GlyphStyle.Radius = vg.Points(1.2)
			series = append(series, struct {
				s     *plotter.Scatter
				label string
			}{s, fmt.Sprintf("%s — %s, %s, n=%d", a.Name, a.Metrics[m].Source, a.Metrics[m].Clock, roundN(a.Metrics[m], k))})
		}
		for rank, ps := range r.placedSamples(a.Name) {
			if ps.Round == k {
				marks = append(marks, worstMark{arm: a.Name, rank: rank + 1, ps: ps})
			}
		}
		if n := len(sr.Seq); n > 0 {
			maxSeq = max(maxSeq, float64(sr.Seq[n-1]))
		}
	}
	scale := latencyAxis(p, m, ys) // logarithmic only when every value is positive
	// The legend sits top right, over the plot: keep the data below it.
	legend := len(series) + 1
	if len(warm) > 0 {
		legend++
	}
	headroom(p, ys, scale, 1-0.045*float64(legend))
	for _, s := range series {
		p.Add(s.s)
		p.Legend.Add(s.label, s.s)
	}
	w := r.Rules.Warmup
	if len(warm) > 0 {
		s, err := plotter.NewScatter(warm)
		if err != nil {
			return pl, err
		}
		s.GlyphStyle = draw.GlyphStyle{Color: warmColor, Shape: draw.CrossGlyph{}, Radius: vg.Points(3)}
		p.Add(s)
		p.Legend.Add(fmt.Sprintf("warm-up, seq < %d (in no statistic)", w), s)
	}
	if w > 0 && len(ys) > 0 {
		// The end of the warm-up: a dashed vertical line.
		lo, hi := slices.Min(ys), slices.Max(ys)
		if scale == "linear" {
			lo = min(0, lo)
		}
		l, err := plotter.NewLine(plotter.XYs{{X: float64(w) - 0.5, Y: lo}, {X: float64(w) - 0.5, Y: hi}})
		if err != nil {
			return pl, err
		}
		l.Color, l.Dashes, l.Width = warmColor, []vg.Length{vg.Points(4), vg.Points(3)}, vg.Points(1)
		p.Add(l)
	}
	groups := groupMarks(marks, max(1, maxSeq/20))
	var explainedText, otherText []string
	for _, explained := range []bool{true, false} {
		var xy plotter.XYs
		var at plotter.XYs
		var lb []string
		for _, g := range groups {
			if g.explained != explained {
				continue
			}
			top := 0
			for i, mk := range g.marks {
				xy = append(xy, plotter.XY{X: float64(mk.ps.Seq), Y: float64(mk.ps.ValueNS) / 1e3})
				if mk.ps.ValueNS > g.marks[top].ps.ValueNS {
					top = i
				}
			}
			at = append(at, plotter.XY{X: float64(g.marks[top].ps.Seq), Y: float64(g.marks[top].ps.ValueNS) / 1e3})
			lb = append(lb, g.label())
			if explained {
				explainedText = append(explainedText, g.describe()+": "+g.why)
			} else {
				otherText = append(otherText, g.describe()+": "+g.why)
			}
		}
		if len(xy) == 0 {
			continue
		}
		s, err := plotter.NewScatter(xy)
		if err != nil {
			return pl, err
		}
		if explained {
			s.GlyphStyle = draw.GlyphStyle{Color: explainedColor, Shape: draw.TriangleGlyph{}, Radius: vg.Points(4.5)}
			p.Legend.Add("worst samples the telemetry explains (#: rank in the arm)", s)
		} else {
			s.GlyphStyle = draw.GlyphStyle{Color: unexplained, Shape: draw.RingGlyph{}, Radius: vg.Points(5)}
			p.Legend.Add("worst samples the telemetry does not explain", s)
		}
		p.Add(s)
		labels, err := plotter.NewLabels(plotter.XYLabels{XYs: at, Labels: lb})
		if err != nil {
			return pl, err
		}
		// Above the mark, leaning away from the nearer side of the plot.
		labels.Offset = vg.Point{Y: vg.Points(6)}
		for i := range labels.TextStyle {
			labels.TextStyle[i].YAlign = text.YBottom
			if at[i].X > 0.6*maxSeq {
				labels.TextStyle[i].XAlign = text.XRight
			}
		}
		p.Add(labels)
	}
	b := &strings.Builder{}
	fmt.Fprintf(b, "%s of each request in round %d against its sequence number, one colour per arm (legend: clock source, samples after warm-up); y: %s. ", m, k, scale)
	if stride > 1 {
		fmt.Fprintf(b, "Shown: every sample after warm-up above the round's p99 and one in %d of the others", stride)
	} else {
		b.WriteString("Shown: every sample after warm-up")
	}
	if w > 0 {
		fmt.Fprintf(b, "; grey crosses left of the dashed line: the warm-up (seq < W=%d), in no statistic", w)
	} else {
		b.WriteString("; no warm-up (W=0)")
	}
	b.WriteString(". ")
	switch {
	case len(marks) > 0:
		b.WriteString("Marked: the arms' worst samples after warm-up (telemetry section) in this round. ")
		if len(explainedText) > 0 {
			fmt.Fprintf(b, "Explained by telemetry (triangles; what moved more than twice its usual in the sample's telemetry interval): %s. ", strings.Join(explainedText, "; "))
		}
		if len(otherText) > 0 {
			fmt.Fprintf(b, "Not explained (rings): %s.", strings.Join(otherText, "; "))
		}
	case len(r.Telemetry) == 0:
		b.WriteString("No telemetry: the worst samples are not placed.")
	default:
		b.WriteString("None of the arms' worst samples is in this round.")
	}
	pl.Caption = strings.TrimSpace(b.String())
	return pl, render(p, &pl)
}

// roundN is the sample count of round k of a metric (after warm-up).
func roundN(mr *MetricReport, k int) int {
	for _, rs := range mr.Rounds {
		if rs.Round == k {
			return rs.N
		}
	}
	return 0
}

// worstMark is one of an arm's worst samples in an over-time plot.
type worstMark struct {
	arm  string
	rank int // in the arm's worst samples, 1 = largest
	ps   PlacedSample
}

// markGroup is worst samples of one arm close together in time with the
// same explanation: one label for all (a stall makes several).
type markGroup struct {
	explained bool
	why       string
	marks     []worstMark
}

func (g *markGroup) label() string {
	var rs []string
	for _, m := range g.marks {
		rs = append(rs, strconv.Itoa(m.rank))
	}
	return g.marks[0].arm + " #" + strings.Join(rs, ",")
}

// describe is "cpu0 #1,2 (seq 4709–4972, 7997.62–8403.81 µs)".
func (g *markGroup) describe() string {
	lo, hi := g.marks[0], g.marks[0]
	vlo, vhi := g.marks[0].ps.ValueNS, g.marks[0].ps.ValueNS
	for _, m := range g.marks {
		if m.ps.Seq < lo.ps.Seq {
			lo = m
		}
		if m.ps.Seq > hi.ps.Seq {
			hi = m
		}
		vlo, vhi = min(vlo, m.ps.ValueNS), max(vhi, m.ps.ValueNS)
	}
	seq, val := strconv.FormatUint(lo.ps.Seq, 10), FormatUS(vlo)
	if hi.ps.Seq != lo.ps.Seq {
		seq += "–" + strconv.FormatUint(hi.ps.Seq, 10)
	}
	if vhi != vlo {
		val += "–" + FormatUS(vhi)
	}
	return fmt.Sprintf("%s (seq %s, %s µs)", g.label(), seq, val)
}

// groupMarks groups the marks by arm and explanation, and within those
// by closeness: a mark within gap sequences of the group's last joins it.
func groupMarks(marks []worstMark, gap float64) []markGroup {
	why := func(ps *PlacedSample) string {
		switch {
		case ps.Explained():
			return strings.Join(ps.Unusual, ", ")
		case ps.Placed:
			return "nothing moved more than usual in its telemetry interval"
		}
		return "not placed in a telemetry interval"
	}
	sorted := slices.Clone(marks)
	slices.SortStableFunc(sorted, func(a, b worstMark) int {
		if c := strings.Compare(a.arm, b.arm); c != 0 {
			return c
		}
		return cmp.Compare(a.ps.Seq, b.ps.Seq)
	})
	var out []markGroup
	for _, m := range sorted {
		w := why(&m.ps)
		joined := false
		for i := range out {
			g := &out[i]
			last := g.marks[len(g.marks)-1]
			if last.arm == m.arm && g.why == w && float64(m.ps.Seq-last.ps.Seq) <= gap {
				g.marks = append(g.marks, m)
				joined = true
				break
			}
		}
		if !joined {
			out = append(out, markGroup{explained: m.ps.Explained(), why: w, marks: []worstMark{m}})
		}
	}
	for i := range out {
		slices.SortFunc(out[i].marks, func(a, b worstMark) int { return a.rank - b.rank })
	}
	return out
}

// intTicks labels the default tick positions as integers (sequence numbers).
type intTicks struct{}

func (intTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', 0, 64)
		}
	}
	return ts
}

// pairedPlot draws the distribution of every paired comparison's
// differences: one line per arm and pair of responders, the fraction of
// requests whose d is at most x.
func pairedPlot(r *Report) (Plot, bool, error) {
	pl := Plot{Name: "paired-" + Turnaround, Title: "paired difference of responders' turnaround", Metric: Turnaround}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("d = turnaround(B) − turnaround(A), same requests, after warm-up W=%d", r.Rules.Warmup)
	p.X.Label.Text = "d (µs)"
	p.Y.Label.Text = "fraction of requests with difference ≤ d"
	p.Y.Min, p.Y.Max = 0, 1
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	drawn := false
	for i, pc := range r.Paired {
		var diffs []int64
		if i < len(r.side.paired) {
			diffs = r.side.paired[i]
		}
		n := len(diffs)
		if n < 2 {
			continue
		}
		// Every k-th sample, and the last: at most ~1000 points a line.
		step := max(1, n/1000)
		var xy plotter.XYs
		for k := 0; k < n; k += step {
			xy = append(xy, plotter.XY{X: float64(diffs[k]) / 1e3, Y: float64(k+1) / float64(n)})
		}
		xy = append(xy, plotter.XY{X: float64(diffs[n-1]) / 1e3, Y: 1})
		l, err := plotter.NewLine(xy)
		if err != nil {
			return pl, false, err
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.5)
		l.Dashes = plotutil.Dashes(i)
		p.Add(l)
		med, _ := pc.Stats.Value(P50)
		p.Legend.Add(fmt.Sprintf("%s: %s − %s, %s, n=%d, median %s µs: %s", pc.Arm, pc.B, pc.A, pc.Source, n, FormatUS(med), pc.Verdict), l)
		drawn = true
	}
	pl.Caption = "Cumulative distribution of the per-request difference d = turnaround(B) − turnaround(A) of two responders answering the same requests (fan-out), one line per arm and pair; " +
		"a line right of 0 at its middle means B took longer on most requests. Rule: " + PairedRule + "."
	if !drawn {
		return pl, false, nil
	}
	return pl, true, render(p, &pl)
}
