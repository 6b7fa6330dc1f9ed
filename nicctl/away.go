package nicctl

import (
	"context"
	"fmt"
	"slices"

	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/journal"
)

// Away says which CPUs IRQsAway clears and where it puts what has nowhere
// else to go.
type Away struct {
	From []int // the measured CPUs (and the fenced SMT siblings)
	To   []int // the housekeeping CPUs, for an IRQ whose affinity holds only From
	// Keep is an interface whose queue IRQs stay where they are (irq.cpus
	// placed them); "" keeps none.
	Keep string
}

// IRQsAway moves every IRQ of the host (/proc/irq/N, not only a NIC's)
// whose affinity includes a CPU of a.From off them, through j: its
// affinity minus a.From, or a.To where that leaves nothing. irqbalance is
// held first, as for the NIC's queue IRQs: it would move them back. An IRQ
// the kernel will not let go (managed: read-only, or refused with EIO or
// EPERM) and one without smp_affinity_list are left and named in their
// Change's Note, as are a.Keep's queue IRQs; left names those of them
// that may still run on a.From (or cannot tell).
func IRQsAway(ctx context.Context, env *Env, j *journal.Journal, a Away) (out []Change, left []string, err error) {
	if env.IRQBalance != nil {
		chg, err := holdIRQBalance(ctx, env, j)
		if chg != nil {
			out = append(out, *chg)
		}
		if err != nil {
			return out, nil, err
		}
	}
	keep := map[int]bool{}
	if a.Keep != "" {
		d, err := facts.FindDevice(env.FS, a.Keep)
		if err != nil {
			return out, nil, err
		}
		qs, err := queueIRQs(env, d)
		if err != nil {
			return out, nil, err
		}
		for _, q := range qs {
			keep[q.Number] = true
		}
	}
	irqs, err := facts.HostIRQs(env.FS)
	if err != nil {
		return out, nil, err
	}
	from := cpulist.Format(a.From)
	for _, q := range irqs {
		if q.Affinity == "" {
			what := fmt.Sprintf("irq %d", q.Number)
			if q.Name != "" {
				what += " (" + q.Name + ")"
			}
			// No affinity to read: whether it fires on From cannot be told.
			out = append(out, Change{What: what, Previous: "?", Requested: "?", Effective: "?", Note: q.ManagedWhy + ": left alone; cannot tell whether it runs on CPU " + from})
			left = append(left, fmt.Sprintf("IRQ %d (%s: cannot tell)", q.Number, q.ManagedWhy))
			continue
		}
		cur, err := cpulist.Parse(q.Affinity)
		if err != nil {
			return out, left, fmt.Errorf("IRQ %d: smp_affinity_list: %w", q.Number, err)
		}
		on := func(c int) bool { return slices.Contains(a.From, c) }
		if !slices.ContainsFunc(cur, on) {
			continue
		}
		if keep[q.Number] {
			out = append(out, Change{What: fmt.Sprintf("irq %d (%s)", q.Number, q.Name), Previous: q.Affinity, Requested: q.Affinity, Effective: q.Affinity, Note: "queue IRQ of " + a.Keep + ": left where irq.cpus put it"})
			continue
		}
		want := slices.DeleteFunc(cur, on)
		if len(want) == 0 {
			want = a.To
		}
		chg, why, err := setQueueAffinity(ctx, env, j, q, want)
		out = append(out, chg)
		if err != nil {
			return out, left, err
		}
		if why != "" {
			left = append(left, why)
		}
	}
	return out, left, nil
}
