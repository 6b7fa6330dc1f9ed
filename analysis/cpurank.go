package analysis

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rig-project/rig/internal/rundir"
)

// CPU ranking: the rounds of an arm with responder.cpu: quietest carry
// cpu-rank.json (rundir.Ranking), written by the responder host's agent
// before the round.

func decodeRank(b []byte) (*rundir.Ranking, error) {
	var r rundir.Ranking
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	if r.Format != rundir.RankingFormat || r.Get(r.Chosen) == nil {
		return nil, fmt.Errorf("not a CPU ranking (format %q, %d CPUs, chosen %d)", r.Format, len(r.CPUs), r.Chosen)
	}
	return &r, nil
}

// rankBlocks summarizes the arm's CPU rankings: which CPU each round ran
// on and why, with every candidate's evidence. Nil when no round of the
// arm was ranked.
func rankBlocks(a *TelemetryArm) []TelemetryBlock {
	var chosen, problems []string
	var rows [][]string
	var first *rundir.Ranking
	for _, rd := range a.Rounds {
		path := filepath.Join(rd.Dir, rundir.CPURankFile(rd.Responder))
		b, err := rundir.ReadRegular(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		var r *rundir.Ranking
		if err == nil {
			r, err = decodeRank(b)
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("round %d: %s: %v", rd.K, path, err))
			continue
		}
		if first == nil {
			first = r
		}
		c, next := r.Get(r.Chosen), ""
		switch {
		case c.Rank > 1: // a quieter one went to another responder on the machine
			next = fmt.Sprintf(", rank %d: CPU %s went to the other responders there", c.Rank, cpuList(rankedBefore(r, c.Rank)))
		case len(r.CPUs) > 1:
			next = fmt.Sprintf(", next CPU %d at %.0f µs/s", r.CPUs[1].CPU, r.CPUs[1].Cost)
		}
		chosen = append(chosen, fmt.Sprintf("round %d: CPU %d (%.0f µs/s%s)", rd.K, r.Chosen, c.Cost, next))
		for _, c := range r.CPUs {
			busiest := strings.Join(append(append([]string{}, c.TopThreads...), c.TopIRQs...), "; ")
			rows = append(rows, []string{fmt.Sprint(rd.K), fmt.Sprint(c.Rank), fmt.Sprint(c.CPU), f0(c.Cost), f0(c.RunUS),
				fmt.Sprintf("%.1f", c.StealPct), f0(c.CtxSwitches), fmt.Sprintf("%.1f", c.Runnable), f0(c.IRQs), f0(c.ArchIRQs), f0(c.Softirqs), busiest})
		}
	}
	if first == nil && len(problems) == 0 {
		return nil
	}
	var out []TelemetryBlock
	if first != nil {
		notes := ""
		if len(first.Notes) > 0 {
			notes = " Notes: " + strings.Join(first.Notes, "; ") + "."
		}
		out = append(out, TelemetryBlock{Text: fmt.Sprintf("Responder CPU chosen by ranking (responder.cpu: quietest) before each round, among %s, each watched %v from CPU %s: %s. Rule: %s. Other threads' run time: %s. Context switches: %s.%s",
			first.From, time.Duration(first.WindowNS), cpuList(first.RankerCPUs), strings.Join(chosen, "; "), first.Rule, first.RunSource, first.CtxSource, notes)})
		out = append(out, TelemetryBlock{Text: "CPU ranking per round (per second over the window; cost = the rank cost, own plus SMT siblings'; cpu-rank.json holds every field)",
			Head: []string{"round", "rank", "cpu", "cost µs/s", "other threads µs/s", "steal %", "ctx sw/s", "runnable", "dev irq/s", "other int/s", "softirq/s", "busiest there"},
			Rows: rows})
	}
	if len(problems) > 0 {
		out = append(out, TelemetryBlock{Text: "CPU ranking unreadable for " + strings.Join(problems, "; ") + "."})
	}
	return out
}

func f0(v float64) string { return fmt.Sprintf("%.0f", v) }

// rankedBefore lists the CPUs ranked above rank.
func rankedBefore(r *rundir.Ranking, rank int) []int {
	var l []int
	for _, c := range r.CPUs {
		if c.Rank < rank {
			l = append(l, c.CPU)
		}
	}
	return l
}
