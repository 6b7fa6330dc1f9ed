package hostctl

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/scenario"
	"github.com/rig-project/rig/nicctl"
)

// steer fences the responder CPU's SMT siblings (smt.fence) and moves the
// host's IRQs off the measured CPUs (irq.away). The fence takes the
// siblings offline: the only way to keep every task and IRQ off them that
// holds for the whole round (moving each task's affinity instead races
// with every task forked after it, which inherits its parent's). Their
// IRQs are moved first, journaled, because the kernel would otherwise
// widen an IRQ left without an online CPU to every CPU itself, and
// onlining does not narrow it again.
func (ap *Applied) steer(ctx context.Context, k scenario.Knobs, iface string) error {
	away := k.IRQ != nil && k.IRQ.Away
	if !away && k.SMT == nil {
		return nil
	}
	h := ap.host
	if h.Journal == nil || h.NIC == nil {
		return errors.New("irq.away and smt.fence need the journal and the host's IRQ control")
	}
	if k.Responder.CPU == nil {
		return errors.New("irq.away and smt.fence need responder.cpu")
	}
	cpu := *k.Responder.CPU
	measured := []int{cpu}
	if away && k.IRQ.AwayFrom != nil {
		measured = k.IRQ.AwayFrom
	}
	var fence []int
	if k.SMT != nil {
		var err error
		if fence, err = fenceable(h.FS, cpu, measured); err != nil {
			return err
		}
	}
	from := fence
	if away {
		from = cpulist.Union(measured, fence)
	}
	// Never the measured CPU, even when only the siblings are cleared.
	to, err := housekeeping(h.FS, cpulist.Union(measured, fence))
	if err != nil {
		return err
	}
	a := nicctl.Away{From: from, To: to}
	if k.IRQ != nil && k.IRQ.CPUs != nil {
		a.Keep = iface
	}
	label := "irq away"
	if !away {
		label = "smt fence"
	}
	changes, left, err := nicctl.IRQsAway(ctx, h.NIC, h.Journal, a)
	moved := 0
	for _, c := range changes {
		if c.What != "irqbalance" && c.Err == "" && c.Previous != c.Effective {
			moved++
		}
		ap.Report = append(ap.Report, awayLine(label, c))
	}
	if err != nil {
		return err
	}
	sum := fmt.Sprintf("%s: %d IRQs moved off CPU %s (housekeeping CPUs %s)", label, moved, cpulist.Format(from), cpulist.Format(to))
	if len(left) > 0 {
		sum += "; LEFT on it: " + strings.Join(left, ", ")
	}
	ap.Report = append(ap.Report, sum)
	still := onCPUs(h.FS, from)
	for _, c := range fence {
		p := onlineFile(c)
		r, err := h.Journal.Apply(ctx, journal.SysfsChange(h.FS, h.FS.Root, p, "0\n"))
		if err != nil {
			return fmt.Errorf("smt fence: %s: %w", p, err)
		}
		if eff := strings.TrimSpace(r.Effective); eff != "0" {
			return fmt.Errorf("smt fence: %s reads %q after writing 0: CPU %d is still online", p, eff, c)
		}
		ap.Report = append(ap.Report, fmt.Sprintf("smt fence: cpu%d offline (%s %s → 0, read back): no task or IRQ can run there", c, p, strings.TrimSpace(r.Previous)))
	}
	ap.steered = &steered{label: label, from: from, fenced: fence, left: still}
	return nil
}

// steered is what an arm's irq.away and smt.fence left in force, checked
// again when the arm ends: what the run claims held for the whole round.
type steered struct {
	label        string // irq away, or smt fence alone
	from, fenced []int
	left         map[int]bool // IRQs on from (or unreadable) once they were moved
}

// check reports, one line each, whether the fenced CPUs are still offline
// and whether any IRQ came back to the cleared CPUs during the arm (moved
// by something else, or new); what it cannot read says "cannot tell".
func (s *steered) check(fsys hostfs.FS) []string {
	var out []string
	for _, c := range s.fenced {
		switch v, err := fsys.ReadString(onlineFile(c)); {
		case err != nil:
			out = append(out, fmt.Sprintf("smt fence: cannot tell whether cpu%d stayed offline to the end of the arm: %v", c, err))
		case v != "0":
			out = append(out, fmt.Sprintf("smt fence: cpu%d was online again at the end of the arm (online reads %q): the fence did not hold for the whole round", c, v))
		default:
			out = append(out, fmt.Sprintf("smt fence: cpu%d still offline at the end of the arm", c))
		}
	}
	now := onCPUs(fsys, s.from)
	if now == nil {
		return append(out, s.label+": cannot tell whether the IRQs stayed off CPU "+cpulist.Format(s.from)+": /proc/irq cannot be read")
	}
	var back []int
	for n := range now {
		if !s.left[n] {
			back = append(back, n)
		}
	}
	if len(back) == 0 {
		return append(out, s.label+": held to the end of the arm: no IRQ came back to CPU "+cpulist.Format(s.from))
	}
	slices.Sort(back)
	return append(out, fmt.Sprintf("%s: back on CPU %s at the end of the arm (moved by something else, or new): IRQ %s", s.label, cpulist.Format(s.from), strings.Trim(fmt.Sprint(back), "[]")))
}

// onCPUs is the set of IRQs whose affinity includes a CPU of cpus or
// cannot be read; nil when /proc/irq cannot be listed.
func onCPUs(fsys hostfs.FS, cpus []int) map[int]bool {
	irqs, err := facts.HostIRQs(fsys)
	if err != nil {
		return nil
	}
	out := map[int]bool{}
	for _, q := range irqs {
		l, err := cpulist.Parse(q.Affinity)
		if q.Affinity == "" || err != nil || slices.ContainsFunc(l, func(c int) bool { return slices.Contains(cpus, c) }) {
			out[q.Number] = true
		}
	}
	return out
}

func awayLine(label string, c nicctl.Change) string {
	line := fmt.Sprintf("%s: %s %s → %s (effective %s)", label, c.What, c.Previous, c.Requested, c.Effective)
	if c.Note != "" {
		line += " — " + c.Note
	}
	if c.Err != "" {
		line += " — error: " + c.Err
	}
	return line
}

func onlineFile(cpu int) string { return fmt.Sprintf("/sys/devices/system/cpu/cpu%d/online", cpu) }

// fenceable returns cpu's SMT siblings, after probing that each can be
// taken offline and put back as it was: not CPU 0 (the boot CPU), not a
// measured CPU, an online file that exists and is writable, no process
// pinned to the siblings alone (the kernel would widen its affinity for
// good), and no cgroup v1 cpuset that lists them (v1 drops an offlined
// CPU from cpuset.cpus and does not add it back).
func fenceable(fsys hostfs.FS, cpu int, measured []int) ([]int, error) {
	sibs, err := hostinfo.ThreadSiblings(fsys, cpu)
	if err != nil {
		return nil, fmt.Errorf("smt fence: %w", err)
	}
	sibs = slices.DeleteFunc(sibs, func(c int) bool { return c == cpu })
	if len(sibs) == 0 {
		return nil, fmt.Errorf("smt fence: CPU %d has no SMT sibling: %w", cpu, errors.ErrUnsupported)
	}
	for _, c := range sibs {
		p := onlineFile(c)
		switch st, err := os.Stat(fsys.Path(p)); {
		case c == 0:
			return nil, fmt.Errorf("smt fence: the sibling of CPU %d is CPU 0, which rig does not take offline", cpu)
		case slices.Contains(measured, c):
			return nil, fmt.Errorf("smt fence: the sibling of CPU %d is CPU %d, which this round measures too", cpu, c)
		case err != nil:
			return nil, fmt.Errorf("smt fence: CPU %d cannot be taken offline: %w", c, err)
		case st.Mode().Perm()&0o200 == 0:
			return nil, fmt.Errorf("smt fence: CPU %d cannot be taken offline: %s is read-only", c, p)
		}
	}
	pinned, err := pinnedTo(fsys, sibs)
	if err != nil {
		return nil, fmt.Errorf("smt fence: %w", err)
	}
	sets, err := v1Cpusets(fsys, sibs)
	if err != nil {
		return nil, fmt.Errorf("smt fence: %w", err)
	}
	if len(pinned)+len(sets) > 0 {
		return nil, fmt.Errorf("smt fence: taking CPU %s offline would change what onlining does not give back: %s", cpulist.Format(sibs), strings.Join(append(pinned, sets...), ", "))
	}
	return sibs, nil
}

// pinnedTo names the user processes whose affinity holds only CPUs of
// cpus (kernel threads, children of kthreadd, park and come back).
func pinnedTo(fsys hostfs.FS, cpus []int) ([]string, error) {
	ents, err := fsys.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := fsys.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue // gone since the listing
		}
		f := map[string]string{}
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok {
				f[k] = strings.TrimSpace(v)
			}
		}
		if e.Name() == "2" || f["PPid"] == "2" {
			continue
		}
		allowed, err := cpulist.Parse(f["Cpus_allowed_list"])
		if err == nil && len(allowed) > 0 && !slices.ContainsFunc(allowed, func(c int) bool { return !slices.Contains(cpus, c) }) {
			out = append(out, fmt.Sprintf("pid %s (%s) is pinned to CPU %s", e.Name(), f["Name"], f["Cpus_allowed_list"]))
		}
	}
	return out, nil
}

// v1Cpusets names the cgroup v1 cpusets below /sys/fs/cgroup/cpuset
// (the root excepted: it follows the online CPUs) that list a CPU of cpus.
func v1Cpusets(fsys hostfs.FS, cpus []int) ([]string, error) {
	const base = "/sys/fs/cgroup/cpuset"
	if !fsys.Exists(base + "/cpuset.cpus") {
		return nil, nil
	}
	var out []string
	err := fs.WalkDir(os.DirFS(fsys.Path(base)), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == "." {
			return err
		}
		v, err := fsys.ReadString(path.Join(base, p, "cpuset.cpus"))
		l, perr := cpulist.Parse(v)
		if err == nil && perr == nil && slices.ContainsFunc(l, func(c int) bool { return slices.Contains(cpus, c) }) {
			out = append(out, fmt.Sprintf("cgroup v1 cpuset %s lists CPU %s", p, cpulist.Format(l)))
		}
		return nil
	})
	return out, err
}

// housekeeping is where an IRQ goes whose affinity holds only CPUs of
// from: the online CPUs outside from that are neither isolated (isolcpus)
// nor nohz_full; where that leaves none, every online CPU outside from.
func housekeeping(fsys hostfs.FS, from []int) ([]int, error) {
	online, err := hostinfo.OnlineCPUs(fsys)
	if err != nil {
		return nil, err
	}
	isolated, err := hostinfo.IsolatedCPUs(fsys)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	nohz, err := hostinfo.NohzFullCPUs(fsys)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	rest := slices.DeleteFunc(online, func(c int) bool { return slices.Contains(from, c) })
	hk := slices.DeleteFunc(slices.Clone(rest), func(c int) bool { return slices.Contains(isolated, c) || slices.Contains(nohz, c) })
	if len(hk) == 0 {
		hk = rest
	}
	if len(hk) == 0 {
		return nil, fmt.Errorf("irq away: no online CPU is left for the IRQs once CPU %s is cleared", cpulist.Format(from))
	}
	return hk, nil
}
