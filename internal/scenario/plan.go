package scenario

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/ethtoolnl"
	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/power"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/rundir"
)

// Plan is the arms × rounds schedule of a scenario.
type Plan struct {
	Arms     []Arm   // the arms that run, in file order, with their effective knobs
	Skipped  []Arm   // arms that Validate marked as skipped (Arm.Skip says why)
	Rounds   [][]int // Rounds[r] lists indexes into Arms in the order round r runs them
	Baseline int     // index into Arms of the baseline arm, -1 if it is skipped
}

// Plan orders the runnable arms for every round by s.Order:
//   - rotate: round r (0-based) runs arm (r+i) mod A at position i, so
//     each arm leads once per A rounds and drift is not mistaken for an arm;
//   - sequential: file order in every round;
//   - random:SEED: a Fisher-Yates shuffle per round driven by PCG(SEED, r),
//     the same on every machine and Go version.
func (s *Scenario) Plan() Plan {
	p := Plan{Baseline: -1}
	for _, a := range s.Arms {
		if a.Skip != "" {
			p.Skipped = append(p.Skipped, a)
			continue
		}
		if a.Name == s.Baseline {
			p.Baseline = len(p.Arms)
		}
		p.Arms = append(p.Arms, a)
	}
	n := len(p.Arms)
	if n == 0 {
		return p
	}
	for r := 0; r < s.Rounds; r++ {
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		switch s.Order.Kind {
		case OrderRotate:
			for i := range order {
				order[i] = (r + i) % n
			}
		case OrderRandom:
			rng := rand.NewPCG(s.Order.Seed, uint64(r))
			for i := n - 1; i > 0; i-- {
				j := int(rng.Uint64() % uint64(i+1))
				order[i], order[j] = order[j], order[i]
			}
		}
		p.Rounds = append(p.Rounds, order)
	}
	return p
}

// Duration is the sending time of the whole plan (setup and analysis not
// included).
func (p Plan) Duration(t Traffic) time.Duration {
	return time.Duration(len(p.Rounds)*len(p.Arms)) * t.RoundDuration()
}

// DryRunOptions says what the dry run may read.
type DryRunOptions struct {
	// Local is the FS of the responder host when that host is this machine
	// (via: local or emulate: netns); nil when it is remote, and then no
	// current values are shown.
	Local *hostfs.FS
	// Unchecked names hosts whose facts were not validated.
	Unchecked []string
	// Timestamping is what rig run will do with each checked host's NIC
	// timestamping (Scenario.TimestampPlans).
	Timestamping []TimestampPlan
}

// WriteDryRun prints the plan: the settings, the arm order of every round,
// and per arm what will change on which host, with current values where
// they can be read here.
func WriteDryRun(w io.Writer, s *Scenario, p Plan, o DryRunOptions) error {
	ew := &errWriter{w: w}
	t := s.Traffic
	ew.printf("scenario %s (%s)\n", s.Name, s.File)
	if s.Description != "" {
		ew.printf("  %s\n", strings.TrimSpace(strings.ReplaceAll(s.Description, "\n", "\n  ")))
	}
	reply := "unicast"
	if !t.UnicastReply() {
		reply = t.Reply.String()
	}
	requests, perArm := s.requestsSummary()
	ew.printf("traffic: requests %s, reply %s, every %v, %d per round (first %d are warm-up), %d B payload, reply timeout %v\n",
		requests, reply, t.Interval, t.Count, t.Warmup, t.Size, t.ReplyTimeout)
	ew.printf("timestamps: %s; rounds: %d; order: %s; baseline: %s; rig check first: %v\n", s.Timestamps, s.Rounds, s.Order, s.Baseline, s.RequireCheck)
	ew.printf("sending time: %d arms × %d rounds × %v = %v (plus setup)\n", len(p.Arms), len(p.Rounds), t.RoundDuration(), p.Duration(t))
	if s.Pcap {
		c := probe.DefaultCapture()
		c.Capacity, c.Responders = t.Count, len(s.Responders)
		c.VXLAN = slices.ContainsFunc(s.Hosts, func(h Host) bool { return h.Has(RoleCapture) && h.Mirror == MirrorVXLAN })
		n, mib := c.PcapBytes(t.Size), float64(1<<20)
		ew.printf("pcap: every round's capture writes %s, up to %.1f MiB a round (%d requests and %d replies, at most %d B of each frame; held in the capture host's memory until the round ends): %.1f MiB for the run on the results disk\n",
			rundir.PcapFile, float64(n)/mib, t.Count, t.Count*c.Responders, c.Snaplen(), float64(n)*float64(len(p.Arms)*len(p.Rounds))/mib)
	}
	ew.printf("\nhosts:")
	if s.Emulate != "" {
		ew.printf(" (emulate: %s — built by rig in network namespaces)", s.Emulate)
	}
	ew.printf("\n")
	for _, h := range s.Hosts {
		roles := make([]string, len(h.Roles))
		for i, r := range h.Roles {
			roles[i] = string(r)
		}
		iface := h.Iface
		if iface == "" {
			iface = "-"
		}
		ew.printf("  %-12s via %-24s roles %-26s iface %s\n", h.Name, h.Via, strings.Join(roles, ","), iface)
		if n := h.Node; n != nil {
			ew.printf("  %-12s via %-24s applies the node knobs (irq, cstate, power, tuned) of %s\n", n.Name, n.Via, h.Name)
		}
	}
	for _, u := range o.Unchecked {
		ew.printf("  note: facts of host %s were not checked (it is remote; the runner checks it before changing anything)\n", u)
	}
	if pods := s.kubectlHosts(); len(pods) > 1 && slices.ContainsFunc(s.Arms, func(a Arm) bool { return a.Request == RequestMulticast }) {
		ew.printf("  note: hosts %s are reached by kubectl (pods): multicast requests must cross the cluster network from node to node, which EKS, AKS and GKE do not carry without a multicast domain (EKS: a Transit Gateway multicast domain, docs/aws.md); where it does not, no request arrives: run scenarios/k8s-pinned-unicast.yaml and k8s-shared-unicast.yaml and rig compare the two (docs/kubernetes.md#the-network)\n", strings.Join(pods, ", "))
	}
	for _, h := range s.Hosts {
		if h.Mirror == MirrorVXLAN {
			ew.printf("  note: host %s captures VXLAN-encapsulated mirror copies (UDP 4789): its clock stamps the mirror session's copies as they reach %s, not the wire at the responder\n", h.Name, h.Iface)
		}
	}
	ew.printf("\nNIC timestamping (once for the run, before the first arm):\n")
	switch {
	case s.Emulate != "":
		ew.printf("  veth in the emulated topology: software stamps only; no NIC is changed\n")
	case s.Timestamps == TimestampsSoftware:
		ew.printf("  timestamps: software: the NICs' config is not used and not changed\n")
	case len(o.Timestamping) == 0:
		ew.printf("  no host checked here: each agent decides when the run starts\n")
	}
	for _, tp := range o.Timestamping {
		ew.printf("  %s\n", tp)
	}
	ew.printf("\nrounds:\n")
	for r, order := range p.Rounds {
		names := make([]string, len(order))
		for i, a := range order {
			names[i] = p.Arms[a].Name
		}
		ew.printf("  %d: %s\n", r+1, strings.Join(names, " → "))
	}
	rsp := s.HostWith(RoleResponder)
	rname, iface := "?", "IFACE"
	if rsp != nil {
		rname = rsp.Name
		if rsp.Iface != "" {
			iface = rsp.Iface
		}
	}
	if s.Fanout() {
		rname = strings.Join(s.Responders, ", ")
	}
	ew.printf("\narms (changes on host %s):\n", rname)
	for _, a := range p.Arms {
		tag := ""
		if a.Name == s.Baseline {
			tag = " (baseline)"
		}
		ew.printf("  %s%s\n", a.Name, tag)
		if perArm {
			ew.printf("    requests: %s\n", s.RequestsText(a, s.RequestAddr))
		}
		if l := senderText(a); l != "" {
			ew.printf("    %s\n", l)
		}
		lines := describe(a, iface, o.Local)
		if s.Fanout() {
			lines = nil
			for id, h := range s.Responders {
				ra := a
				ra.Effective, ra.Knobs = s.KnobsFor(a, h), merge(a.Knobs, a.PerResponder[h])
				hl := describe(ra, s.ifaceOf(h), o.Local)
				if len(hl) == 0 {
					hl = []string{"no changes: the host as it is"}
				}
				lines = append(lines, fmt.Sprintf("on %s (responder %d):", h, id))
				for _, l := range hl {
					lines = append(lines, "  "+l)
				}
			}
		}
		if len(lines) == 0 {
			ew.printf("    no changes: the host as it is\n")
		}
		for _, l := range lines {
			ew.printf("    %s\n", l)
		}
		for _, n := range a.Notes {
			ew.printf("    note: %s\n", n)
		}
	}
	if len(p.Skipped) > 0 {
		ew.printf("\nskipped arms:\n")
		for _, a := range p.Skipped {
			ew.printf("  %s: %s\n", a.Name, a.Skip)
		}
	}
	if len(s.Warnings) > 0 {
		ew.printf("\nwarnings (the run goes ahead):\n")
		for _, w := range s.Warnings {
			ew.printf("warning: %s\n", w.Error())
		}
	}
	return ew.err
}

// ifaceOf is host name's iface, "IFACE" when the file does not say.
func (s *Scenario) ifaceOf(name string) string {
	for _, h := range s.Hosts {
		if h.Name == name && h.Iface != "" {
			return h.Iface
		}
	}
	return "IFACE"
}

// senderText is the line of an arm that sets the sender's engine, poll or stack
// ("" when rig send's defaults run it).
func senderText(a Arm) string {
	e := a.Effective.Sender
	var parts []string
	if e.Engine != nil {
		parts = append(parts, "engine "+e.Engine.String())
	}
	if e.Poll != nil {
		parts = append(parts, "poll "+e.Poll.String())
	}
	if e.Stack != nil {
		parts = append(parts, "stack "+stackText(*e.Stack, "sender"))
	}
	if len(parts) == 0 {
		return ""
	}
	from := ""
	if a.Knobs.Sender == (Sender{}) {
		from = "  [defaults]"
	}
	return "sender process: " + strings.Join(parts, ", ") + from
}

// describe lists what an arm sets, one line per knob, with the current
// value where it is readable here.
func describe(a Arm, iface string, local *hostfs.FS) []string {
	e, k := a.Effective, a.Knobs
	var out []string
	from := func(set bool) string {
		if set {
			return ""
		}
		return "  [defaults]"
	}
	r := e.Responder
	if r.HasCPU() || r.Sched != nil || r.Poll != nil || r.Engine != nil || r.Stack != nil {
		var parts []string
		if r.CPU != nil {
			parts = append(parts, fmt.Sprintf("CPU %d", *r.CPU))
		}
		if r.Quietest != nil {
			parts = append(parts, "CPU "+r.Quietest.String())
		}
		if r.Sched != nil {
			parts = append(parts, "sched "+r.Sched.String())
		}
		if r.Poll != nil {
			parts = append(parts, "poll "+r.Poll.String())
		}
		if r.Engine != nil {
			parts = append(parts, "engine "+r.Engine.String())
		}
		if r.Stack != nil {
			parts = append(parts, "stack "+stackText(*r.Stack, "responder"))
		}
		set := k.Responder.HasCPU() || k.Responder.Sched != nil || k.Responder.Poll != nil || k.Responder.Engine != nil || k.Responder.Stack != nil
		out = append(out, "responder process: "+strings.Join(parts, ", ")+from(set))
	}
	if e.Noise != nil {
		out = append(out, fmt.Sprintf("noise window: rig noise on the responder CPU for %v before the round's probes (noise.json; with several responders on each one's CPU in turn, noise-<id>.json)%s", e.Noise.For, from(k.Noise != nil)))
	}
	if e.IRQ != nil && e.IRQ.CPUs != nil {
		out = append(out, fmt.Sprintf("IRQs of %s queues → CPUs %s (/proc/irq/N/smp_affinity_list; irqbalance held)%s", iface, cpulist.Format(e.IRQ.CPUs), from(k.IRQ != nil)))
	}
	if e.IRQ != nil && e.IRQ.Away {
		which := "every IRQ"
		if e.IRQ.CPUs != nil {
			which = "every IRQ but the queues'"
		}
		out = append(out, which+" of the host off the responder CPU (/proc/irq/N/smp_affinity_list minus it, or the housekeeping CPUs; managed IRQs named and left; irqbalance held)"+from(k.IRQ != nil))
	}
	if e.SMT != nil {
		out = append(out, "smt fence: the responder CPU's SMT siblings offline (/sys/devices/system/cpu/cpuN/online 0; their IRQs moved off first)"+from(k.SMT != nil))
	}
	if c := e.NIC.Coalesce; c != (ethtoolnl.Coalesce{}) {
		var parts []string
		for _, f := range []struct {
			n string
			b *bool
		}{{"adaptive-rx", c.AdaptiveRx}, {"adaptive-tx", c.AdaptiveTx}} {
			if f.b != nil {
				parts = append(parts, f.n+" "+onOff(*f.b))
			}
		}
		for _, f := range []struct {
			n string
			v *uint32
		}{{"rx-usecs", c.RxUsecs}, {"tx-usecs", c.TxUsecs}, {"rx-frames", c.RxFrames}, {"tx-frames", c.TxFrames}} {
			if f.v != nil {
				parts = append(parts, fmt.Sprintf("%s %d", f.n, *f.v))
			}
		}
		out = append(out, fmt.Sprintf("coalescing: ethtool -C %s %s%s", iface, strings.Join(parts, " "), from(k.NIC.Coalesce != (ethtoolnl.Coalesce{}))))
	}
	if g := e.NIC.Ring; g != (Ring{}) {
		var parts []string
		if g.RX != nil {
			parts = append(parts, fmt.Sprintf("rx %d", *g.RX))
		}
		if g.TX != nil {
			parts = append(parts, fmt.Sprintf("tx %d", *g.TX))
		}
		out = append(out, fmt.Sprintf("rings: ethtool -G %s %s%s", iface, strings.Join(parts, " "), from(k.NIC.Ring != (Ring{}))))
	}
	if e.NIC.Channels != nil {
		out = append(out, fmt.Sprintf("channels: ethtool -L %s combined %d%s", iface, *e.NIC.Channels, from(k.NIC.Channels != nil)))
	}
	if n := e.NIC.NAPI; n != (facts.NAPIKnobs{}) {
		var parts []string
		for _, f := range []struct {
			n string
			v *uint64
		}{{"gro_flush_timeout", n.GROFlushTimeout}, {"irq_suspend_timeout (netdev netlink, each NAPI instance)", n.IRQSuspendTimeout}} {
			if f.v != nil {
				parts = append(parts, fmt.Sprintf("%s %d ns", f.n, *f.v))
			}
		}
		if n.DeferHardIRQs != nil {
			parts = append([]string{fmt.Sprintf("napi_defer_hard_irqs %d", *n.DeferHardIRQs)}, parts...)
		}
		out = append(out, fmt.Sprintf("NAPI of %s: %s%s", iface, strings.Join(parts, ", "), from(k.NIC.NAPI != (facts.NAPIKnobs{}))))
	}
	if ps, prof := e.PowerSettings(), e.TunedProfile(); !ps.IsZero() || prof != "" {
		var tu power.Tuned
		if local != nil && local.IsReal() {
			tu = power.HostTuned(*local) // read-only: tuned-adm active
		}
		for _, l := range power.Describe(context.Background(), ps, prof, local, tu) {
			out = append(out, l+from(k.Power != nil || k.Tuned != nil))
		}
	}
	if cs := e.CState; cs != nil && r.Quietest != nil && cs.MaxLatencyUS == nil {
		out = append(out, "C-states on the CPU the ranking picks: "+cstateWhat(cs)+from(k.CState != nil))
	} else if cs != nil {
		out = append(out, cstateLines(cs, r.CPU, local, from(k.CState != nil))...)
	}
	if l := e.Load; l != nil {
		where := "stress-ng's default affinity"
		if l.CPUs != nil {
			where = "--taskset " + cpulist.Format(l.CPUs)
		}
		out = append(out, fmt.Sprintf("load: stress-ng %s (%s), stopped at the end of the arm%s", strings.Join(l.StressNG, " "), where, from(k.Load != nil)))
	}
	if sm := e.SMTSibling; sm != nil && r.Quietest != nil {
		out = append(out, fmt.Sprintf("smt-sibling load: stress-ng %s on the SMT sibling of the CPU the ranking picks%s", strings.Join(sm.StressNG, " "), from(k.SMTSibling != nil)))
	}
	if sm := e.SMTSibling; sm != nil && r.CPU != nil {
		sib := fmt.Sprintf("the SMT sibling of CPU %d", *r.CPU)
		if local != nil {
			if l, err := hostinfo.ThreadSiblings(*local, *r.CPU); err == nil {
				sib = fmt.Sprintf("CPU %s (sibling of %d)", cpulist.Format(slices.DeleteFunc(l, func(c int) bool { return c == *r.CPU })), *r.CPU)
			}
		}
		out = append(out, fmt.Sprintf("smt-sibling load: stress-ng %s on %s%s", strings.Join(sm.StressNG, " "), sib, from(k.SMTSibling != nil)))
	}
	if r.CPU != nil && local != nil && (e.Power == nil || e.Power.Governor == "") {
		if f, err := hostinfo.ReadFreq(*local, *r.CPU); err == nil {
			out = append(out, fmt.Sprintf("(unchanged) cpufreq governor of CPU %d: %s", *r.CPU, f.Governor))
		}
	}
	if len(e.Requires) > 0 {
		names := make([]string, len(e.Requires))
		for i, q := range e.Requires {
			names[i] = string(q)
		}
		out = append(out, "requires: "+strings.Join(names, ", "))
	}
	return out
}

func cstateLines(cs *CState, cpu *int, local *hostfs.FS, from string) []string {
	if cs.MaxLatencyUS != nil {
		return []string{fmt.Sprintf("C-states: /dev/cpu_dma_latency held open at %d µs (all CPUs)%s", *cs.MaxLatencyUS, from)}
	}
	what := cstateWhat(cs)
	if cpu == nil {
		return []string{"C-states: " + what + from}
	}
	line := fmt.Sprintf("C-states on CPU %d: %s%s", *cpu, what, from)
	if local == nil {
		return []string{line}
	}
	st, err := hostinfo.ReadIdleStates(*local, *cpu)
	if err != nil {
		return []string{line, fmt.Sprintf("  (current idle states unreadable: %v)", err)}
	}
	out := []string{line}
	for _, x := range st {
		target := slices.Contains(cs.Disable, x.Name) || (cs.Poll && x.Name != "POLL")
		if !target {
			continue
		}
		out = append(out, fmt.Sprintf("  %s (%s): disable %d → 1", strings.TrimPrefix(hostinfo.IdleStatePath(*cpu, x.Index), "/sys/devices/system/cpu/"), x.Name, b2i(x.Disabled)))
	}
	return out
}

func cstateWhat(cs *CState) string {
	if cs.Poll {
		return "disable every state but POLL"
	}
	return "disable " + strings.Join(cs.Disable, ", ")
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, a ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, a...)
	}
}

// kubectlHosts names the hosts reached by kubectl exec: pods, which may
// be on different nodes.
func (s *Scenario) kubectlHosts() []string {
	var pods []string
	for _, h := range s.Hosts {
		if len(h.Command) > 0 && filepath.Base(h.Command[0]) == "kubectl" {
			pods = append(pods, h.Name)
		}
	}
	return pods
}

// stackText is a stack as the dry run shows it: what launches it, and that
// the host of role (responder, sender) must have it (Validate checks its facts).
func stackText(st probe.Stack, role string) string {
	if st.Kernel() {
		return st.String()
	}
	i := st.Info()
	how := "LD_PRELOAD=" + i.Library
	if i.Launcher != "" {
		how = "launcher " + i.Launcher
	}
	if st.Env != "" {
		how += " " + strings.ReplaceAll(st.Env, ",", " ")
	}
	return fmt.Sprintf("%s (%s; refused before the run where the %s host lacks it)", st, how, role)
}
