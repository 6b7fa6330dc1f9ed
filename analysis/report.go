package analysis

import (
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"strings"
)

// WriteReportMD writes report.md: the tables of tables.md, links to the
// plots under plots/, and the telemetry section.
func WriteReportMD(w io.Writer, r *Report, plots []Plot) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "# rig report: %s\n\n", r.Run)
	fmt.Fprintf(b, "Run id %s, scenario %s. Baseline arm: %s. Headline metric: %s. Arms: %s.\n\n",
		orDash(r.RunID), orDash(r.Scenario), orDash(r.Baseline), r.Headline, strings.Join(r.armNames(), ", "))
	writeStatusMD(b, r)
	writeRulesMD(b, r)
	for _, m := range r.metricsPresent() {
		t := metricTable(r, m)
		t.md(b)
	}
	t := comparisonTable("Comparison against the baseline arm "+quote(r.Baseline), r.Comparisons, "baseline", "arm")
	t.md(b)
	if ft := freqTable(r); len(ft.Rows) > 0 {
		ft.md(b)
	}
	t = roundsTable(r)
	t.md(b)
	writeThreadsMD(b, r)
	if len(plots) > 0 {
		b.WriteString("## Plots\n\n")
		for _, p := range plots {
			fmt.Fprintf(b, "### %s\n\n![%s](%s/%s.svg)\n\n%s ([PNG](%s/%s.png))\n\n", p.Title, p.Title, PlotsDir, p.Name, p.Caption, PlotsDir, p.Name)
		}
	}
	b.WriteString("## Responder CPU activity (telemetry)\n\n")
	b.WriteString(telemetryText(r))
	b.WriteString("\n")
	writeProblemsMD(b, r)
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *Report) armNames() []string {
	var n []string
	for _, a := range r.Arms {
		n = append(n, a.Name)
	}
	return n
}

// telemetryText renders the telemetry sections as Markdown; without any
// it says how many rounds carry telemetry.json.
func telemetryText(r *Report) string {
	if len(r.Telemetry) > 0 {
		b := &strings.Builder{}
		for _, s := range r.Telemetry {
			fmt.Fprintf(b, "### %s\n\n", s.Arm)
			for _, bl := range s.Blocks {
				if len(bl.Head) == 0 {
					fmt.Fprintf(b, "%s\n\n", strings.TrimSpace(bl.Text))
					continue
				}
				t := table{Caption: bl.Text, Head: bl.Head, Rows: bl.Rows}
				t.mdBody(b)
			}
		}
		return b.String()
	}
	return telemetryNone(r)
}

func telemetryNone(r *Report) string {
	if r.TelemetryFiles > 0 {
		return fmt.Sprintf("%d rounds carry telemetry.json; no telemetry summarizer was set (Options.Telemetry and analysis.DefaultTelemetry are nil), so it is not shown.\n", r.TelemetryFiles)
	}
	return "No round carries telemetry.json.\n"
}

var htmlTmpl = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>rig report: {{.R.Run}}</title>
<style>
body{font-family:sans-serif;max-width:1300px;margin:1em auto;padding:0 1em;color:#111;background:#fff}
table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border:1px solid #999;padding:.25em .5em;white-space:nowrap;text-align:right;font-variant-numeric:tabular-nums}
th{background:#e8eef6}td:first-child,td:nth-child(2){text-align:left}
p.caption{font-size:.9em;color:#333}
img{max-width:100%;border:1px solid #ccc}
.problem{color:#a00}
table.tel td{white-space:normal;text-align:left}
</style></head><body>
<h1>rig report: {{.R.Run}}</h1>
<p>Run id {{or .R.RunID "—"}}, scenario {{or .R.Scenario "—"}}. Baseline arm: <b>{{or .R.Baseline "—"}}</b>. Headline metric: {{.R.Headline}}.
Arms: {{range $i, $a := .R.Arms}}{{if $i}}, {{end}}<span class="arm">{{$a.Name}}</span>{{end}}.</p>
{{if .R.Interrupted}}<p class="problem"><b>The run was interrupted</b> ({{.R.Interrupted}}): the rounds it cut short are left out, the rounds it never ran are absent.</p>{{end}}
{{if .LeftOut}}<p class="problem"><b>{{len .LeftOut}} round(s) left out of every table</b>: {{range $i, $x := .LeftOut}}{{if $i}}, {{end}}{{$x}}{{end}} (why: Rounds table and Problems).</p>{{end}}
<h2>Rules</h2>
<ul>
<li>Warm-up W={{.R.Rules.Warmup}}: {{.R.Rules.WarmupRule}}.</li>
<li>Percentiles: {{.R.Rules.Percentile}}. {{.R.Rules.Worst}}.</li>
<li>Rounds: {{.R.Rules.AcrossRounds}}.</li>
<li>Confidence: {{.R.Rules.CI}}.</li>
<li>† undersampled: {{.R.Rules.Undersampled}}.</li>
<li>Counts: {{.R.Rules.Population}}.</li>
<li>Incomplete rounds: {{.R.Rules.Incomplete}}.</li>
<li>Verdicts: {{.R.Rules.Verdict}}.</li>
<li>Units: {{.R.Rules.Units}}.</li>
</ul>
{{range .Tables}}<h2>{{.Title}}</h2>
<p class="caption">{{.Caption}}</p>
{{if .Rows}}<table><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}
{{end}}
{{if .Plots}}<h2>Plots</h2>
{{range .Plots}}<h3>{{.Title}}</h3>
<img alt="{{.Title}}" src="{{.Data}}">
<p class="caption">{{.Caption}}</p>
{{end}}{{end}}
<h2>Responder CPU activity (telemetry)</h2>
{{range .R.Telemetry}}<h3>{{.Arm}}</h3>
{{range .Blocks}}{{if .Head}}<p class="caption">{{.Text}}</p>
<table class="tel"><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
{{else}}<p>{{.Text}}</p>
{{end}}{{end}}{{else}}<p>{{.TelemetryNone}}</p>{{end}}
{{if .R.Problems}}<h2>Problems</h2><ul>{{range .R.Problems}}<li class="problem">{{.}}</li>{{end}}</ul>{{end}}
{{if .R.Notes}}<h2>Notes</h2><ul>{{range .R.Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
</body></html>
`))

// WriteReportHTML writes report.html: self-contained (styles inline, plots
// as base64 PNG data URLs, no script, no network access).
func WriteReportHTML(w io.Writer, r *Report, plots []Plot) error {
	type hplot struct {
		Title, Caption string
		Data           template.URL
	}
	var tables []table
	for _, m := range r.metricsPresent() {
		tables = append(tables, metricTable(r, m))
	}
	tables = append(tables, comparisonTable("Comparison against the baseline arm "+r.Baseline, r.Comparisons, "baseline", "arm"))
	if ft := freqTable(r); len(ft.Rows) > 0 {
		tables = append(tables, ft)
	}
	tables = append(tables, roundsTable(r))
	if t := threadsTable(r); len(t.Rows) > 0 {
		tables = append(tables, t)
	}
	var hp []hplot
	for _, p := range plots {
		hp = append(hp, hplot{Title: p.Title, Caption: p.Caption,
			Data: template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(p.PNG))})
	}
	return htmlTmpl.Execute(w, map[string]any{"R": r, "Tables": tables, "Plots": hp, "TelemetryNone": telemetryNone(r), "LeftOut": r.leftOut()})
}
