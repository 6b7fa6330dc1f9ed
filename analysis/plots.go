package analysis

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Plot is one rendered chart in both formats.
type Plot struct {
	Name    string // file stem under plots/
	Title   string
	Caption string
	SVG     []byte
	PNG     []byte
}

// Plot sizes.
const (
	plotW = 8 * vg.Inch
	plotH = 4.5 * vg.Inch
)

// tailX maps a percentile (percent) to the x axis: log10(1/(1−p)), so 90 %,
// 99 %, 99.9 % … are evenly spaced.
func tailX(pct float64) float64 { return math.Log10(1 / (1 - pct/100)) }

// Plots renders the percentile-distribution chart of every metric (one line
// per arm, from the pooled HDR histogram after warm-up) and the headline
// metric over time, one chart per round (one series per arm, thinned: every
// sample above the round's p99 and every k-th of the rest).
func Plots(r *Report) ([]Plot, error) {
	var out []Plot
	for _, m := range r.metricsPresent() {
		p, err := percentilePlot(r, m)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	rounds := map[int]bool{}
	for _, sc := range r.scatter {
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
		p, err := scatterPlot(r, k)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func render(p *plot.Plot, pl *Plot) error {
	for _, f := range []string{"svg", "png"} {
		wt, err := p.WriterTo(plotW, plotH, f)
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if _, err := wt.WriteTo(&b); err != nil {
			return err
		}
		if f == "svg" {
			pl.SVG = b.Bytes()
		} else {
			pl.PNG = b.Bytes()
		}
	}
	return nil
}

func percentilePlot(r *Report, m string) (Plot, error) {
	pl := Plot{Name: "percentiles-" + m, Title: m + ": percentile distribution"}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s — percentiles after warm-up W=%d, all rounds pooled", m, r.Rules.Warmup)
	p.X.Label.Text = "percentile (x = log10(1/(1−p)))"
	p.Y.Label.Text = "latency (µs)"
	p.Legend.Top = true
	p.Legend.Left = true
	var ticks []plot.Tick
	for _, q := range []float64{50, 90, 99, 99.9, 99.99} {
		ticks = append(ticks, plot.Tick{Value: tailX(q), Label: fmt.Sprintf("%g%%", q)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = tailX(50), tailX(99.99)
	p.Add(plotter.NewGrid())
	for i, a := range r.Arms {
		h := r.hists[a.Name+"/"+m]
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
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s (%s, n=%d)", a.Name, mr.Source, h.TotalCount()), l)
	}
	pl.Caption = fmt.Sprintf("%s by percentile, one line per arm; x axis on the 1/(1−p) log scale; "+
		"values from the HDR histogram (3 significant digits) of all rounds after warm-up W=%d — the tables use exact samples.", m, r.Rules.Warmup)
	return pl, render(p, &pl)
}

func scatterPlot(r *Report, k int) (Plot, error) {
	m := r.Headline
	pl := Plot{Name: fmt.Sprintf("%s-over-time-round-%d", m, k), Title: fmt.Sprintf("%s over time, round %d", m, k)}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s per request, round %d (after warm-up W=%d)", m, k, r.Rules.Warmup)
	p.X.Label.Text = "sequence"
	p.X.Tick.Marker = intTicks{}
	p.Y.Label.Text = "latency (µs)"
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	stride := 1
	for i, a := range r.Arms {
		var sr *ScatterRound
		for j := range r.scatter[a.Name] {
			if r.scatter[a.Name][j].Round == k {
				sr = &r.scatter[a.Name][j]
			}
		}
		if sr == nil || len(sr.Seq) == 0 {
			continue
		}
		stride = max(stride, sr.Stride)
		xy := make(plotter.XYs, len(sr.Seq))
		for j := range sr.Seq {
			xy[j] = plotter.XY{X: float64(sr.Seq[j]), Y: float64(sr.NS[j]) / 1e3}
		}
		s, err := plotter.NewScatter(xy)
		if err != nil {
			return pl, err
		}
		s.GlyphStyle.Color = plotutil.Color(i)
		s.GlyphStyle.Shape = draw.CircleGlyph{}
		s.GlyphStyle.Radius = vg.Points(1.2)
		p.Add(s)
		p.Legend.Add(fmt.Sprintf("%s (%s)", a.Name, a.Metrics[m].Source), s)
	}
	pl.Caption = fmt.Sprintf("%s of each request in round %d against its sequence number, one colour per arm. "+
		"Shown: every sample above the round's p99 and every %d-th of the others.", m, k, stride)
	return pl, render(p, &pl)
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
