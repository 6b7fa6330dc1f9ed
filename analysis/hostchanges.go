package analysis

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rig-project/rig/internal/rundir"
)

// HostChanges is what an arm did to one responder host in some rounds:
// the lines its agent reported changing and putting back (each round's
// host-changes.txt), the same in each of Rounds.
type HostChanges struct {
	Arm    string   `json:"arm"`
	Host   string   `json:"host"`
	Rounds []int    `json:"rounds"`
	Lines  []string `json:"lines"`
}

// hostChanges reads the host-changes.txt of every round on disk, used or
// left out (what an arm did to a host happened either way), each round
// directory once: a fan-out arm's responders share it. Per arm and host,
// rounds with the same lines are one entry, in the order the rounds ran.
// A round without the file changed nothing (or ran before rig wrote it);
// one that cannot be read is a problem.
func hostChanges(in *Input) (out []HostChanges, problems []string) {
	seen := map[string]bool{}
	for _, a := range in.Arms {
		arm := cmp.Or(a.Arm, a.Name)
		var rows []HostChanges
		var hosts []string
		for _, rd := range a.Rounds {
			if rd.Dir == "" || seen[rd.Dir] {
				continue
			}
			seen[rd.Dir] = true
			path := filepath.Join(rd.Dir, rundir.HostChanges)
			b, err := rundir.ReadRegular(path)
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			var cs []rundir.HostChange
			if err == nil {
				cs, err = rundir.ParseHostChanges(b)
			}
			if err != nil {
				problems = append(problems, fmt.Sprintf("arm %q round %d: %s: %v (its host changes are not shown)", arm, rd.K, path, err))
				continue
			}
			lines := map[string][]string{}
			for _, c := range cs {
				if !slices.Contains(hosts, c.Host) {
					hosts = append(hosts, c.Host)
				}
				lines[c.Host] = append(lines[c.Host], c.Line)
			}
			for _, h := range hosts {
				if lines[h] == nil {
					continue
				}
				i := slices.IndexFunc(rows, func(x HostChanges) bool { return x.Host == h && slices.Equal(x.Lines, lines[h]) })
				if i < 0 {
					rows, i = append(rows, HostChanges{Arm: arm, Host: h, Lines: lines[h]}), len(rows)
				}
				rows[i].Rounds = append(rows[i].Rounds, rd.K)
			}
		}
		slices.SortStableFunc(rows, func(x, y HostChanges) int { return slices.Index(hosts, x.Host) - slices.Index(hosts, y.Host) })
		out = append(out, rows...)
	}
	return out, problems
}

// hostChangesTable is a row per arm, host and set of rounds with the same
// lines; no rows when no round has host-changes.txt.
func hostChangesTable(r *Report) table {
	t := table{Title: "Host changes", Head: []string{"arm", "host", "rounds", "what the host's agent reported (· between lines)"},
		Caption: "Source: each round's host-changes.txt, what the responder hosts' agents reported changing for the arm (irq, smt.fence, cstate, power, tuned, nic knobs), " +
			"journaled and put back, and at the arm's end whether it held. Rule: per arm and host, the rounds whose lines are identical are one row; a round that differs has its own. " +
			"A round without the file changed nothing on the hosts (or ran under a rig that did not write it); one that cannot be read is a problem."}
	for _, h := range r.HostChanges {
		t.Rows = append(t.Rows, []string{h.Arm, h.Host, roundsCell(h.Rounds), strings.Join(h.Lines, " · ")})
	}
	return t
}

// roundsCell names rounds, runs of consecutive ones as ranges: "round 1",
// "rounds 0–2, 4".
func roundsCell(ks []int) string {
	var parts []string
	for i := 0; i < len(ks); {
		j := i
		for j+1 < len(ks) && ks[j+1] == ks[j]+1 {
			j++
		}
		p := strconv.Itoa(ks[i])
		if j > i {
			p += "–" + strconv.Itoa(ks[j])
		}
		parts, i = append(parts, p), j+1
	}
	if len(ks) == 1 {
		return "round " + parts[0]
	}
	return "rounds " + strings.Join(parts, ", ")
}
