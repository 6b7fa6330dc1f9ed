package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/rig-project/rig/analysis"
	"github.com/rig-project/rig/internal/samples"
)

// sendSummaryVersion is the format_version of `rig send --format json`:
// raised when a field changes meaning or goes away (adding one does not).
const sendSummaryVersion = 1

// sendSummaryHelp says in rig send -h what the summary is; docs/cli.md
// lists the JSON form's fields.
const sendSummaryHelp = `At the end of the round the summary goes to stdout (--quiet: none): the
counters and rtt, rtt_from_due and lateness with their clock sources, as
text, or with --format json as one JSON object for scripts
({"format": "rig-send-summary", "format_version": 1, "counters": {...},
"metrics": [...], "rules": {...}}, integer ns; docs/cli.md lists the fields).
Log lines go to stderr.`

// sendSummary is the round at the sender, computed by the analysis package
// (the same metric, clock-source and percentile rules as every report).
type sendSummary struct {
	Format        string         `json:"format"` // "rig-send-summary"
	FormatVersion int            `json:"format_version"`
	RunID         string         `json:"run_id"`
	Iface         string         `json:"iface"`
	Requests      string         `json:"requests"` // where the requests went, as the tables say it
	IntervalNS    int64          `json:"interval_ns"`
	Count         int            `json:"count"` // requests planned
	Size          int            `json:"size"`  // UDP payload bytes
	Warmup        int            `json:"warmup"`
	Responder     uint32         `json:"responder"` // whose replies (--id); fan-out prints one object per responder
	Counters      sendCounters   `json:"counters"`
	Metrics       []sendMetric   `json:"metrics"`
	Rules         analysis.Rules `json:"rules"`
}

// sendCounters are the sender's counters, every one present (zero too).
type sendCounters struct {
	Sent            uint64 `json:"sent"`
	Received        uint64 `json:"received"` // late replies included
	Lost            uint64 `json:"lost"`
	Duplicated      uint64 `json:"duplicated"`
	Reordered       uint64 `json:"reordered"`
	Late            uint64 `json:"late"` // more than the reply timeout after their send
	TxStampsMissing uint64 `json:"tx_stamps_missing"`
}

type sendMetric struct {
	Name      string `json:"name"`
	Available bool   `json:"available"`
	Source    string `json:"source,omitempty"`
	Formula   string `json:"formula,omitempty"`
	Clock     string `json:"clock,omitempty"`
	Note      string `json:"note,omitempty"`
	*analysis.RoundStats
}

func summarizeSend(j *samples.Joined, warmup int) (*sendSummary, error) {
	c := j.Counters[samples.RoleSender]
	in := &analysis.Input{Run: "send", Warmup: warmup, Arms: []analysis.InputArm{{Name: "send",
		Rounds: []analysis.InputRound{{K: 0, Load: func() (*samples.Joined, error) { return j, nil }}}}}}
	r, err := analysis.Analyze(in, analysis.Options{})
	if err != nil {
		return nil, err
	}
	arm := r.Arm("send")
	h := j.Header
	s := &sendSummary{Format: "rig-send-summary", FormatVersion: sendSummaryVersion, RunID: h.RunID, Iface: h.Iface,
		Requests: arm.Requests, IntervalNS: h.IntervalNS, Count: h.Count, Size: h.Size, Warmup: warmup, Responder: j.Responder,
		Counters: sendCounters{c.Sent, c.Received, c.Lost, c.Duplicated, c.Reordered, c.Late, c.TxStampsMissing},
		Rules:    r.Rules}
	for _, name := range []string{analysis.RTT, analysis.RTTFromDue, analysis.Lateness} {
		m := arm.Metrics[name]
		if m == nil || len(m.Rounds) == 0 {
			s.Metrics = append(s.Metrics, sendMetric{Name: name, Note: "not available from these stamps"})
			continue
		}
		s.Metrics = append(s.Metrics, sendMetric{Name: name, Available: true, Source: m.Source, Formula: m.Formula,
			Clock: m.Clock, Note: m.Note, RoundStats: &m.Rounds[0]})
	}
	return s, nil
}

// printSendSummary prints the summary of a round at the sender in format
// (text or json).
func printSendSummary(w io.Writer, format string, j *samples.Joined, warmup int) error {
	s, err := summarizeSend(j, warmup)
	if err != nil {
		return err
	}
	if format == "json" {
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(s)
	}
	c := s.Counters
	fmt.Fprintf(w, "sent %d  received %d  lost %d  duplicated %d  reordered %d  late %d  TX stamps missing %d\n",
		c.Sent, c.Received, c.Lost, c.Duplicated, c.Reordered, c.Late, c.TxStampsMissing)
	fmt.Fprintf(w, "%-12s %7s %10s %10s %10s %10s  %s\n", "metric", "n", "median", "p99", "p99.9", "worst", "clock source (formula)")
	us := func(v *int64) string {
		if v == nil {
			return "-"
		}
		return analysis.FormatUS(*v)
	}
	for _, m := range s.Metrics {
		if !m.Available {
			fmt.Fprintf(w, "%-12s %7d %10s %10s %10s %10s  %s\n", m.Name, 0, "-", "-", "-", "-", m.Note)
			continue
		}
		fmt.Fprintf(w, "%-12s %7d %10s %10s %10s %10s  %s (%s)\n", m.Name, m.N, us(m.MedianNS), us(m.P99NS), us(m.P999NS),
			us(m.WorstNS), m.Source, m.Formula)
	}
	fmt.Fprintf(w, "µs; %s; %s; received includes late replies (more than the reply timeout after their send), which are not in rtt; lateness covers every sent request, rtt_from_due every reply", s.Rules.Percentile, s.Rules.WarmupRule)
	if s.Requests != "" {
		fmt.Fprintf(w, "; requests: %s", s.Requests)
	}
	fmt.Fprintf(w, "; rules: %s\n", s.Rules.Doc)
	return nil
}
