package scenario

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/power"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/tstamp"
)

// HostError is a failure to read a host's facts (not a problem in the file).
type HostError struct {
	Host string
	Err  error
}

func (e *HostError) Error() string { return fmt.Sprintf("host %s: reading facts: %v", e.Host, e.Err) }
func (e *HostError) Unwrap() error { return e.Err }

// Validate checks s against the facts of its hosts, before anything on any
// host changes. facts maps host names to their facts; a host missing from
// the map is not checked (Unchecked lists them). It sets Arm.Skip for arms
// whose requirements the responder host lacks and clears it for the others.
//
// Problems in the file against the facts come back as an ErrorList, each
// pointing at the field at fault; a failure to read facts is a *HostError.
func Validate(s *Scenario, byHost map[string]*facts.Facts) error {
	v := &validator{s: s, c: &checker{x: s.pos}}
	for i := range s.Arms {
		s.Arms[i].Skip, s.Arms[i].Notes = "", nil
	}
	s.RequestAddr, s.NICNodeCPUs = netip.Addr{}, nil
	err := v.run(byHost)
	s.Warnings = v.c.warns.sorted()
	if err != nil {
		return err
	}
	if len(v.c.errs) > 0 {
		return v.c.errs.sorted()
	}
	return nil
}

// Unchecked lists the hosts of s, and their node agents, that facts does
// not cover.
func (s *Scenario) Unchecked(byHost map[string]*facts.Facts) []string {
	var out []string
	for _, h := range s.Hosts {
		if byHost[h.Name] == nil {
			out = append(out, h.Name)
		}
		if h.Node != nil && byHost[h.Node.Name] == nil {
			out = append(out, h.Node.Name)
		}
	}
	return out
}

type validator struct {
	s *Scenario
	c *checker
}

// hostFacts is one host's facts as validation reads them.
type hostFacts struct {
	name     string
	f        *facts.Facts
	online   []int
	isolated []int
	nohz     []int
	ifaces   []string // none for an emulated topology: the lab makes its own
}

func (v *validator) load(name string, f *facts.Facts) *hostFacts {
	h := &hostFacts{name: name, f: f, online: f.Online, isolated: f.Isolated, nohz: f.NohzFull}
	if v.s.Emulate == "" {
		h.ifaces = f.Ifaces
	}
	return h
}

func listOrNone(l []int) string {
	if len(l) == 0 {
		return "none"
	}
	return cpulist.Format(l)
}

func (v *validator) run(byHost map[string]*facts.Facts) error {
	s, c := v.s, v.c
	hosts := map[string]*hostFacts{}
	for _, h := range s.Hosts {
		f := byHost[h.Name]
		if f == nil {
			continue
		}
		hf := v.load(h.Name, f)
		hosts[h.Name] = hf
		if h.CPU != nil {
			v.cpus("hosts."+h.Name+".cpu", []int{*h.CPU}, hf, "the sender's or capture's CPU")
		}
		if h.Iface != "" && !slices.Contains(hf.ifaces, h.Iface) {
			hint := "interfaces there: " + strings.Join(hf.ifaces, ", ")
			if d := closest(h.Iface, hf.ifaces); d != "" {
				hint = fmt.Sprintf("did you mean %q? %s", d, hint)
			}
			c.val("hosts."+h.Name+".iface", fmt.Sprintf("interface %s does not exist on host %s", h.Iface, h.Name), hint)
		}
		if f := byHost[NodeName(h.Name)]; h.Node != nil && f != nil {
			hosts[h.Node.Name] = v.load(h.Node.Name, f)
		}
	}
	if s.Timestamps == TimestampsHardware {
		for _, tp := range s.timestampPlans(hosts) {
			if tp.Err != nil {
				if errors.Is(tp.Err, errors.ErrUnsupported) {
					continue // a fake host root: nothing to ask
				}
				return &HostError{tp.Host, tp.Err}
			}
			if tp.Decision.Action == tstamp.ActRefuse {
				c.val("timestamps", fmt.Sprintf("timestamps: hardware, and on host %s (%s): %s", tp.Host, tp.Need, tp.Decision.Why), tp.Decision.Fix)
			}
		}
	}
	if snd := s.HostWith(RoleSender); snd != nil && hosts[snd.Name] != nil {
		for i := range s.Arms {
			v.sendNative(i, hosts[snd.Name])
		}
	}
	rsp := s.HostWith(RoleResponder)
	if rsp == nil {
		return nil
	}
	hf := hosts[rsp.Name]
	if hf == nil {
		return nil
	}
	// Where a host's node knobs are checked: its node agent's facts
	// (nil: not read), or its own.
	node := func(h *Host) *hostFacts {
		if h.Node != nil {
			return hosts[h.Node.Name]
		}
		return hosts[h.Name]
	}
	nf := node(rsp)
	// Knobs as written, each checked where it is written.
	v.knobs("defaults", s.Defaults, hf, nf)
	for i, a := range s.Arms {
		v.knobs(fmt.Sprintf("arms[%d]", i), a.Knobs, hf, nf)
	}
	// Knobs under responders: on their own responder host.
	for _, name := range s.Responders {
		h := hosts[name]
		if h == nil {
			continue
		}
		n := node(s.host(name))
		if name != rsp.Name && n != nil {
			// The knobs of defaults and the arms act on every responder:
			// this one's node must take their node knobs too.
			v.nodeKnobs("defaults", s.Defaults, name, n)
			for i, a := range s.Arms {
				v.nodeKnobs(fmt.Sprintf("arms[%d]", i), a.Knobs, name, n)
			}
		}
		if k, ok := s.DefaultsPer[name]; ok {
			v.knobs("defaults.responders."+name, k, h, n)
		}
		for i, a := range s.Arms {
			if k, ok := a.PerResponder[name]; ok {
				v.knobs(fmt.Sprintf("arms[%d].responders.%s", i, name), k, h, n)
			}
		}
	}
	for _, name := range s.Responders {
		if h := hosts[name]; h != nil {
			for i := range s.Arms {
				v.nicNode(i, *s.host(name), h)
			}
		}
	}
	for i := range s.Arms {
		v.sharedQuietest(i, hosts)
	}
	if len(c.errs) > 0 {
		return nil // requirements of an arm with a bad CPU mean nothing
	}
	for i := range s.Arms {
		if err := v.arm(i, rsp, hf, nf); err != nil {
			return err
		}
		v.awayFanout(i, hf)
	}
	for i, a := range s.Arms {
		for _, name := range s.Responders {
			if h := hosts[name]; h != nil {
				v.native(i, s.KnobsFor(a, name), *s.host(name), h)
			}
		}
	}
	for _, name := range s.Responders {
		if h := hosts[name]; h != nil {
			for i := range s.Arms {
				v.armWarnings(i, *s.host(name), h)
			}
		}
	}
	if err := v.mgmt(rsp, hf); err != nil {
		return err
	}
	if err := v.unicast(rsp, hf); err != nil {
		return err
	}
	runnable := 0
	for i, a := range s.Arms {
		if a.Skip == "" {
			runnable++
			continue
		}
		if a.Name == s.Baseline {
			p := "baseline"
			if !s.pos.has(p) {
				p = fmt.Sprintf("arms[%d].name", i)
			}
			c.val(p, fmt.Sprintf("the baseline arm %s cannot run on host %s: %s", a.Name, rsp.Name, a.Skip), "pick a baseline arm the host can run (baseline: NAME), or run on a host that has what it requires")
		}
	}
	if runnable == 0 && len(s.Arms) > 0 {
		c.key("arms", fmt.Sprintf("no arm can run on host %s (every arm is skipped)", rsp.Name), "see the skip reasons in `rig run --dry-run`")
	}
	return nil
}

// field returns where a knob of an arm is written: in the arm, or else in
// defaults.
func (v *validator) field(i int, sub string) string {
	return v.c.field(fmt.Sprintf("arms[%d]", i), sub)
}

func (v *validator) cpus(path string, cpus []int, hf *hostFacts, what string) {
	for _, cpu := range cpus {
		if !slices.Contains(hf.online, cpu) {
			v.c.val(path, fmt.Sprintf("CPU %d does not exist on host %s (online: %s)", cpu, hf.name, listOrNone(hf.online)), fmt.Sprintf("pick %s from %s", what, listOrNone(hf.online)))
			return
		}
	}
}

// knobs checks knobs k written at p against the responder host's facts
// hf and, for the knobs that change the node, the facts nf of what
// applies them (nil: not read, not checked).
func (v *validator) knobs(p string, k Knobs, hf, nf *hostFacts) {
	if k.Responder.CPU != nil {
		v.cpus(p+".responder.cpu", []int{*k.Responder.CPU}, hf, "a responder CPU")
	}
	if q := k.Responder.Quietest; q != nil && q.CPUs != nil {
		path := p + ".responder.cpu.quietest"
		if !v.s.pos.has(path) {
			path = p + ".responder.cpu"
		}
		v.cpus(path, q.CPUs, hf, "candidate CPUs")
	}
	if k.Load != nil && k.Load.CPUs != nil {
		v.cpus(p+".load.cpus", k.Load.CPUs, hf, "load CPUs")
	}
	if nf == nil {
		return
	}
	if k.IRQ != nil && k.IRQ.CPUs != nil {
		v.cpus(p+".irq.cpus", k.IRQ.CPUs, nf, "IRQ CPUs")
	}
	if k.Power != nil && k.Power.CPUs != nil {
		v.cpus(p+".power.cpus", k.Power.CPUs, nf, "power CPUs")
	}
	v.nodeKnobs(p, k, hf.name, nf)
}

// nodeKnobs refuses the knobs that change the node where what applies
// them for host (the host, or its node agent: hf) cannot write what they
// change (a pod: /sys and /proc/irq read-only, no /dev/cpu_dma_latency),
// instead of failing mid-run with EROFS. An unknown fact (nil) is not
// checked.
func (v *validator) nodeKnobs(p string, k Knobs, host string, hf *hostFacts) {
	f := hf.f
	no := func(b *bool) bool { return b != nil && !*b }
	sysfs := "/sys is mounted read-only"
	var refuse []struct{ knob, why string }
	add := func(knob, why string) { refuse = append(refuse, struct{ knob, why string }{knob, why}) }
	if k.IRQ != nil && no(f.ProcIRQWritable) {
		add("irq", "/proc/irq is read-only")
	}
	if cs := k.CState; cs != nil && cs.MaxLatencyUS != nil && no(f.CPUDMALatency) {
		add("cstate", "there is no /dev/cpu_dma_latency")
	} else if cs != nil && cs.MaxLatencyUS == nil && no(f.SysfsWritable) {
		add("cstate", sysfs)
	}
	if k.Power != nil && no(f.SysfsWritable) {
		add("power", sysfs)
	}
	if k.Tuned != nil && no(f.SysfsWritable) {
		add("tuned", sysfs)
	}
	if k.SMT != nil && no(f.SysfsWritable) {
		add("smt", sysfs)
	}
	for _, r := range refuse {
		v.c.key(p+"."+r.knob, fmt.Sprintf("in a pod: on host %s %s, so %s cannot change the node (it would fail mid-run)", hf.name, r.why, r.knob),
			fmt.Sprintf("use the host agent: node knobs (irq, cstate, power, tuned, smt) need the node's /sys, /proc/irq and /dev; give hosts.%s the privileged host agent on its node, node: \"kubectl exec -i -n rig rig-host-agent-XXXXX --\", or leave them out of a pod's arms (docs/kubernetes.md#4-what-a-pod-can-and-cannot-change)", host))
	}
}

// power checks arm i's power knobs and tuned profile against the host:
// power.Validate says what the host cannot take, and the error points at
// the knob (in the arm, or in defaults where it came from).
func (v *validator) power(i int, hf *hostFacts) error {
	a := &v.s.Arms[i]
	e := a.Effective
	s, tuned := e.PowerSettings(), e.TunedProfile()
	if s.IsZero() && tuned == "" {
		return nil
	}
	f, err := hf.f.PowerFacts()
	if errors.Is(err, os.ErrNotExist) {
		p := v.field(i, "power")
		if s.IsZero() {
			p = v.field(i, "tuned")
		}
		v.c.key(p, fmt.Sprintf("host %s does not report its frequency control: %v", hf.name, err), "install this rig's version on the host (its agent answers the facts)")
		return nil
	}
	if err != nil {
		return &HostError{hf.name, err}
	}
	probs, notes := power.Validate(hf.name, f, s, tuned)
	for _, p := range probs {
		path := v.field(i, "power")
		switch p.Field {
		case power.FieldTuned:
			path = v.field(i, "tuned")
		case power.FieldCPUs:
			if path = v.field(i, "power.cpus"); path == fmt.Sprintf("arms[%d]", i) {
				path = v.field(i, "responder.cpu")
			}
		case power.FieldPower:
		default:
			path = v.field(i, "power."+p.Field)
		}
		v.c.val(path, p.Reason, p.Hint)
	}
	a.Notes = append(a.Notes, notes...)
	return nil
}

// mgmt refuses arms that change the responder's interface when it carries
// the host's default route, unless the host says allow-mgmt: true. An
// emulated topology's veths never carry it; a host that cannot say which
// interfaces do (an older agent) is not checked here, and nicctl still
// refuses at apply time.
func (v *validator) mgmt(rsp *Host, hf *hostFacts) error {
	if v.s.Emulate != "" || rsp.AllowMgmt || rsp.Iface == "" {
		return nil
	}
	var sites []string
	for i, a := range v.s.Arms {
		for _, k := range []struct {
			set  bool
			name string
		}{{a.Effective.IRQ != nil && a.Effective.IRQ.CPUs != nil, "irq"}, {a.Effective.NIC != (NIC{}), "nic"}} {
			if p := v.field(i, k.name); k.set && !slices.Contains(sites, p) {
				sites = append(sites, p)
			}
		}
	}
	if len(sites) == 0 {
		return nil
	}
	mg, err := hf.f.Management()
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &HostError{hf.name, err}
	}
	if !slices.Contains(mg, rsp.Iface) {
		return nil
	}
	why := hf.f.MgmtWhy[rsp.Iface]
	if why == "" {
		why = "carries the default route"
	}
	other := fmt.Sprintf("a second interface (hosts.%s.iface; on AWS attach a second ENI)", hf.name)
	var free []string
	for _, i := range hf.f.Ifaces {
		if i != "lo" && !slices.Contains(mg, i) {
			free = append(free, i)
		}
	}
	if len(free) > 0 {
		other = fmt.Sprintf("%s (hosts.%s.iface), which is not a management interface", strings.Join(free, " or "), hf.name)
	}
	for _, p := range sites {
		v.c.val(p, fmt.Sprintf("%s on host %s %s (the management interface): rig does not change its IRQs or NIC settings", rsp.Iface, hf.name, why),
			fmt.Sprintf("measure on %s, or add allow-mgmt: true to hosts.%s to change %s on purpose", other, hf.name, rsp.Iface))
	}
	return nil
}

// arm decides whether arm i can run, and checks what depends on the
// effective responder CPU.
func (v *validator) arm(i int, rsp *Host, hf, nf *hostFacts) error {
	a := &v.s.Arms[i]
	e := a.Effective
	var skip []string
	// The responder CPU, or with quietest every candidate: what is about
	// the responder CPU must hold on each, whichever the ranking picks.
	cpus := []int{-1}
	switch {
	case e.Responder.CPU != nil:
		cpus = []int{*e.Responder.CPU}
	case e.Responder.Quietest != nil:
		cpus = e.Responder.Quietest.candidatesOr(hf.online)
		if c, err := v.s.QuietestCPUs(rsp.Name, *e.Responder.Quietest); err == nil && c != nil {
			cpus = c // numa: nic
		}
	}
	cstateErrs := len(v.c.errs)
	for _, cpu := range cpus {
		var err error
		if skip, err = v.armCPU(i, cpu, hf, nf, skip, len(v.c.errs) > cstateErrs); err != nil {
			return err
		}
	}
	for _, q := range e.Requires {
		if q != RequireHWTimestamps {
			continue
		}
		// The responder's own stamps (RX and TX: its turnaround); the
		// capture host's NIC is checked with timestamps: hardware.
		if rsp.Iface == "" {
			skip = append(skip, fmt.Sprintf("the responder host %s has no iface: to check for hardware timestamps", rsp.Name))
			break
		}
		tp := planTimestamping(*rsp, hf.f, TimestampsHardware)
		if tp.Err != nil && !errors.Is(tp.Err, os.ErrNotExist) {
			return &HostError{rsp.Name, tp.Err}
		}
		if tp.Err != nil || tp.Decision.Action == tstamp.ActRefuse {
			why := "no such interface"
			if tp.Err == nil {
				why = tp.Decision.Why
			}
			skip = append(skip, "no hardware timestamps: "+why)
		}
	}
	if nf != nil {
		if err := v.power(i, nf); err != nil {
			return err
		}
	}
	// stress-ng matters only for an arm that can otherwise run.
	needStress := e.Load != nil || e.SMTSibling != nil
	if len(skip) == 0 && (needStress || slices.Contains(e.Requires, RequireStressNG)) {
		switch {
		case hf.f.StressNG:
		case slices.Contains(e.Requires, RequireStressNG):
			skip = append(skip, "stress-ng is not installed")
		default:
			sub := "load"
			if e.Load == nil {
				sub = "smt-sibling"
			}
			v.c.key(v.field(i, sub), fmt.Sprintf("arm %s runs stress-ng, which is not installed on host %s", a.Name, hf.name), "install it (apt-get install stress-ng / dnf install stress-ng), or add requires: [stress-ng] to skip the arm where it is missing")
		}
	}
	sort.Strings(skip)
	a.Skip = strings.Join(slices.Compact(skip), "; ")
	return nil
}

// knobField returns where responder h's knob sub of arm i is written:
// the first of the levels KnobsFor merges, the last written first.
func (v *validator) knobField(i int, h, sub string) string {
	for _, p := range []string{fmt.Sprintf("arms[%d].responders.%s.%s", i, h, sub), fmt.Sprintf("arms[%d].%s", i, sub), "defaults.responders." + h + "." + sub, "defaults." + sub} {
		if v.s.pos.has(p) {
			return p
		}
	}
	return fmt.Sprintf("arms[%d]", i)
}

// armWarnings warns of what arm i's knobs cost on responder host h:
// a responder CPU on another NUMA node than h's NIC, and a SCHED_FIFO
// responder that spins where the RT bandwidth is limited.
func (v *validator) armWarnings(i int, h Host, hf *hostFacts) {
	a := v.s.Arms[i]
	r := v.s.KnobsFor(a, h.Name).Responder
	if nic, err := hf.f.NICNodeOf(h.Iface); err == nil && nic >= 0 && r.CPU != nil && slices.Contains(hf.ifaces, h.Iface) {
		if n, ok := hf.f.Node[*r.CPU]; ok && n != nic {
			v.c.warn(v.knobField(i, h.Name, "responder.cpu"), fmt.Sprintf("arm %s: responder CPU %d on host %s is on NUMA node %d, its interface %s on node %d: every packet crosses the interconnect", a.Name, *r.CPU, h.Name, n, h.Iface, nic),
				fmt.Sprintf("pick a CPU of node %d (%s), or responder: {cpu: {quietest: allowed, numa: nic}}", nic, listOrNone(hf.f.NodeCPUs(nic))))
		}
	}
	if rt := hf.f.SchedRT; rt != nil && !rt.Unlimited() && r.Sched != nil && r.Sched.Policy == cpusched.FIFO && r.Poll != nil && r.Poll.Mode == probe.Busy {
		v.c.warn(v.knobField(i, h.Name, "responder.sched"), fmt.Sprintf("arm %s: a SCHED_FIFO responder that spins (poll: busy) on host %s, where RT threads may run %d of every %d µs (kernel.sched_rt_runtime_us): RT throttling takes its CPU away for the rest of each period (50 ms each second by default; from Linux 6.12 while another task there waits)", a.Name, h.Name, rt.RuntimeUS, rt.PeriodUS),
			"sysctl -w kernel.sched_rt_runtime_us=-1 on the host for the run (only where the responder has its CPU to itself: a runaway RT thread then keeps it), or sched: other")
	}
}

// awayFanout refuses irq.away in a fan-out arm whose responders' CPUs,
// all cleared on their one shared host, leave no CPU for the IRQs.
func (v *validator) awayFanout(i int, hf *hostFacts) {
	a, away, measured := v.s.Arms[i], false, []int{}
	for _, n := range v.s.Responders {
		k := v.s.KnobsFor(a, n)
		away = away || (k.IRQ != nil && k.IRQ.Away)
		if k.Responder.CPU != nil {
			measured = cpulist.Union(measured, []int{*k.Responder.CPU})
		}
	}
	if !away || len(v.s.Responders) < 2 || slices.ContainsFunc(hf.online, func(c int) bool { return !slices.Contains(measured, c) }) {
		return
	}
	v.c.val(v.field(i, "irq.away"), fmt.Sprintf("irq away clears every responder's CPU (%s) on host %s, which leaves no CPU for the IRQs (online %s)", cpulist.Format(measured), hf.name, listOrNone(hf.online)),
		"leave one online CPU without a responder, or drop irq.away")
}

// armCPU checks what arm i needs of the responder CPU cpu (-1: not
// pinned), adding skip reasons to skip; its cstate against nf, the facts
// of what applies the node knobs (nil: not read); cstateDone says a
// cstate problem was already reported for another candidate of the arm.
func (v *validator) armCPU(i, cpu int, hf, nf *hostFacts, skip []string, cstateDone bool) ([]string, error) {
	a := &v.s.Arms[i]
	e := a.Effective
	var siblings []int
	noSMT := ""
	if cpu >= 0 && (e.SMTSibling != nil || e.SMT != nil || slices.Contains(e.Requires, RequireSMT)) {
		sib, err := hf.f.SiblingsOf(cpu)
		if err != nil {
			return skip, &HostError{hf.name, err}
		}
		// Hosts without SMT (AWS Graviton, SMT off) list the CPU alone.
		noSMT = fmt.Sprintf("CPU %d has no SMT sibling (thread_siblings_list %s: one thread per core)", cpu, listOrNone(sib))
		for _, c := range sib {
			if c != cpu {
				siblings = append(siblings, c)
			}
		}
	}
	for _, q := range e.Requires {
		switch q {
		case RequireIsolated:
			if !slices.Contains(hf.isolated, cpu) {
				skip = append(skip, fmt.Sprintf("CPU %d is not isolated (isolated: %s)", cpu, listOrNone(hf.isolated)))
			}
		case RequireNohzFull:
			if !slices.Contains(hf.nohz, cpu) {
				skip = append(skip, fmt.Sprintf("CPU %d is not nohz_full (nohz_full: %s)", cpu, listOrNone(hf.nohz)))
			}
		case RequireSMT:
			if len(siblings) == 0 {
				skip = append(skip, noSMT)
			}
		}
	}
	if e.SMTSibling != nil && len(siblings) == 0 && !slices.Contains(e.Requires, RequireSMT) {
		skip = append(skip, noSMT+" for the smt-sibling load")
	}
	if e.SMT != nil && len(siblings) == 0 && !slices.Contains(e.Requires, RequireSMT) {
		skip = append(skip, noSMT+" to fence")
	}
	if e.SMT != nil && slices.Contains(siblings, 0) {
		// Linux keeps CPU 0 online where it can (x86 has no cpu0/online).
		v.c.val(v.field(i, "smt.fence"), fmt.Sprintf("the SMT sibling of CPU %d on host %s is CPU 0, which rig does not take offline (the boot CPU: timers and firmware interrupts may need it)", cpu, hf.name), "pin the responder to a core whose siblings are not CPU 0")
	}
	spare := len(hf.online) - 1
	if e.SMT != nil {
		spare -= len(siblings)
	}
	if e.IRQ != nil && e.IRQ.Away && cpu >= 0 && spare < 1 {
		v.c.val(v.field(i, "irq.away"), fmt.Sprintf("irq away on host %s leaves no CPU for the IRQs: online %s, measured CPU %d", hf.name, listOrNone(hf.online), cpu), "run on a host with a CPU to spare for the IRQs")
	}
	if nf == nil {
		return skip, nil
	}
	hf = nf
	// max-latency-us is global: the first online CPU's states stand for all.
	icpu := cpu
	if icpu < 0 && len(hf.online) > 0 {
		icpu = hf.online[0]
	}
	if cs := e.CState; cs != nil && icpu >= 0 && !cstateDone {
		names, err := hf.f.IdleStatesOf(icpu)
		switch {
		case errors.Is(err, os.ErrNotExist):
			v.c.key(v.field(i, "cstate"), fmt.Sprintf("CPU %d on host %s has no cpuidle states: it idles in the kernel's default state (HLT on x86, WFI on arm64), which ignores PM QoS and has nothing to disable, so this arm would change nothing", icpu, hf.name),
				"leave cstate out on this host (an AWS Graviton guest has no cpuidle driver); to poll instead of idling, boot it with idle=poll and compare hosts, not arms")
		case err != nil:
			return skip, &HostError{hf.name, err}
		case cs.Poll && !hostinfo.HasPoll(names):
			hint := fmt.Sprintf("to keep CPU %d in %s, its shallowest state, write disable: [%s] and name the arm so; to poll, boot the host with idle=poll; or leave cstate out", icpu, names[0], strings.Join(names[1:], ", "))
			if len(names) == 1 {
				hint = fmt.Sprintf("%s is its only state, so it idles there already: leave cstate out, or boot the host with idle=poll to poll", names[0])
			}
			v.c.val(v.field(i, "cstate.poll"), fmt.Sprintf("CPU %d on host %s has no POLL idle state (states: %s; arm64 has none): poll would disable them all and the CPU would still idle in %s", icpu, hf.name, strings.Join(names, ", "), names[0]), hint)
		case cs.MaxLatencyUS != nil && *cs.MaxLatencyUS == 0 && !hostinfo.HasPoll(names):
			if n := fmt.Sprintf("cstate max-latency-us 0 on host %s: %s", hf.name, hostinfo.ZeroLatencyEffect(names)); !slices.Contains(a.Notes, n) {
				a.Notes = append(a.Notes, n)
			}
		default:
			for j, n := range cs.Disable {
				if !slices.Contains(names, n) {
					p := v.field(i, fmt.Sprintf("cstate.disable[%d]", j))
					v.c.val(p, fmt.Sprintf("idle state %s does not exist on CPU %d of host %s (states: %s)", n, cpu, hf.name, strings.Join(names, ", ")), "use the names in /sys/devices/system/cpu/cpuN/cpuidle/state*/name")
				}
			}
		}
	}
	return skip, nil
}

// native checks what arm i's responder r on host h needs there of the
// native engine, from the host's facts: its stack's launcher and library,
// io_uring for the io-uring polls, and for prefer-busy-poll the NAPI knobs
// that hold the NIC's interrupts off (the arm's napi, else the host's).
func (v *validator) native(i int, k Knobs, h Host, hf *hostFacts) {
	a, r, napi := v.s.Arms[i], k.Responder, k.NIC.NAPI
	if r.Engine != nil && *r.Engine == probe.EngineNative {
		v.program(v.knobField(i, h.Name, "responder.engine"), a.Name, "responder", hf, hf.f.RespondNative)
	}
	v.stackOn(r.Stack, v.knobField(i, h.Name, "responder.stack"), v.field(i, "responder.stack"), a.Name, "rig respond", hf)
	if r.Poll == nil {
		return
	}
	switch po := *r.Poll; po.Mode {
	case probe.IOUring, probe.IOUringSQPoll:
		u := hf.f.IOUring
		if u == nil {
			v.c.warn(v.knobField(i, h.Name, "responder.poll"), fmt.Sprintf("arm %s: cannot tell whether io_uring works on host %s (its agent does not report it: an older rig, or a fake host root)", a.Name, hf.name),
				"rig respond refuses the round if it does not; install this rig's version on the host so its agent reports io_uring")
			return
		}
		why := u.Refused
		if po.Mode == probe.IOUringSQPoll && why == "" {
			why = u.SQPollRefused
		}
		if why != "" {
			v.c.val(v.field(i, "responder.poll"), fmt.Sprintf("poll %s on host %s: %s", po, hf.name, why), "use epoll or block there, or let rig's processes set up an io_uring (sysctl kernel.io_uring_disabled=0)")
		}
	case probe.PreferBusyPoll:
		// A warning, not a refusal: the loop still busy-polls, with the
		// interrupts on; that is an arm worth measuring against one with them off.
		on := func(k facts.NAPIKnobs) bool {
			return k.DeferHardIRQs != nil && *k.DeferHardIRQs > 0 && ((k.GROFlushTimeout != nil && *k.GROFlushTimeout > 0) || (k.IRQSuspendTimeout != nil && *k.IRQSuspendTimeout > 0))
		}
		host, known := hf.f.NAPI[h.Iface]
		switch {
		case on(napi):
		case !known:
			v.c.warn(v.knobField(i, h.Name, "responder.poll"), fmt.Sprintf("arm %s: cannot tell whether %s on host %s holds its interrupts off for prefer-busy-poll: its napi_defer_hard_irqs and gro_flush_timeout were not read, and the arm sets no nic napi-defer-hard-irqs and gro-flush-timeout", a.Name, cmp.Or(h.Iface, "the responder's interface"), hf.name), napiHint)
		case !on(host):
			v.c.warn(v.knobField(i, h.Name, "responder.poll"), fmt.Sprintf("arm %s: prefer-busy-poll on host %s: %s has napi_defer_hard_irqs %s and gro_flush_timeout %s ns, and the arm sets no nic napi-defer-hard-irqs and gro-flush-timeout above 0: the loop polls, but the kernel does not hold the interrupts off for it",
				a.Name, hf.name, h.Iface, orUnset(host.DeferHardIRQs), orUnset(host.GROFlushTimeout)), napiHint)
		}
	}
}

// sendNative checks that arm i's native sender can start on the sender
// host hf.
func (v *validator) sendNative(i int, hf *hostFacts) {
	a := v.s.Arms[i]
	if e := a.Effective.Sender.Engine; e != nil && *e == probe.EngineNative {
		v.program(v.field(i, "sender.engine"), a.Name, "sender", hf, hf.f.SendNative)
	}
	v.stackOn(a.Effective.Sender.Stack, v.field(i, "sender.stack"), v.field(i, "sender.stack"), a.Name, "rig send", hf)
}

// stackOn checks that stack st (nil: none) of arm's program, started by
// cmd, is on host hf, from its agent's facts: warned at warnAt when they
// do not say, refused at at when it is missing.
func (v *validator) stackOn(st *probe.Stack, warnAt, at, arm, cmd string, hf *hostFacts) {
	if st == nil || st.Kernel() || st.Name == probe.StackCustom {
		return
	}
	switch why, ok := hf.f.Stacks[st.Name]; {
	case hf.f.Stacks == nil:
		v.c.warn(warnAt, fmt.Sprintf("arm %s: cannot tell whether host %s has stack %s (its agent does not report stacks: an older rig, or no ldconfig there)", arm, hf.name, st),
			cmd+" refuses the round if the stack is missing; install this rig's version on the host so its agent reports its stacks")
	case !ok || why != "":
		v.c.valOnce(at, fmt.Sprintf("stack %s is not on host %s: %s", st, hf.name, cmp.Or(why, "rig does not know it there")), st.Info().Install)
	}
}

// program checks that the native engine's program of role (sender or
// responder) starts on host hf, from why its agent says it would not
// (nil: not said): without it the round is refused after the arm's knobs
// changed the hosts.
func (v *validator) program(p, arm, role string, hf *hostFacts, why *string) {
	cmd := map[string]string{"sender": "rig send", "responder": "rig respond"}[role]
	switch {
	case why == nil:
		v.c.warn(p, fmt.Sprintf("arm %s: cannot tell whether %s --engine native starts on host %s (its agent does not report it: an older rig)", arm, cmd, hf.name),
			cmd+" refuses the round if its program is missing; install this rig's version on the host so its agent reports it")
	case *why != "":
		v.c.valOnce(p, fmt.Sprintf("engine native for the %s, and on host %s %s", role, hf.name, *why), fmt.Sprintf("give host %s the native %s's program as said, or use engine: go for the %s", hf.name, role, role))
	}
}

// napiHint is how an arm holds the NIC's interrupts off for prefer-busy-poll.
const napiHint = "set both in the arm, e.g. nic: {napi-defer-hard-irqs: 2, gro-flush-timeout: 200000}"

func orUnset[T uint32 | uint64](p *T) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}

// TimestampPlan is what rig will do with one host's NIC timestamping: the
// decision tstamp.Decide makes from the host's facts for the roles on that
// interface, before anything changes.
type TimestampPlan struct {
	Host, Iface string
	Need        tstamp.Need
	Decision    tstamp.Decision
	Err         error // the facts could not be read
}

func (tp TimestampPlan) String() string {
	if tp.Err != nil {
		return fmt.Sprintf("%s %s (%s): not checked: %v", tp.Host, tp.Iface, tp.Need, tp.Err)
	}
	s := fmt.Sprintf("%s %s (%s): %s", tp.Host, tp.Iface, tp.Need, tp.Decision)
	if tp.Decision.Action == tstamp.ActWrite {
		s += " — journaled once for the run, put back at its end"
	}
	return s
}

// needOf is what the roles of h need of its NIC.
func needOf(h Host) tstamp.Need {
	var n tstamp.Need
	if h.Has(RoleSender) || h.Has(RoleResponder) {
		n = tstamp.NeedProbe
	}
	if h.Has(RoleCapture) {
		n.RX = true
	}
	return n
}

func planTimestamping(h Host, f *facts.Facts, mode TimestampMode) TimestampPlan {
	tp := TimestampPlan{Host: h.Name, Iface: h.Iface, Need: needOf(h)}
	st, err := f.TimestampingOf(h.Iface)
	if err != nil {
		tp.Err = err
		return tp
	}
	m, err := tstamp.ParseMode(string(mode))
	if err != nil {
		tp.Err = err
		return tp
	}
	tp.Decision = tstamp.Decide(st, tstamp.Policy{Mode: m, Need: tp.Need, TakeOver: h.TakeOverPTP, AllowMgmt: h.AllowMgmt})
	return tp
}

// TimestampPlans decides, from the hosts' facts, what rig run will do with
// the timestamping of each host's NIC (hosts without facts or iface are
// left out). The runner decides again on each host, through its agent,
// when the run starts.
func (s *Scenario) TimestampPlans(byHost map[string]*facts.Facts) []TimestampPlan {
	var out []TimestampPlan
	for _, h := range s.Hosts {
		if f := byHost[h.Name]; f != nil && h.Iface != "" && s.Emulate == "" {
			out = append(out, planTimestamping(h, f, s.Timestamps))
		}
	}
	return out
}

func (s *Scenario) timestampPlans(hosts map[string]*hostFacts) []TimestampPlan {
	byHost := map[string]*facts.Facts{}
	for n, hf := range hosts {
		if h := s.host(n); h != nil && slices.Contains(hf.ifaces, h.Iface) {
			byHost[n] = hf.f
		}
	}
	return s.TimestampPlans(byHost)
}

func (s *Scenario) host(name string) *Host {
	for i := range s.Hosts {
		if s.Hosts[i].Name == name {
			return &s.Hosts[i]
		}
	}
	return nil
}
