package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/rig-project/rig/internal/agent"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/scenario"
)

// pinQuietest resolves responder.cpu: quietest for one round: the
// responder host's agent ranks the candidates — before the arm's knobs are
// applied, so the arm's own loads do not steer the choice — and the round
// runs on the winner. The ranking is kept as cpu-rank.json in the round
// directory (dir "" keeps nothing: the preflight's ranking). Knobs without
// quietest come back as they are.
func (r *run) pinQuietest(ctx context.Context, rsp *agent.Client, k scenario.Knobs, dir string) (scenario.Knobs, *rundir.Ranking, error) {
	q := k.Responder.Quietest
	if q == nil {
		return k, nil, nil
	}
	cpus, err := r.s.QuietestCPUs(rsp.Name, *q)
	if err != nil {
		return k, nil, err
	}
	rk, err := rsp.RankCPUs(ctx, cpus, q.Window)
	if err != nil {
		return k, nil, fmt.Errorf("ranking the CPUs for responder.cpu: quietest on host %s: %w", rsp.Name, err)
	}
	fmt.Fprintf(r.o.Log, "  [%s] %s\n", rsp.Name, rk.Summary())
	if dir != "" {
		b, err := json.MarshalIndent(rk, "", "  ")
		if err != nil {
			return k, nil, err
		}
		if err := rundir.WriteFileAtomic(filepath.Join(dir, rundir.CPURank), append(b, '\n')); err != nil {
			return k, nil, err
		}
	}
	cpu := rk.Chosen
	k.Responder.CPU, k.Responder.Quietest = &cpu, nil
	return k, rk, nil
}
