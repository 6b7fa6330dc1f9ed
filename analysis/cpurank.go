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
// cpu-rank.json, written by the responder host's agent from
// internal/rundir.Ranking before the round. Like telemetry.json it is
// decoded with local structs (cpurank uses golang.org/x/sys);
// TestCPURankContract checks both agree.

type rankResult struct {
	Format     string    `json:"format"`
	Candidates []int     `json:"candidates"`
	From       string    `json:"from"`
	Chosen     int       `json:"chosen"`
	WindowNS   int64     `json:"window_ns"`
	Scans      int       `json:"scans"`
	RankerCPUs []int     `json:"ranker_cpus"`
	CtxSource  string    `json:"ctx_source"`
	RunSource  string    `json:"run_source"`
	Rule       string    `json:"rule"`
	CPUs       []rankCPU `json:"cpus"`
	Notes      []string  `json:"notes"`
}

type rankCPU struct {
	CPU         int      `json:"cpu"`
	Rank        int      `json:"rank"`
	Cost        float64  `json:"cost_us_per_s"`
	Own         float64  `json:"own_us_per_s"`
	Siblings    []int    `json:"smt_siblings"`
	IRQs        float64  `json:"irqs_per_s"`
	ArchIRQs    float64  `json:"arch_irqs_per_s"`
	Softirqs    float64  `json:"softirqs_per_s"`
	CtxSwitches float64  `json:"ctx_switches_per_s"`
	RunUS       float64  `json:"other_run_us_per_s"`
	Runnable    float64  `json:"runnable"`
	StealPct    float64  `json:"steal_pct"`
	TopIRQs     []string `json:"top_irqs"`
	TopThreads  []string `json:"top_threads"`
}

func decodeRank(b []byte) (*rankResult, error) {
	var r rankResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	if r.Format != "rig-cpu-rank" || len(r.CPUs) == 0 || r.CPUs[0].CPU != r.Chosen {
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
	var first *rankResult
	for _, rd := range a.Rounds {
		path := filepath.Join(rd.Dir, rundir.CPURank)
		b, err := rundir.ReadRegular(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		var r *rankResult
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
		next := ""
		if len(r.CPUs) > 1 {
			next = fmt.Sprintf(", next CPU %d at %.0f µs/s", r.CPUs[1].CPU, r.CPUs[1].Cost)
		}
		chosen = append(chosen, fmt.Sprintf("round %d: CPU %d (%.0f µs/s%s)", rd.K, r.Chosen, r.CPUs[0].Cost, next))
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
