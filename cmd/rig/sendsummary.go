package main

import (
	"fmt"
	"io"

	"github.com/rig-project/rig/analysis"
	"github.com/rig-project/rig/internal/samples"
)

// printSendSummary prints the one-screen summary of a round at the sender,
// computed by the analysis package (the same metric, clock-source and
// percentile rules as every report).
func printSendSummary(w io.Writer, j *samples.Joined, warmup int) error {
	c := j.Counters[samples.RoleSender]
	fmt.Fprintf(w, "sent %d  received %d  lost %d  duplicated %d  reordered %d  late %d  TX stamps missing %d\n",
		c.Sent, c.Received, c.Lost, c.Duplicated, c.Reordered, c.Late, c.TxStampsMissing)
	in := &analysis.Input{Run: "send", Warmup: warmup, Arms: []analysis.InputArm{{Name: "send",
		Rounds: []analysis.InputRound{{K: 0, Load: func() (*samples.Joined, error) { return j, nil }}}}}}
	r, err := analysis.Analyze(in, analysis.Options{})
	if err != nil {
		return err
	}
	arm := r.Arm("send")
	fmt.Fprintf(w, "%-12s %7s %10s %10s %10s %10s  %s\n", "metric", "n", "median", "p99", "p99.9", "worst", "clock source (formula)")
	for _, name := range []string{analysis.RTT, analysis.RTTFromDue, analysis.Lateness} {
		m := arm.Metrics[name]
		if m == nil || len(m.Rounds) == 0 {
			fmt.Fprintf(w, "%-12s %7d %10s %10s %10s %10s  not available from these stamps\n", name, 0, "-", "-", "-", "-")
			continue
		}
		rs := m.Rounds[0]
		us := func(v *int64) string {
			if v == nil {
				return "-"
			}
			return analysis.FormatUS(*v)
		}
		fmt.Fprintf(w, "%-12s %7d %10s %10s %10s %10s  %s (%s)\n", name, rs.N, us(rs.MedianNS), us(rs.P99NS), us(rs.P999NS),
			us(rs.WorstNS), m.Source, m.Formula)
	}
	fmt.Fprintf(w, "µs; %s; %s; received includes late replies (more than the reply timeout after their send), which are not in rtt; lateness covers every sent request, rtt_from_due every reply", r.Rules.Percentile, r.Rules.WarmupRule)
	if arm.Requests != "" {
		fmt.Fprintf(w, "; requests: %s", arm.Requests)
	}
	fmt.Fprintf(w, "; rules: %s\n", r.Rules.Doc)
	return nil
}
