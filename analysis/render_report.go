package analysis

import (
	"fmt"
	"io"
	"strings"
)

// WriteReportMD writes report.md: the summary, the tables of tables.md,
// links to the plots under plots/, and the telemetry section.
func WriteReportMD(w io.Writer, r *Report, plots []Plot) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "# rig report: %s\n\n", r.Run)
	fmt.Fprintf(b, "Run id %s, scenario %s. Baseline arm: %s. Headline metric: %s. Arms: %s.\n\n",
		orDash(r.RunID), orDash(r.Scenario), orDash(r.Baseline), r.Headline, strings.Join(r.armNames(), ", "))
	writeStatusMD(b, r)
	writeSummaryMD(b, r)
	writeRulesMD(b, r)
	for _, s := range r.sections() {
		s.md(b)
	}
	if len(plots) > 0 {
		b.WriteString("## Plots\n\n")
		for _, p := range plots {
			fmt.Fprintf(b, "### %s\n\n![%s](%s/%s.svg)\n\n%s ([PNG](%s/%s.png))\n\n", p.Title, p.Title, PlotsDir, p.Name, p.Caption, PlotsDir, p.Name)
		}
	}
	b.WriteString("## Responder CPU activity (telemetry)\n\n")
	b.WriteString(telemetryText(r))
	b.WriteString("\n")
	if len(r.PcapFiles) > 0 {
		fmt.Fprintf(b, "## Packet captures\n\n%s:\n\n", r.PcapCaption())
		for _, f := range r.PcapFiles {
			fmt.Fprintf(b, "- %s\n", f)
		}
		b.WriteString("\n")
	}
	writeProblemsMD(b, r)
	_, err := io.WriteString(w, b.String())
	return err
}

// PcapCaption introduces the list of pcap files (report.md and .html).
func (r *Report) PcapCaption() string {
	return fmt.Sprintf("The capture's frames as pcap (one file a round, %d in all), each frame stamped as its round's capture.samples (its header's settings.pcap.stamps names the columns)", len(r.PcapFiles))
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
