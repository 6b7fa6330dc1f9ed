package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/scenario"
)

// pinQuietest resolves responder.cpu: quietest of arm's responders for
// one round: each responder host's agent ranks its candidates — before
// the arm's knobs are applied, so the arm's own loads do not steer the
// choice — and the round runs on the winner. Responders on one machine
// (the same boot id: namespaces of it) are ranked once, and each takes
// the quietest CPU no other responder there has, so two never share one.
// Each responder's ranking is kept in the round directory
// (rundir.CPURankFile; dir "" keeps nothing: the preflight's ranking).
// It returns every responder's knobs, the CPU pinned where it was ranked.
func (r *run) pinQuietest(ctx context.Context, arm scenario.Arm, dir string) ([]scenario.Knobs, error) {
	ks := make([]scenario.Knobs, len(r.hs.responders))
	byMachine := map[string][]int{} // responders by machine, in id order
	for i, h := range r.hs.responders {
		ks[i] = r.knobs(arm, i)
		m := r.bootID[h.Agent.Name]
		if m == "" {
			m = "host " + h.Agent.Name // unknown: a machine of its own
		}
		byMachine[m] = append(byMachine[m], i)
	}
	for _, ids := range byMachine {
		var quiet []int
		var taken []int // pinned by number: no ranked responder goes there
		for _, i := range ids {
			if ks[i].Responder.Quietest != nil {
				quiet = append(quiet, i)
			} else if c := ks[i].Responder.CPU; c != nil {
				taken = append(taken, *c)
			}
		}
		if len(quiet) == 0 {
			continue
		}
		h := r.hs.responders[quiet[0]].Agent
		q := ks[quiet[0]].Responder.Quietest
		cpus, err := r.s.QuietestCPUs(h.Name, *q)
		if err != nil {
			return nil, err
		}
		rk, err := h.RankCPUs(ctx, cpus, q.Window)
		if err != nil {
			return nil, fmt.Errorf("ranking the CPUs for responder.cpu: quietest on host %s: %w", h.Name, err)
		}
		fmt.Fprintf(r.o.Log, "  [%s] %s\n", h.Name, rk.Summary())
		var names, picks []string
		for _, i := range quiet {
			j := slices.IndexFunc(rk.CPUs, func(c rundir.RankedCPU) bool { return !slices.Contains(taken, c.CPU) })
			name := r.hs.responders[i].Agent.Name
			if j < 0 {
				return nil, fmt.Errorf("responder.cpu: quietest: no ranked CPU of %s left for responder %s on its machine (the others took %s)", h.Name, name, strings.Trim(fmt.Sprint(taken), "[]"))
			}
			cpu := rk.CPUs[j].CPU
			taken = append(taken, cpu)
			ks[i].Responder.CPU, ks[i].Responder.Quietest = &cpu, nil
			names, picks = append(names, name), append(picks, fmt.Sprintf("%s CPU %d", name, cpu))
		}
		for n, i := range quiet {
			mine := *rk
			mine.Chosen = *ks[i].Responder.CPU
			if len(quiet) > 1 {
				mine.Notes = append(slices.Clone(rk.Notes), fmt.Sprintf("ranked once for the responders %s on one machine, each taking the quietest CPU no other had: %s", strings.Join(names, ", "), strings.Join(picks, ", ")))
				fmt.Fprintf(r.o.Log, "  [%s] responder %s: CPU %d\n", h.Name, names[n], mine.Chosen)
			}
			if dir == "" {
				continue
			}
			b, err := json.MarshalIndent(&mine, "", "  ")
			if err != nil {
				return nil, err
			}
			if err := rundir.WriteFileAtomic(filepath.Join(dir, rundir.CPURankFile(uint32(i))), append(b, '\n')); err != nil {
				return nil, err
			}
		}
	}
	return ks, nil
}
