package scenario

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"time"

	"github.com/rig-project/rig/internal/cpulist"
)

// The longest window a ranking may watch: it runs before every round.
const maxQuietestWindow = time.Minute

// responderCPU reads responder.cpu: a CPU number, `quietest`, or
// {quietest: LIST | allowed, window: D}.
func (c *checker) responderCPU(p string, v any) (*int, *Quietest) {
	hint := `write a CPU number (cpu: 3), quietest (cpu: quietest), or cpu: {quietest: "2-5", window: 1s}`
	switch x := v.(type) {
	case uint64, int64, int:
		n := toInt64(x)
		if n < 0 || n > cpulist.MaxCPU {
			c.val(p, fmt.Sprintf("CPU %d is out of range", n), fmt.Sprintf("CPU numbers are 0..%d", cpulist.MaxCPU))
			return nil, nil
		}
		cpu := int(n)
		return &cpu, nil
	case string:
		if x == "quietest" {
			return nil, &Quietest{}
		}
		h := hint
		if d := closest(x, []string{"quietest"}); d != "" {
			h = fmt.Sprintf("did you mean %q? %s", d, hint)
		}
		c.val(p, fmt.Sprintf("responder.cpu %q is not a CPU number or quietest", x), h)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		q := &Quietest{}
		ok := true
		for _, k := range keys {
			kp := p + "." + k
			switch k {
			case "quietest":
				if s, isStr := x[k].(string); isStr && s == "allowed" {
					continue
				}
				l, good := c.cpuList(kp, x[k])
				if !good {
					ok = false
					continue
				}
				q.CPUs = l
			case "numa":
				if v, isStr := x[k].(string); !isStr || v != "nic" {
					c.val(kp, fmt.Sprintf("numa %v: the one choice is nic", x[k]), "numa: nic ranks only the candidates on the NUMA node of the responder's interface")
					ok = false
					continue
				}
				q.NICNode = true
			case "window":
				d, good := c.duration(kp, x[k])
				if good && d > maxQuietestWindow {
					c.val(kp, fmt.Sprintf("window %v is longer than %v", d, maxQuietestWindow), "the ranking runs before every round; 1s (the default) to a few seconds is plenty")
					good = false
				}
				if !good {
					ok = false
					continue
				}
				q.Window = d
			default:
				h := "known fields in " + p + ": quietest, window, numa"
				if d := closest(k, []string{"quietest", "window", "numa"}); d != "" {
					h = fmt.Sprintf("did you mean %q? %s", d, h)
				}
				c.key(kp, fmt.Sprintf("unknown field %q in %s", k, p), h)
				ok = false
			}
		}
		if _, has := x["quietest"]; !has && ok {
			c.val(p, "responder.cpu as a mapping needs quietest:", `e.g. cpu: {quietest: "2-5"} (candidates) or cpu: {quietest: allowed, window: 2s}`)
			ok = false
		}
		if ok {
			return nil, q
		}
	default:
		c.val(p, fmt.Sprintf("responder.cpu %v is not a CPU number or quietest", v), hint)
	}
	return nil, nil
}

func toInt64(v any) int64 {
	switch y := v.(type) {
	case uint64:
		if y > math.MaxInt32 {
			return math.MaxInt64
		}
		return int64(y)
	case int64:
		return y
	case int:
		return int64(y)
	}
	return -1
}

// String is how the dry run and the logs name the choice.
func (q Quietest) String() string {
	from := "every CPU rig may use there"
	if q.CPUs != nil {
		from = cpulist.Format(q.CPUs)
	}
	w := q.Window
	if w == 0 {
		w = time.Second
	}
	if q.NICNode {
		from += " on the NUMA node of the responder's interface"
	}
	return fmt.Sprintf("the quietest of %s (ranked over %v on the host before each round)", from, w)
}

// QuietestCPUs are the candidates responder host h ranks for q: q.CPUs
// (nil: every CPU rig may use there), with numa: nic only those on the
// NUMA node of h's interface, which Validate read from h's facts.
func (s *Scenario) QuietestCPUs(h string, q Quietest) ([]int, error) {
	if !q.NICNode {
		return q.CPUs, nil
	}
	node, ok := s.NICNodeCPUs[h]
	if !ok {
		return nil, fmt.Errorf("responder.cpu numa: nic: the NUMA node of host %s's interface was not read (the scenario was not validated against its facts)", h)
	}
	if q.CPUs == nil {
		return node, nil
	}
	return cpulist.Intersect(q.CPUs, node), nil
}

// nicNode resolves numa: nic of responder host h's quietest in arm i:
// the CPUs of its interface's NUMA node, recorded for the runner; refused
// where the node is unknown or holds none of the candidates.
func (v *validator) nicNode(i int, h Host, hf *hostFacts) {
	q := v.s.KnobsFor(v.s.Arms[i], h.Name).Responder.Quietest
	if q == nil || !q.NICNode {
		return
	}
	p := v.knobField(i, h.Name, "responder.cpu.numa")
	nic, err := hf.f.NICNodeOf(h.Iface)
	switch {
	case v.s.Emulate != "":
		v.c.valOnce(p, "numa: nic in an emulated topology: its interfaces are veths, which are on no NUMA node", "leave numa: out of an emulated scenario")
		return
	case h.Iface == "":
		v.c.valOnce(p, fmt.Sprintf("numa: nic, and responder host %s has no iface", h.Name), fmt.Sprintf("name the interface (hosts.%s.iface)", h.Name))
		return
	case errors.Is(err, os.ErrNotExist):
		v.c.valOnce(p, fmt.Sprintf("numa: nic, and host %s does not report the NUMA node of %s: %v", h.Name, h.Iface, err), "install this rig's version on the host (its agent answers the facts)")
		return
	case nic < 0:
		v.c.valOnce(p, fmt.Sprintf("numa: nic, and the platform gives no NUMA node for %s on host %s (device/numa_node is -1 or absent)", h.Iface, h.Name),
			"leave numa: out (on a host with one node every CPU is on the NIC's), or list the candidates of the NIC's node in quietest:")
		return
	}
	node := hf.f.NodeCPUs(nic)
	if v.s.NICNodeCPUs == nil {
		v.s.NICNodeCPUs = map[string][]int{}
	}
	v.s.NICNodeCPUs[h.Name] = node
	if cands := q.candidatesOr(hf.online); len(cpulist.Intersect(cands, node)) == 0 {
		v.c.valOnce(p, fmt.Sprintf("numa: nic leaves no candidate: none of %s is on NUMA node %d of %s on host %s (its CPUs: %s)", listOrNone(cands), nic, h.Iface, h.Name, listOrNone(node)),
			fmt.Sprintf("list candidates from %s, or quietest: allowed", listOrNone(node)))
	}
}

// candidatesOr returns the candidate CPUs to check facts on: the list, or
// the host's online CPUs when the choice is among every allowed one.
func (q Quietest) candidatesOr(online []int) []int {
	if q.CPUs != nil {
		return slices.Clone(q.CPUs)
	}
	return slices.Clone(online)
}

// sharedQuietest refuses arm i's quietest responders that share a
// machine (the same boot id: namespaces of one kernel) unless one
// ranking can give each a CPU of its own, as the runner does: they rank
// the same candidates, at least one per responder once the CPUs the
// machine's other responders are pinned to are left out.
func (v *validator) sharedQuietest(i int, hosts map[string]*hostFacts) {
	a := v.s.Arms[i]
	byMachine := map[string][]string{}
	for _, n := range v.s.Responders {
		h := hosts[n]
		switch {
		case h == nil:
		case h.f.BootID != "":
			byMachine[h.f.BootID] = append(byMachine[h.f.BootID], n)
		case v.s.Fanout() && v.s.KnobsFor(a, n).Responder.Quietest != nil:
			v.c.valOnce(v.knobField(i, n, "responder.cpu"), fmt.Sprintf("cannot tell whether responder %s shares a machine with the others (two would rank the same quietest CPU): host %s does not report its kernel boot id", n, n),
				"install this rig's version on the host (its agent answers the facts), or pin the responders by number")
		}
	}
	for _, names := range byMachine {
		var quiet []string
		var taken, cands []int
		for _, n := range names {
			r := v.s.KnobsFor(a, n).Responder
			if r.CPU != nil {
				taken = append(taken, *r.CPU)
			}
			if r.Quietest == nil {
				continue
			}
			c, err := v.s.QuietestCPUs(n, *r.Quietest)
			if err != nil {
				return // numa: nic was refused
			}
			if c == nil {
				c = hosts[n].online
			}
			if len(quiet) > 0 && !slices.Equal(c, cands) {
				v.c.val(v.knobField(i, n, "responder.cpu"), fmt.Sprintf("arm %s: responders %s and %s are on one machine (the same boot id) and rank different candidates (%s and %s)", a.Name, quiet[0], n, listOrNone(cands), listOrNone(c)),
					"give them the same candidates: they are ranked once, and each takes the quietest CPU no other responder there has")
				return
			}
			quiet, cands = append(quiet, n), c
		}
		free := slices.DeleteFunc(slices.Clone(cands), func(c int) bool { return slices.Contains(taken, c) })
		if len(quiet) > len(free) {
			v.c.val(v.knobField(i, quiet[len(free)], "responder.cpu"), fmt.Sprintf("arm %s: %d of the responders on one machine rank for quietest among %s, which leaves %s once the CPUs pinned to the others (%s) are out", a.Name, len(quiet), listOrNone(cands), listOrNone(free), listOrNone(taken)),
				"list as many candidates as responders rank for them, or pin a responder by number")
		}
	}
}
