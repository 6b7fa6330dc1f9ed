package scenario

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/ethtoolnl"
	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/power"
	"github.com/rig-project/rig/internal/probe"
)

func (c *checker) knobs(p string, r *rawKnobs) Knobs {
	var k Knobs
	if rr := r.Responder; rr != nil {
		rp := p + ".responder"
		if rr.CPU != nil {
			k.Responder.CPU, k.Responder.Quietest = c.responderCPU(rp+".cpu", rr.CPU)
		}
		if rr.Sched != nil {
			if sc, err := cpusched.ParseSched(*rr.Sched); err != nil {
				c.val(rp+".sched", err.Error(), "use other, or fifo:N with N in 1..99 (e.g. fifo:50)")
			} else {
				k.Responder.Sched = &sc
			}
		}
		if rr.Poll != nil {
			// Every mode rig respond takes; the engine is checked once merged.
			if po, err := probe.ParseEnginePoll(*rr.Poll, probe.EngineNative); err != nil {
				c.val(rp+".poll", err.Error(), "use block, busy or busy-poll:µs (e.g. busy-poll:50), or with engine: native prefer-busy-poll:µs[:budget], epoll, io-uring or io-uring-sqpoll")
			} else {
				k.Responder.Poll = &po
			}
		}
		if rr.Engine != nil {
			if e, err := probe.ParseEngine(*rr.Engine); err != nil {
				c.val(rp+".engine", err.Error(), "use go or native")
			} else {
				k.Responder.Engine = &e
			}
		}
		k.Responder.Stack = c.stack(rp, rr.Stack)
	}
	if rs := r.Sender; rs != nil {
		k.Sender = c.sender(p+".sender", rs)
	}
	if r.IRQ != nil {
		ip := p + ".irq"
		q := &IRQ{}
		if r.IRQ.CPUs == nil && r.IRQ.Away == nil {
			c.key(ip, "irq sets nothing", `add cpus: "0" (the CPUs for the responder NIC's queue IRQs) or away: true (every IRQ off the measured CPU)`)
			q = nil
		} else if r.IRQ.CPUs != nil {
			if q.CPUs, _ = c.cpuList(ip+".cpus", r.IRQ.CPUs); q.CPUs == nil {
				q = nil
			}
		}
		if a := r.IRQ.Away; a != nil && !*a {
			c.val(ip+".away", "away: false changes nothing", "use away: true, or delete it")
			q = nil
		} else if a != nil && q != nil {
			q.Away = true
		}
		k.IRQ = q
	}
	if n := r.NIC; n != nil {
		np := p + ".nic"
		if co := n.Coalesce; co != nil {
			cp := np + ".coalesce"
			k.NIC.Coalesce = ethtoolnl.Coalesce{
				RxUsecs:    c.u32(cp+".rx-usecs", co.RxUsecs, 1_000_000, "rx-usecs"),
				TxUsecs:    c.u32(cp+".tx-usecs", co.TxUsecs, 1_000_000, "tx-usecs"),
				RxFrames:   c.u32(cp+".rx-frames", co.RxFrames, 1_000_000, "rx-frames"),
				TxFrames:   c.u32(cp+".tx-frames", co.TxFrames, 1_000_000, "tx-frames"),
				AdaptiveRx: co.AdaptiveRx,
				AdaptiveTx: co.AdaptiveTx,
			}
			if *co == (rawCoalesce{}) {
				c.key(cp, "coalesce sets nothing", "set one of rx-usecs, tx-usecs, rx-frames, tx-frames, adaptive-rx, adaptive-tx, or delete it")
			}
		}
		if rg := n.Ring; rg != nil {
			gp := np + ".ring"
			k.NIC.Ring = Ring{RX: c.u32(gp+".rx", rg.RX, 1<<20, "ring rx"), TX: c.u32(gp+".tx", rg.TX, 1<<20, "ring tx")}
			if rg.RX != nil && *rg.RX == 0 {
				c.val(gp+".rx", "ring rx 0 would drop every packet", "use a size the NIC supports (ethtool -g IFACE)")
				k.NIC.Ring.RX = nil
			}
			if rg.TX != nil && *rg.TX == 0 {
				c.val(gp+".tx", "ring tx 0 would drop every packet", "use a size the NIC supports (ethtool -g IFACE)")
				k.NIC.Ring.TX = nil
			}
			if *rg == (rawRing{}) {
				c.key(gp, "ring sets nothing", "set rx and/or tx, or delete it")
			}
		}
		if n.Channels != nil {
			if *n.Channels < 1 || *n.Channels > 4096 {
				c.val(np+".channels", fmt.Sprintf("channels %d is out of range", *n.Channels), "use 1..4096 (ethtool -l IFACE shows the maximum)")
			} else {
				ch := uint32(*n.Channels)
				k.NIC.Channels = &ch
			}
		}
		k.NIC.NAPI.DeferHardIRQs = c.u32(np+".napi-defer-hard-irqs", n.DeferHardIRQs, facts.MaxDeferHardIRQs, "napi-defer-hard-irqs")
		k.NIC.NAPI.GROFlushTimeout = c.ns(np+".gro-flush-timeout", n.GROFlushTimeout)
		k.NIC.NAPI.IRQSuspendTimeout = c.ns(np+".irq-suspend-timeout", n.IRQSuspendTimeout)
	}
	if cs := r.CState; cs != nil {
		k.CState = c.cstate(p+".cstate", cs)
	}
	if l := r.Load; l != nil {
		lp := p + ".load"
		ld := &StressLoad{}
		if l.StressNG == nil {
			c.key(lp, "load has no stress-ng:", `add stress-ng: "--cpu 1 --cpu-method fft"`)
			ld = nil
		} else if args, ok := c.stressArgs(lp+".stress-ng", *l.StressNG, "load.cpus"); ok {
			ld.StressNG = args
		} else {
			ld = nil
		}
		if l.CPUs != nil {
			if cl, ok := c.cpuList(lp+".cpus", l.CPUs); ok && ld != nil {
				ld.CPUs = cl
			}
		}
		k.Load = ld
	}
	if sm := r.SMTSibling; sm != nil {
		sp := p + ".smt-sibling"
		if sm.Load == nil {
			c.key(sp, "smt-sibling has no load:", `add load: "--cpu 1 --cpu-method fft"`)
		} else if args, ok := c.stressArgs(sp+".load", *sm.Load, "nothing: rig pins it to the sibling"); ok {
			k.SMTSibling = &SMTSibling{StressNG: args}
		}
	}
	if sm := r.SMT; sm != nil {
		switch {
		case sm.Fence == nil:
			c.key(p+".smt", "smt has no fence:", "add fence: true (the responder CPU's SMT siblings offline for the round)")
		case !*sm.Fence:
			c.val(p+".smt.fence", "fence: false changes nothing", "use fence: true, or delete smt")
		default:
			k.SMT = &SMT{Fence: true}
		}
	}
	if pw := r.Power; pw != nil {
		k.Power = c.power(p+".power", pw)
	}
	if r.Tuned != nil {
		if t := strings.TrimSpace(*r.Tuned); t == "" || strings.ContainsAny(t, "/\\;&|$`'\"<>") {
			c.val(p+".tuned", fmt.Sprintf("tuned: %q is not a profile name", *r.Tuned), "name a profile `tuned-adm list` shows, e.g. network-latency")
		} else {
			k.Tuned = &t
		}
	}
	if r.Noise != nil {
		if r.Noise.For == nil {
			c.key(p+".noise", "noise has no for:", "add for: 5s (how long the window runs before each round)")
		} else if d, ok := c.duration(p+".noise.for", r.Noise.For); ok && (d < MinNoise || d > MaxNoise) {
			c.val(p+".noise.for", fmt.Sprintf("noise for %v is outside %v..%v", d, MinNoise, MaxNoise), "a few seconds is plenty, e.g. for: 5s")
		} else if ok {
			k.Noise = &Noise{For: d}
		}
	}
	for i, q := range r.Requires {
		qp := fmt.Sprintf("%s.requires[%d]", p, i)
		if !slices.Contains(requirements, Requirement(q)) {
			names := make([]string, len(requirements))
			for j, r := range requirements {
				names[j] = string(r)
			}
			hint := "known requirements: " + strings.Join(names, ", ")
			if d := closest(q, names); d != "" {
				hint = fmt.Sprintf("did you mean %q? %s", d, hint)
			}
			c.val(qp, fmt.Sprintf("unknown requirement %q", q), hint)
			continue
		}
		if !slices.Contains(k.Requires, Requirement(q)) {
			k.Requires = append(k.Requires, Requirement(q))
		}
	}
	return k
}

func (c *checker) cstate(cp string, cs *rawCState) *CState {
	var set []string
	if cs.MaxLatencyUS != nil {
		set = append(set, "max-latency-us")
	}
	if cs.Disable != nil {
		set = append(set, "disable")
	}
	if cs.Poll != nil {
		set = append(set, "poll")
	}
	switch {
	case len(set) == 0:
		c.key(cp, "cstate sets nothing", "set one of max-latency-us, disable: [names], poll: true; leave cstate out to keep the host's idle states")
		return nil
	case len(set) > 1:
		c.key(cp+"."+set[1], fmt.Sprintf("cstate sets both %s and %s", set[0], set[1]), "set exactly one: they are different ways of limiting idle states")
		return nil
	}
	out := &CState{}
	switch {
	case cs.MaxLatencyUS != nil:
		if *cs.MaxLatencyUS < 0 || *cs.MaxLatencyUS > 2_000_000_000 {
			c.val(cp+".max-latency-us", fmt.Sprintf("max-latency-us %d is out of range", *cs.MaxLatencyUS), "use 0 (poll only) or more µs")
			return nil
		}
		out.MaxLatencyUS = cs.MaxLatencyUS
	case cs.Disable != nil:
		if len(cs.Disable) == 0 {
			c.val(cp+".disable", "disable lists no state", "name cpuidle states, e.g. [C1] (see /sys/devices/system/cpu/cpu0/cpuidle/state*/name)")
			return nil
		}
		for i, n := range cs.Disable {
			if n == "POLL" {
				c.val(fmt.Sprintf("%s.disable[%d]", cp, i), "POLL cannot be disabled: it is where a CPU with no other state idles", "list only the states to turn off, e.g. [C1E, C6]")
				return nil
			}
			if strings.TrimSpace(n) == "" {
				c.val(fmt.Sprintf("%s.disable[%d]", cp, i), "empty state name", "")
				return nil
			}
		}
		out.Disable = slices.Compact(slices.Clone(cs.Disable))
	case cs.Poll != nil:
		if !*cs.Poll {
			c.val(cp+".poll", "poll: false changes nothing", "use poll: true, or leave cstate out")
			return nil
		}
		out.Poll = true
	}
	return out
}

// power checks the power knobs of one arm (or defaults) in the file.
func (c *checker) power(pp string, r *rawPower) *power.Settings {
	out := &power.Settings{MinPerfPct: r.MinPerfPct, MaxPerfPct: r.MaxPerfPct}
	if r.CPUs != nil {
		if l, ok := c.cpuList(pp+".cpus", r.CPUs); ok {
			out.CPUs = l
		}
	}
	if r.Governor != nil {
		if g := strings.TrimSpace(*r.Governor); g == "" || strings.ContainsAny(g, " /\t\n") {
			c.val(pp+".governor", fmt.Sprintf("governor %q is not a governor name", *r.Governor), "e.g. performance, powersave, schedutil (scaling_available_governors lists the host's)")
		} else {
			out.Governor = g
		}
	}
	if r.Turbo != nil {
		switch v := r.Turbo.(type) {
		case bool:
			out.Turbo = &v
		case string:
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "on":
				out.Turbo = ptrTo(true)
			case "off":
				out.Turbo = ptrTo(false)
			}
		}
		if out.Turbo == nil {
			c.val(pp+".turbo", fmt.Sprintf("turbo: %v is neither on nor off", r.Turbo), "write turbo: on or turbo: off")
		}
	}
	for _, x := range []struct {
		name string
		v    **int
	}{{"min-perf-pct", &out.MinPerfPct}, {"max-perf-pct", &out.MaxPerfPct}} {
		if *x.v != nil && (**x.v < 1 || **x.v > 100) {
			c.val(pp+"."+x.name, fmt.Sprintf("%s %d is out of range", x.name, **x.v), "use 1..100 (percent of the highest, turbo, performance)")
			*x.v = nil
		}
	}
	for _, x := range []struct {
		name string
		raw  any
		dst  **int64
	}{{"min-freq", r.MinFreq, &out.MinFreqKHz}, {"max-freq", r.MaxFreq, &out.MaxFreqKHz}} {
		if x.raw == nil {
			continue
		}
		k, err := parseFreq(x.raw)
		if err != nil {
			c.val(pp+"."+x.name, fmt.Sprintf("%s: %v", x.name, err), "write a frequency with its unit, e.g. 2.6GHz, 2600MHz or 2600000kHz")
			continue
		}
		*x.dst = &k
	}
	if *r == (rawPower{}) {
		c.key(pp, "power sets nothing", "set one of governor, turbo, min-perf-pct, max-perf-pct, min-freq, max-freq, or delete it")
		return nil
	}
	return out
}

// parseFreq reads "2.6GHz", "2600 MHz" or "2600000kHz" as kHz, the unit
// of cpufreq's files. A bare number is refused: its unit would be a guess.
func parseFreq(v any) (int64, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("%v has no unit", v)
	}
	t := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), " ", ""))
	mult := 0.0
	for _, u := range []struct {
		suf string
		m   float64
	}{{"ghz", 1e6}, {"mhz", 1e3}, {"khz", 1}} {
		if num, ok := strings.CutSuffix(t, u.suf); ok {
			t, mult = num, u.m
			break
		}
	}
	if mult == 0 {
		return 0, fmt.Errorf("%q has no unit (GHz, MHz or kHz)", s)
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a frequency", s)
	}
	k := math.Round(f * mult)
	if k < 1000 || k > 100e6 {
		return 0, fmt.Errorf("%q is out of range (1 MHz..100 GHz)", s)
	}
	if math.Abs(f*mult-k) > 1e-3 {
		return 0, fmt.Errorf("%q is finer than 1 kHz, the unit of cpufreq", s)
	}
	return int64(k), nil
}

func ptrTo[T any](v T) *T { return &v }

func ptr64(p *int) *int64 {
	if p == nil {
		return nil
	}
	v := int64(*p)
	return &v
}

// stressArgs checks stress-ng arguments. rig adds --taskset and stops the
// child itself, so those belong to the scenario, not to the arguments.
func (c *checker) stressArgs(path, v, cpusField string) ([]string, bool) {
	f := strings.Fields(v)
	if len(f) > 0 && f[0] == "stress-ng" {
		f = f[1:]
	}
	if len(f) == 0 {
		c.val(path, "no stress-ng arguments", `give the stressors, e.g. "--cpu 1 --cpu-method fft"`)
		return nil, false
	}
	if strings.ContainsAny(v, "|;&$`<>\"'\\") {
		c.val(path, "stress-ng arguments have shell syntax; they are passed as plain arguments", "write only stress-ng options, e.g. \"--cpu 2 --cpu-method fft\"")
		return nil, false
	}
	for _, a := range f {
		name, _, _ := strings.Cut(a, "=")
		switch name {
		case "--taskset":
			c.val(path, "stress-ng arguments set --taskset", "use "+cpusField+" for the CPUs")
			return nil, false
		case "-t", "--timeout":
			c.val(path, "stress-ng arguments set a timeout", "rig runs the load for the whole arm and stops it; delete "+name)
			return nil, false
		}
	}
	if !strings.HasPrefix(f[0], "-") {
		c.val(path, fmt.Sprintf("%q is not a stress-ng option", f[0]), "stress-ng arguments start with options such as --cpu 1")
		return nil, false
	}
	return f, true
}

// stack reads the stack and stack-env of p, the responder or the sender;
// custom needs a library path on one host, which only the probes' own
// --stack custom takes.
func (c *checker) stack(p string, rs rawStack) *probe.Stack {
	if rs.Name == nil {
		if rs.Env != nil {
			c.key(p+".stack-env", "stack-env without stack", "add stack: onload (or exasock, vma, xlio), or delete stack-env")
		}
		return nil
	}
	n, err := probe.ParseStack(*rs.Name)
	if err == nil && n == probe.StackCustom {
		err = fmt.Errorf("stack custom is not a scenario's: its library is a path on one host")
	}
	if err != nil {
		c.val(p+".stack", err.Error(), "use kernel, onload, exasock, vma or xlio (rig respond and rig send --stack custom run a library of your own)")
		return nil
	}
	if n == probe.StackKernel && rs.Env != nil {
		c.key(p+".stack-env", "stack-env with stack kernel: the kernel's stack preloads nothing to read it", "name the stack it is for (onload, exasock, vma or xlio), or delete stack-env")
		return nil
	}
	for i, kv := range rs.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" || strings.ContainsAny(kv, ", \t") {
			c.val(fmt.Sprintf("%s.stack-env[%d]", p, i), fmt.Sprintf("%q is not NAME=VALUE", kv), "write e.g. EF_RX_TIMESTAMPING=3, one per item, without commas")
			return nil
		}
	}
	return &probe.Stack{Name: n, Env: strings.Join(rs.Env, ",")}
}

// sender reads sender.engine, poll and stack: rig send's --engine, --poll
// and --stack, with their parsers.
func (c *checker) sender(sp string, rs *rawSender) Sender {
	out := Sender{Stack: c.stack(sp, rs.Stack)}
	if rs.Engine == nil && rs.Poll == nil && rs.Stack.Name == nil && rs.Stack.Env == nil {
		c.key(sp, "sender sets nothing", "set engine: native (or go), poll: busy (or block) and/or stack, or delete it")
	}
	if rs.Engine != nil {
		switch e, err := probe.ParseEngine(*rs.Engine); {
		case err != nil:
			c.val(sp+".engine", err.Error(), "use go or native")
		case e.Reflector():
			c.val(sp+".engine", fmt.Sprintf("engine %s answers requests, it does not send them", e), "use go or native for the sender; "+e.String()+" is a responder's engine (responder: {engine: "+e.String()+"})")
		default:
			out.Engine = &e
		}
	}
	if rs.Poll != nil {
		var m probe.PollMode
		if err := m.UnmarshalText([]byte(*rs.Poll)); err != nil {
			c.val(sp+".poll", fmt.Sprintf("sender poll %q: the sender's one thread waits for replies by block or busy, with either engine", *rs.Poll), "use block (sleeps in ppoll) or busy (polls without blocking, one CPU at 100 %); busy-poll, epoll and io-uring are the responder's (responder: {poll: ...})")
		} else {
			out.Poll = &m
		}
	}
	return out
}

// merge applies an arm over the defaults. Scalars and NIC fields merge
// field by field; irq, cstate, load, smt-sibling and smt are replaced
// whole because their fields only make sense together; requires is the
// union.
func merge(d, a Knobs) Knobs {
	e := d
	// responder.cpu is one field in either form.
	if a.Responder.CPU != nil || a.Responder.Quietest != nil {
		e.Responder.CPU, e.Responder.Quietest = a.Responder.CPU, a.Responder.Quietest
	}
	over(&e.Responder.Sched, a.Responder.Sched)
	over(&e.Responder.Poll, a.Responder.Poll)
	over(&e.Responder.Engine, a.Responder.Engine)
	over(&e.Responder.Stack, a.Responder.Stack)
	over(&e.Sender.Engine, a.Sender.Engine)
	over(&e.Sender.Poll, a.Sender.Poll)
	over(&e.Sender.Stack, a.Sender.Stack)
	over(&e.IRQ, a.IRQ)
	ec, ac := &e.NIC.Coalesce, a.NIC.Coalesce
	over(&ec.RxUsecs, ac.RxUsecs)
	over(&ec.TxUsecs, ac.TxUsecs)
	over(&ec.RxFrames, ac.RxFrames)
	over(&ec.TxFrames, ac.TxFrames)
	over(&ec.AdaptiveRx, ac.AdaptiveRx)
	over(&ec.AdaptiveTx, ac.AdaptiveTx)
	over(&e.NIC.Ring.RX, a.NIC.Ring.RX)
	over(&e.NIC.Ring.TX, a.NIC.Ring.TX)
	over(&e.NIC.Channels, a.NIC.Channels)
	en, an := &e.NIC.NAPI, a.NIC.NAPI
	over(&en.DeferHardIRQs, an.DeferHardIRQs)
	over(&en.GROFlushTimeout, an.GROFlushTimeout)
	over(&en.IRQSuspendTimeout, an.IRQSuspendTimeout)
	over(&e.CState, a.CState)
	over(&e.Load, a.Load)
	over(&e.SMTSibling, a.SMTSibling)
	over(&e.SMT, a.SMT)
	e.Power = mergePower(d.Power, a.Power)
	over(&e.Tuned, a.Tuned)
	over(&e.Noise, a.Noise)
	e.Requires = slices.Clone(d.Requires)
	for _, r := range a.Requires {
		if !slices.Contains(e.Requires, r) {
			e.Requires = append(e.Requires, r)
		}
	}
	return e
}

// over sets *dst to src when the arm gives src.
func over[T any](dst **T, src *T) {
	if src != nil {
		*dst = src
	}
}

// mergePower merges the arm's power knobs over the defaults' field by
// field.
func mergePower(d, a *power.Settings) *power.Settings {
	switch {
	case a == nil:
		return d
	case d == nil:
		return a
	}
	e := *d
	if a.Governor != "" {
		e.Governor = a.Governor
	}
	over(&e.Turbo, a.Turbo)
	over(&e.MinPerfPct, a.MinPerfPct)
	over(&e.MaxPerfPct, a.MaxPerfPct)
	over(&e.MinFreqKHz, a.MinFreqKHz)
	over(&e.MaxFreqKHz, a.MaxFreqKHz)
	if a.CPUs != nil {
		e.CPUs = a.CPUs
	}
	return &e
}
