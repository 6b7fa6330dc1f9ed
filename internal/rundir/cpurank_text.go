package rundir

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rig-project/rig/internal/cpulist"
)

// Get returns the measurements of cpu, or nil when it was not ranked.
func (r *Ranking) Get(cpu int) *RankedCPU {
	for i := range r.CPUs {
		if r.CPUs[i].CPU == cpu {
			return &r.CPUs[i]
		}
	}
	return nil
}

// Summary is the one-line verdict: the CPU chosen and why.
func (r *Ranking) Summary() string {
	if len(r.CPUs) == 0 {
		return "no CPU ranked"
	}
	b := r.CPUs[0]
	s := fmt.Sprintf("quietest CPU %d of %s over %v: cost %.0f µs/s", b.CPU, cpulist.Format(r.Candidates), time.Duration(r.WindowNS), b.Cost)
	if len(r.CPUs) > 1 {
		n := r.CPUs[1]
		s += fmt.Sprintf(" (next: CPU %d, %.0f µs/s)", n.CPU, n.Cost)
	}
	return s
}

// rankingHead is the column header of Rows.
var rankingHead = []string{"rank", "cpu", "cost µs/s", "own µs/s", "other threads µs/s", "steal %", "ctx sw/s", "runnable", "dev irq/s", "other int/s", "softirq/s", "busiest there"}

// Rows are the ranking's table rows, best first.
func (r *Ranking) Rows() [][]string {
	var out [][]string
	for _, c := range r.CPUs {
		cpu := fmt.Sprint(c.CPU)
		if len(c.Siblings) > 0 {
			cpu += " (SMT " + cpulist.Format(c.Siblings) + ")"
		}
		out = append(out, []string{fmt.Sprint(c.Rank), cpu, f0(c.Cost), f0(c.Own), f0(c.RunUS), f1(c.StealPct), f0(c.CtxSwitches),
			f1(c.Runnable), f0(c.IRQs), f0(c.ArchIRQs), f0(c.Softirqs), strings.Join(append(append([]string{}, c.TopThreads...), c.TopIRQs...), "; ")})
	}
	return out
}

func f0(v float64) string { return fmt.Sprintf("%.0f", v) }
func f1(v float64) string { return fmt.Sprintf("%.1f", v) }

// WriteText prints the verdict, the table, the rule and the notes.
func (r *Ranking) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", r.Summary())
	fmt.Fprintf(&b, "candidates: %s; %d thread scans; ranker on CPU %s\n", r.From, r.Scans, cpulist.Format(r.RankerCPUs))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(rankingHead[:len(rankingHead)-1], "\t")+"\t")
	for _, row := range r.Rows() {
		fmt.Fprintln(tw, strings.Join(row[:len(row)-1], "\t")+"\t")
	}
	tw.Flush()
	for i, row := range r.Rows() {
		if row[len(row)-1] != "" {
			fmt.Fprintf(&b, "  CPU %d: %s\n", r.CPUs[i].CPU, row[len(row)-1])
		}
	}
	fmt.Fprintf(&b, "rule: %s\ncontext switches: %s\nother threads: %s\n", r.Rule, r.CtxSource, r.RunSource)
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
