package analysis

import (
	"encoding/base64"
	"html/template"
	"io"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// report.html: self-contained (styles inline, plots as base64 PNG data
// URLs, no script, no network access), laid out for a laptop screen: no
// table is wider than 1366 px (cells wrap between a value and its range).
var htmlTmpl = template.Must(template.New("report").Funcs(template.FuncMap{"td": htmlCell, "tag": verdictClass, "plain": plain}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>rig report: {{.R.Run}}</title>
<style>
body{font-family:system-ui,sans-serif;max-width:1320px;margin:1em auto;padding:0 1em;color:#111;background:#fff;line-height:1.35}
h1{font-size:1.6em;margin:.3em 0}h2{font-size:1.3em;margin:1.4em 0 .4em;border-bottom:1px solid #ccc}h3{font-size:1.08em;margin:1em 0 .3em}
table{border-collapse:collapse;margin:.4em 0 1.4em;font-size:.86em}
th,td{border:1px solid #aaa;padding:.2em .4em;text-align:right;vertical-align:top;font-variant-numeric:tabular-nums}
th{background:#e8eef6;font-weight:600;text-align:center}
td:first-child,td:nth-child(2),td.t{text-align:left}td.s{white-space:nowrap}
table.facts td{text-align:left}
.v,.rng{white-space:nowrap}.rng{color:#555;font-size:.92em}
p.caption,figcaption{font-size:.86em;color:#333;margin:.2em 0 .6em}
.problem{color:#a00}
table.tel td{text-align:left}
section.summary{border:2px solid #36c;border-radius:6px;padding:.2em 1em .6em;margin:1em 0;background:#f7f9fd}
section.summary h2{margin-top:.5em;border:0}
ul.verdicts{padding-left:1.2em}ul.verdicts li{margin:.35em 0}
.tag{display:inline-block;font-size:.8em;font-weight:600;border-radius:3px;padding:0 .35em;margin-right:.3em;background:#ddd;color:#222;white-space:nowrap}
.tag.real{background:#1a7f37;color:#fff}.tag.indicative{background:#bf8700;color:#fff}.tag.noise{background:#ccc}.tag.base{background:#36c;color:#fff}.tag.none{background:#a00;color:#fff}
ul.problems li{color:#a00;margin:.2em 0}p.ok{color:#1a7f37}
.plots{display:grid;grid-template-columns:repeat(auto-fill,minmax(560px,1fr));gap:.8em 1.2em}
figure.plot{margin:0}
img.plot{width:100%;height:auto;border:1px solid #ccc;display:block;box-sizing:border-box}
ul.rules li{margin:.15em 0;font-size:.92em}
</style></head><body>
<h1>rig report: {{.R.Run}}</h1>
<p>Run id {{or .R.RunID "—"}}, scenario {{or .R.Scenario "—"}}. Baseline arm: <b>{{or .R.Baseline "—"}}</b>. Headline metric: {{.R.Headline}}.
Arms: {{range $i, $a := .R.Arms}}{{if $i}}, {{end}}<span class="arm">{{$a.Name}}</span>{{end}}.</p>
{{if .R.Interrupted}}<p class="problem"><b>The run was interrupted</b> ({{.R.Interrupted}}): the rounds it cut short are left out, the rounds it never ran are absent.</p>{{end}}
{{if .LeftOut}}<p class="problem"><b>{{len .LeftOut}} round(s) left out of every table</b>: {{range $i, $x := .LeftOut}}{{if $i}}, {{end}}{{$x}}{{end}} (why: Rounds table and Problems).</p>{{end}}
<section class="summary" id="summary">
<h2>Summary</h2>
<h3>Verdicts: {{.R.Summary.Verdicts | len}} arm(s) on {{.R.Headline}}{{if .R.Baseline}} against {{.R.Baseline}}{{end}}</h3>
<ul class="verdicts">{{range .R.Summary.Verdicts}}
<li><span class="tag {{tag .Verdict}}">{{.Verdict}}</span> {{.Sentence}}</li>{{end}}
</ul>
<p class="caption">{{.VerdictRule}}</p>
<h3>What was compared</h3>
{{range .Compared}}<p class="caption"><b>{{.Title}}.</b> {{.Caption}}</p>
{{if .Rows}}<table class="facts"><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{end}}
{{end}}<h3>Problems of this run</h3>
{{if .SummaryProblems}}<ul class="problems">{{range .SummaryProblems}}<li>{{.}}</li>{{end}}{{if .MoreProblems}}<li>… and {{.MoreProblems}} more: <a href="#problems">Problems</a>, at the end.</li>{{end}}</ul>
{{else}}<p class="ok">{{.NoProblems}}</p>{{end}}
{{if .R.Notes}}<p class="caption">{{len .R.Notes}} note(s) (metrics not computed, datagrams that were not samples): <a href="#notes">Notes</a>.</p>{{end}}
</section>
{{if .HeadPlots}}<h2 id="plots">{{.R.Headline}}: distribution and time series</h2>
<div class="plots">{{range .HeadPlots}}{{template "plot" .}}{{end}}</div>{{end}}
<h2>Rules</h2>
<p class="caption">Explained in {{.R.Rules.Doc}} of the rig repository.</p>
<ul class="rules">
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
{{range .Tables}}{{template "section" .}}{{end}}
{{if .OtherPlots}}<h2>Percentiles of the other metrics</h2>
<div class="plots">{{range .OtherPlots}}{{template "plot" .}}{{end}}</div>{{end}}
{{range .After}}{{template "section" .}}{{end}}
<h2>Responder CPU activity (telemetry)</h2>
{{range .R.Telemetry}}<h3>{{.Arm}}</h3>
{{range .Blocks}}{{if .Head}}<p class="caption">{{.Text}}</p>
<table class="tel"><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>
{{else}}<p>{{.Text}}</p>
{{end}}{{end}}{{else}}<p>{{.TelemetryNone}}</p>{{end}}
{{if .R.PcapFiles}}<h2>Packet captures</h2><p>{{.R.PcapCaption}}:</p><ul>{{range .R.PcapFiles}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .R.Problems}}<h2 id="problems">Problems</h2><ul>{{range .R.Problems}}<li class="problem">{{.}}</li>{{end}}</ul>{{end}}
{{if .R.Notes}}<h2 id="notes">Notes</h2><ul>{{range .R.Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
</body></html>
{{define "plot"}}<figure class="plot" id="plot-{{.Name}}"><img class="plot" alt="{{.Title}}" width="{{.W}}" height="{{.H}}" src="{{.Data}}">
<figcaption><b>{{.Title}}.</b> {{.Caption}}</figcaption></figure>
{{end}}{{define "section"}}<h2>{{plain .Title}}</h2>
<p class="caption">{{.Caption}}</p>
{{if .Rows}}<table><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}{{td .}}{{end}}</tr>
{{end}}</table>{{end}}
{{end}}`))

// spreadCell matches a table cell "median [min–max]" with an optional †.
var spreadCell = regexp.MustCompile(`^(\S+) (\[[^\]]+\])( †)?$`)

// htmlCell renders a table cell. "median [min–max]" becomes two pieces
// that each stay on one line, so a narrow column wraps between them; text
// (a cell that starts with a letter) is left-aligned, and kept on one
// line when short.
func htmlCell(s string) template.HTML {
	esc := template.HTMLEscapeString
	if m := spreadCell.FindStringSubmatch(s); m != nil {
		return template.HTML(`<td><span class="v">` + esc(m[1]+m[3]) + `</span> <span class="rng">` + esc(m[2]) + `</span></td>`)
	}
	if r, _ := utf8.DecodeRuneInString(s); unicode.IsLetter(r) {
		if utf8.RuneCountInString(s) <= 20 {
			return template.HTML(`<td class="t s">` + esc(s) + `</td>`)
		}
		return template.HTML(`<td class="t">` + esc(s) + `</td>`)
	}
	return template.HTML(`<td>` + esc(s) + `</td>`)
}

// plain is a title without Markdown's code quotes (quote).
func plain(s string) string { return strings.ReplaceAll(s, "`", "") }

// verdictClass is the CSS class of a summary verdict's tag.
func verdictClass(v string) string {
	switch v {
	case VerdictReal:
		return "real"
	case VerdictIndicative:
		return "indicative"
	case VerdictNoise, VerdictUndersampled:
		return "noise"
	case SummaryBaseline:
		return "base"
	case SummarySkipped, SummaryNotComputed, VerdictClocks, VerdictNoData:
		return "none"
	}
	return ""
}

// WriteReportHTML writes report.html: the summary (verdicts, what was
// compared, problems), the headline plots, the rules and tables, the other
// plots, the telemetry section, problems and notes. It is self-contained
// (styles inline, plots as base64 PNG data URLs, no script, no network
// access).
func WriteReportHTML(w io.Writer, r *Report, plots []Plot) error {
	type hplot struct {
		Name, Title, Caption string
		W, H                 int
		Data                 template.URL
	}
	var head, other []hplot
	for _, p := range plots {
		hp := hplot{Name: p.Name, Title: p.Title, Caption: p.Caption, W: int(plotW.Dots(pngDPI)), H: int(plotH.Dots(pngDPI)),
			Data: template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(p.PNG))}
		if p.Metric == r.Headline || p.Metric == "" {
			head = append(head, hp)
		} else {
			other = append(other, hp)
		}
	}
	var tables, after []section
	for _, s := range r.sections() {
		if s.detail {
			after = append(after, s)
		} else {
			tables = append(tables, s)
		}
	}
	problems, more := r.summaryProblems(summaryProblemLines)
	return htmlTmpl.Execute(w, map[string]any{"R": r, "Tables": tables, "After": after, "HeadPlots": head, "OtherPlots": other,
		"Compared": r.comparedTables(), "VerdictRule": r.verdictRule(), "SummaryProblems": problems, "MoreProblems": more,
		"NoProblems": noProblems, "TelemetryNone": telemetryNone(r), "LeftOut": r.leftOut()})
}
