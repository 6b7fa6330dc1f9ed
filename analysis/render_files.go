package analysis

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/rig-project/rig/internal/rundir"
)

// Output file names inside a run directory.
const (
	TablesMD   = "tables.md"
	TablesCSV  = "tables.csv"
	ReportJSON = "report.json"
	ReportMD   = "report.md"
	ReportHTML = "report.html"
	HistLog    = "hist.hlog"
	PlotsDir   = "plots"
)

// Run loads and analyses a run directory.
func Run(dir string, opt Options) (*Report, error) {
	in, err := Load(dir)
	if err != nil {
		return nil, err
	}
	return Analyze(in, opt)
}

// Regenerate analyses the run directory dir and rewrites every report file
// in it; the runner calls it at the end of a run. Problems (damaged files)
// are in the report, not in the error.
func Regenerate(dir string, opt Options) (*Report, error) {
	r, err := Run(dir, opt)
	if err != nil {
		return nil, err
	}
	return r, WriteAll(dir, r)
}

// WriteAll (re)generates every output file of r in the run directory dir:
// tables.md, tables.csv, report.json, hist.hlog, plots/*.svg|png, report.md
// and report.html. Each file is written atomically.
func WriteAll(dir string, r *Report) error {
	plots, err := Plots(r)
	if err != nil {
		return err
	}
	for _, p := range plots {
		for ext, data := range map[string][]byte{".svg": p.SVG, ".png": p.PNG} {
			if err := rundir.WriteFileAtomic(filepath.Join(dir, PlotsDir, p.Name+ext), data); err != nil {
				return err
			}
		}
	}
	files := []struct {
		name string
		gen  func(io.Writer) error
	}{
		{TablesMD, func(w io.Writer) error { return WriteTablesMD(w, r) }},
		{TablesCSV, func(w io.Writer) error { return WriteTablesCSV(w, r) }},
		{ReportJSON, func(w io.Writer) error { return WriteJSON(w, r) }},
		{HistLog, func(w io.Writer) error { return WriteHistLog(w, r) }},
		{ReportMD, func(w io.Writer) error { return WriteReportMD(w, r, plots) }},
		{ReportHTML, func(w io.Writer) error { return WriteReportHTML(w, r, plots) }},
	}
	for _, f := range files {
		var b bytes.Buffer
		if err := f.gen(&b); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		if err := rundir.WriteFileAtomic(filepath.Join(dir, f.name), b.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// WriteHistLog writes hist.hlog: an HdrHistogram interval log (format 1.3)
// with one interval histogram per arm × metric, tagged <arm>/<metric>,
// holding every sample after warm-up of every round (values in ns; the
// interval's max column is in ms as the log format wants). The interval
// spans the run (manifest started_at…ended_at), relative to its start.
func WriteHistLog(w io.Writer, r *Report) error {
	lw := hdrhistogram.NewHistogramLogWriter(w)
	if err := lw.OutputLogFormatVersion(); err != nil {
		return err
	}
	if err := lw.OutputComment(fmt.Sprintf("rig run %s: one histogram per arm/metric, ns, after warm-up W=%d; tables use exact samples, not these", r.Run, r.Rules.Warmup)); err != nil {
		return err
	}
	// Interval = the whole run (start and end from manifest.json), logged
	// relative to its start.
	if err := lw.OutputStartTime(r.side.startMs); err != nil {
		return err
	}
	lw.SetBaseTime(r.side.startMs)
	if err := lw.OutputLegend(); err != nil {
		return err
	}
	keys := make([]string, 0, len(r.side.hists))
	for k := range r.side.hists {
		keys = append(keys, k)
	}
	// Arms in report order, metrics in table order.
	order := func(k string) (int, int) {
		arm, m, _ := strings.Cut(k, "/")
		ai := slices.IndexFunc(r.Arms, func(a *ArmReport) bool { return a.Name == arm })
		return ai, slices.Index(MetricNames, m)
	}
	slices.SortFunc(keys, func(a, b string) int {
		a1, a2 := order(a)
		b1, b2 := order(b)
		if a1 != b1 {
			return a1 - b1
		}
		return a2 - b2
	})
	for _, k := range keys {
		h := r.side.hists[k]
		h.SetTag(tagSafe(k))
		h.SetStartTimeMs(r.side.startMs)
		h.SetEndTimeMs(max(r.side.endMs, r.side.startMs))
		if err := lw.OutputIntervalHistogram(h); err != nil {
			return fmt.Errorf("histogram %s: %w", k, err)
		}
	}
	return nil
}
