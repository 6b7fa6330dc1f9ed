package scenario

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/native"
	"github.com/rig-project/rig/internal/power"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/testbin"
	"github.com/rig-project/rig/internal/tstamp"
)

// smallHost is a 2-CPU VM without isolation, SMT, stress-ng, cpufreq,
// turbo control or tuned.
func smallHost() *StaticFacts {
	return &StaticFacts{
		Online:     []int{0, 1},
		Ifaces:     []string{"eth0", "lo"},
		Idle:       []string{"POLL", "C1"},
		PowerFacts: &power.Facts{Arch: "x86_64", Virtual: true},
		Stacks:     map[probe.StackName]string{"onload": `its launcher onload is not on PATH (exec: "onload": executable file not found in $PATH)`},
		IOUring:    &facts.IOUring{Refused: "io_uring is disabled on this host (kernel.io_uring_disabled = 2; 0 enables it)"},
	}
}

// bigHost is the responder of an ExaNIC mirror-port lab: 26 CPUs, isolcpus=1-3, SMT pairs
// (n, n+13), hardware timestamps, intel_idle states, stress-ng, and a
// second interface ens6 with one address (the cloud scenarios' ENI).
func bigHost() *StaticFacts {
	f := &StaticFacts{
		Isolated: []int{1, 2, 3},
		NohzFull: []int{1, 2, 3},
		Ifaces:   []string{"lo", "eth0", "eth1", "eth2", "ens1f0", "exanic0", "exanic1", "ens6"},
		Addrs:    map[string][]netip.Addr{"ens6": {netip.MustParseAddr("10.0.1.20")}, "eth0": {netip.MustParseAddr("10.0.0.10")}},
		StressNG: true,
		NICs:     map[string]tstamp.NICState{"eth1": hwNIC(), "eth2": hwNIC(), "ens1f0": hwNIC(), "exanic0": hwNIC(), "exanic1": hwNIC()},
		Idle:     []string{"POLL", "C1", "C1E", "C6"},
		Siblings: map[int][]int{},
	}
	for c := 0; c < 26; c++ {
		f.Online = append(f.Online, c)
		f.Siblings[c] = []int{c % 13, c%13 + 13}
	}
	f.PowerFacts = intelPstateFacts(f.Online)
	return f
}

// intelPstateFacts is an intel_pstate host in active mode with HWP
// (3.1 GHz base, 3.6 GHz turbo), powersave, turbo on, tuned running
// throughput-performance (as a RHEL host with tuned runs by default).
func intelPstateFacts(cpus []int) *power.Facts {
	f := &power.Facts{Arch: "x86_64", Freq: map[int]rundir.Freq{},
		Turbo: &rundir.Turbo{Enabled: true, Source: hostinfo.IntelPstateDir + "/no_turbo", PstateMode: "active", MinPerfPct: 22, MaxPerfPct: 100},
		Tuned: &rundir.TunedState{Active: "throughput-performance", Running: true, Profiles: []string{"balanced", "latency-performance", "network-latency", "throughput-performance"}}}
	for _, c := range cpus {
		f.Freq[c] = rundir.Freq{Driver: "intel_pstate", Governor: "powersave", Governors: []string{"performance", "powersave"},
			CurKHz: 1200000, MinKHz: 800000, MaxKHz: 3600000, HWMinKHz: 800000, HWMaxKHz: 3600000, BaseKHz: 3100000,
			EPP: "balance_performance", RelatedCPUs: []int{c}}
	}
	return f
}

// hwNIC is a NIC that stamps every packet, RX and TX, and is set to.
func hwNIC() tstamp.NICState {
	return tstamp.NICState{
		Caps: tstamp.Caps{SOF: tstamp.FlagTxHardware | tstamp.FlagRxHardware | tstamp.FlagRawHardware, PHCIndex: 0,
			TxTypes: 1<<tstamp.TxOff | 1<<tstamp.TxOn, RxFilters: 1<<tstamp.FilterNone | 1<<tstamp.FilterAll},
		Config: tstamp.HWTstampConfig{TxType: tstamp.TxOn, RxFilter: tstamp.FilterAll}, ConfigKnown: true,
	}
}

// StaticFacts is a host's facts from fixed values, with the defaults a
// test wants: a nil Siblings entry means "no SMT sibling", a nil Idle
// "no cpuidle", an interface missing from NICs a software-only NIC whose
// config cannot be read (veth), nil PowerFacts no frequency control.
type StaticFacts struct {
	Online     []int
	Siblings   map[int][]int // cpu → siblings including cpu
	Isolated   []int
	NohzFull   []int
	Ifaces     []string
	StressNG   bool
	NICs       map[string]tstamp.NICState
	Idle       []string // state names, the same on every CPU
	Mgmt       []string // interfaces that carry a default route
	Addrs      map[string][]netip.Addr
	PowerFacts *power.Facts
	Stacks     map[probe.StackName]string // nil: not reported
	IOUring    *facts.IOUring
	NAPI       map[string]facts.NAPIKnobs
	SendNative *string // nil: not reported
	// RespondNative is why rig respond --engine native would refuse; nil:
	// found, as every test host's agent has its program unless it says
	// otherwise (RespondNativeUnknown: an older agent, which does not say).
	RespondNative        *string
	RespondNativeUnknown bool
}

// hostOf is what tests hand to factsFor: a *StaticFacts or a *facts.Facts.
type hostOf any

func factsOfHost(h hostOf) *facts.Facts {
	if sf, ok := h.(*StaticFacts); ok {
		return sf.facts()
	}
	return h.(*facts.Facts)
}

func (sf *StaticFacts) facts() *facts.Facts {
	f := &facts.Facts{Online: sf.Online, Siblings: map[int][]int{}, Isolated: sf.Isolated, NohzFull: sf.NohzFull, Ifaces: sf.Ifaces,
		StressNG: sf.StressNG, Timestamping: map[string]tstamp.NICState{}, IdleStates: map[int][]string{},
		MgmtIfaces: append([]string{}, sf.Mgmt...), Addrs: map[string][]netip.Addr{}, Power: &power.Facts{}}
	for _, c := range sf.Online {
		f.Siblings[c] = []int{c}
		if sib, ok := sf.Siblings[c]; ok {
			f.Siblings[c] = sib
		}
		if sf.Idle != nil {
			f.IdleStates[c] = sf.Idle
		}
	}
	if sf.Idle == nil {
		f.Missing = append(f.Missing, "cpuidle")
	}
	for _, i := range sf.Ifaces {
		st, ok := sf.NICs[i]
		if !ok {
			st = tstamp.NICState{Caps: tstamp.Caps{SOF: tstamp.FlagTxSoftware | tstamp.FlagRxSoftware | tstamp.FlagSoftware, PHCIndex: -1},
				ConfigErr: "SIOCGHWTSTAMP: EOPNOTSUPP"}
		}
		st.Ifname, st.Caps.Ifname = i, i
		st.Mgmt = st.Mgmt || slices.Contains(sf.Mgmt, i) // as facts.NIC.Timestamping fills it
		f.Timestamping[i] = st
	}
	for i, as := range sf.Addrs {
		f.Addrs[i] = as
	}
	if sf.PowerFacts != nil {
		f.Power = sf.PowerFacts
	}
	f.Stacks, f.IOUring, f.NAPI, f.SendNative = sf.Stacks, sf.IOUring, sf.NAPI, sf.SendNative
	if f.RespondNative = sf.RespondNative; f.RespondNative == nil && !sf.RespondNativeUnknown {
		f.RespondNative = new("")
	}
	return f
}

// tree reads the facts of a fake host root, as `rig run --dry-run` reads
// this machine.
func tree(t *testing.T, fs hostfs.FS) *facts.Facts {
	t.Helper()
	f, err := facts.Read(fs)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// treeWithStressNG is tree with stress-ng installed.
func treeWithStressNG(t *testing.T, fs hostfs.FS) *facts.Facts {
	f := tree(t, fs)
	f.StressNG = true
	return f
}

func factsFor(s *Scenario, f hostOf) map[string]*facts.Facts {
	m := map[string]*facts.Facts{}
	for _, h := range s.Hosts {
		m[h.Name] = factsOfHost(f)
	}
	return m
}

// factsOf converts a test's map of hosts.
func factsOf(hosts map[string]hostOf) map[string]*facts.Facts {
	m := map[string]*facts.Facts{}
	for n, h := range hosts {
		m[n] = factsOfHost(h)
	}
	return m
}

func shipped(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../scenarios/*.yaml")
	if err != nil || len(files) < 7 {
		t.Fatalf("shipped scenarios: %v (found %d)", err, len(files))
	}
	return files
}

func TestShippedScenarios(t *testing.T) {
	for _, file := range shipped(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			s, err := Load(file)
			if err != nil {
				t.Fatal(err)
			}
			if s.Emulate == "" {
				src := string(s.Source)
				if !strings.HasPrefix(src, "# ") || !strings.Contains(src, "Needs:") {
					t.Errorf("real-hardware scenario lacks the comment header with a Needs: line")
				}
			}
			facts := bigHost()
			if s.Emulate != "" {
				// demo.yaml must run here, on this machine, and floor.yaml
				// with the native programs beside rig.
				t.Setenv(native.EnvDir, testbin.Native(t))
				local := tree(t, hostfs.Default())
				if err := Validate(s, factsFor(s, local)); err != nil {
					t.Fatalf("against this machine: %v", err)
				}
			} else if err := Validate(s, factsFor(s, facts)); err != nil {
				t.Fatalf("against the fake 26-CPU host: %v", err)
			}
			p := s.Plan()
			if len(p.Skipped) != 0 {
				t.Errorf("skipped on a host that has everything: %+v", p.Skipped)
			}
			if len(p.Rounds) != s.Rounds || len(p.Arms) != len(s.Arms) || p.Baseline < 0 {
				t.Fatalf("plan: %d rounds, %d arms, baseline %d", len(p.Rounds), len(p.Arms), p.Baseline)
			}
			var out bytes.Buffer
			if err := WriteDryRun(&out, s, p, DryRunOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Log("\n" + out.String())
			for _, a := range s.Arms {
				if !strings.Contains(out.String(), a.Name) {
					t.Errorf("dry run does not mention arm %s:\n%s", a.Name, out.String())
				}
			}
		})
	}
}

func TestShippedSpecifics(t *testing.T) {
	irq, err := Load("../../scenarios/irq-local.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(irq.Arms) != 6 {
		t.Errorf("irq-local has %d arms, want 6 (3 placements, each idle and loaded)", len(irq.Arms))
	}
	withLoad := 0
	for _, a := range irq.Arms {
		if a.Effective.Load != nil {
			withLoad++
		}
	}
	if withLoad != 3 {
		t.Errorf("irq-local: %d arms load the shared CPUs, want 3", withLoad)
	}
	// On a host without isolated CPUs the isolated arms are skipped with
	// the reason, not refused.
	small := bigHost()
	small.Isolated = nil
	if err := Validate(irq, factsFor(irq, small)); err != nil {
		t.Fatal(err)
	}
	p := irq.Plan()
	if len(p.Arms) != 2 || len(p.Skipped) != 4 || !strings.Contains(p.Skipped[0].Skip, "CPU 1 is not isolated") {
		t.Errorf("without isolcpus: runs %d, skips %d (%+v)", len(p.Arms), len(p.Skipped), p.Skipped)
	}
	var out bytes.Buffer
	if err := WriteDryRun(&out, irq, p, DryRunOptions{Unchecked: []string{"rsp"}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"skipped arms:\n  isolated: CPU 1 is not isolated (isolated: none)", "1: shared → shared-stress\n", "facts of host rsp were not checked"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run lacks %q:\n%s", want, out.String())
		}
	}
	// Validate is repeatable: skips from a previous call are cleared.
	if err := Validate(irq, factsFor(irq, bigHost())); err != nil {
		t.Fatal(err)
	}
	if p := irq.Plan(); len(p.Skipped) != 0 {
		t.Errorf("skips survived a second Validate: %v", p.Skipped)
	}

	demo, err := Load("../../scenarios/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if d := demo.Plan().Duration(demo.Traffic); d >= 2*time.Minute || demo.Timestamps != TimestampsSoftware || len(demo.Arms) != 3 || demo.Rounds != 2 || demo.Arms[2].Request != RequestUnicast {
		t.Errorf("demo: %v sending, %s stamps, %d arms, %d rounds", d, demo.Timestamps, len(demo.Arms), demo.Rounds)
	}

	smt, err := Load("../../scenarios/smt-sibling.yaml")
	if err != nil {
		t.Fatal(err)
	}
	noSMT := bigHost()
	noSMT.Siblings = nil
	err = Validate(smt, factsFor(smt, noSMT))
	var list ErrorList
	if !errors.As(err, &list) || !strings.Contains(err.Error(), "baseline arm sibling-idle cannot run") {
		t.Errorf("smt-sibling without SMT: %v", err)
	}
}

var wantRE = regexp.MustCompile(`(?m)^# want: (\d+):(\d+) (.+)$`)

// TestBadScenarios runs the battery in testdata/bad. Each file says in a
// comment where its first error must be and what it must say; `# facts:
// fake` files are loaded fine and fail against a 2-CPU host.
func TestBadScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 25 {
		t.Fatalf("only %d bad scenarios", len(files))
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			m := wantRE.FindStringSubmatch(string(src))
			if m == nil {
				t.Fatal("no `# want: LINE:COL text` line")
			}
			s, err := Parse(file, src)
			if strings.Contains(string(src), "# facts: fake") {
				if err != nil {
					t.Fatalf("must load and fail only against the host: %v", err)
				}
				err = Validate(s, factsFor(s, smallHost()))
			}
			var list ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("want an ErrorList, got %v", err)
			}
			first := list[0]
			msg := first.Error()
			if got := fmt.Sprintf("%d:%d", first.Line, first.Col); got != m[1]+":"+m[2] {
				t.Errorf("error at %s, want %s:%s\n%s", got, m[1], m[2], msg)
			}
			if !strings.HasPrefix(msg, fmt.Sprintf("%s:%s:%s: ", file, m[1], m[2])) {
				t.Errorf("message does not start with file:line:col:\n%s", msg)
			}
			for _, part := range strings.Split(m[3], "; ") {
				if !strings.Contains(msg, part) {
					t.Errorf("message lacks %q:\n%s", part, msg)
				}
			}
			if first.Source == "" || !strings.Contains(msg, "^") {
				t.Errorf("no source line with a caret:\n%s", msg)
			}
			if first.Hint == "" {
				t.Errorf("no hint:\n%s", msg)
			}
		})
	}
}

func TestErrorCaret(t *testing.T) {
	e := (&posIndex{file: "f.yaml", lines: []string{"a:", "\tb: 1x"}}).errAt(pos{2, 5}, "bad", "fix it")
	want := "f.yaml:2:5: bad\n 2 | \tb: 1x\n   | \t   ^\nhint: fix it"
	if e.Error() != want {
		t.Errorf("got\n%s\nwant\n%s", e.Error(), want)
	}
}

func load(t *testing.T, src string) *Scenario {
	t.Helper()
	s, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const threeArms = `name: t
emulate: netns
traffic: {group: "239.1.1.1:5000"}
rounds: 4
order: %s
arms: [{name: a}, {name: b}, {name: c}]
`

func names(p Plan) []string {
	var out []string
	for _, r := range p.Rounds {
		var n []string
		for _, i := range r {
			n = append(n, p.Arms[i].Name)
		}
		out = append(out, strings.Join(n, ""))
	}
	return out
}

func TestPlanOrder(t *testing.T) {
	for _, tc := range []struct {
		order string
		want  []string
	}{
		{"rotate", []string{"abc", "bca", "cab", "abc"}},
		{"sequential", []string{"abc", "abc", "abc", "abc"}},
	} {
		got := names(load(t, fmt.Sprintf(threeArms, tc.order)).Plan())
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.order, got, tc.want)
		}
	}
	r1 := names(load(t, fmt.Sprintf(threeArms, "random:42")).Plan())
	r2 := names(load(t, fmt.Sprintf(threeArms, "random:42")).Plan())
	if !slices.Equal(r1, r2) {
		t.Errorf("random:42 differs between plans: %v %v", r1, r2)
	}
	distinct := map[string]bool{}
	for _, r := range r1 {
		b := []byte(r)
		slices.Sort(b)
		if string(b) != "abc" {
			t.Errorf("random round %q is not a permutation of abc", r)
		}
		distinct[r] = true
	}
	var other []string
	for seed := 0; seed < 20 && len(other) == 0; seed++ {
		if o := names(load(t, fmt.Sprintf(threeArms, fmt.Sprintf("random:%d", seed))).Plan()); !slices.Equal(o, r1) {
			other = o
		}
	}
	if len(distinct) < 2 || other == nil {
		t.Errorf("random orders do not vary with round and seed: %v", r1)
	}
}

func TestDefaultsAndMerge(t *testing.T) {
	s := load(t, `name: t
hosts:
  rsp: {via: ssh rsp, roles: [responder], iface: eth1}
  snd: {via: local, roles: [sender]}
  cap: {via: local, roles: [capture], iface: eth2}
traffic:
  group: 239.1.1.1:5000
defaults:
  responder: {cpu: 2, sched: "fifo:50"}
  nic: {coalesce: {adaptive-rx: false, rx-usecs: 8}}
  cstate: {poll: true}
  requires: [isolated]
arms:
  - name: a
  - name: b
    responder: {cpu: 3, poll: "busy-poll:50"}
    nic: {coalesce: {rx-usecs: 0}, ring: {rx: 512}}
    cstate: {max-latency-us: 0}
    requires: [smt]
`)
	tr := s.Traffic
	d := probe.DefaultSend() // the traffic defaults are rig send's
	if tr.Count != d.Count || tr.Size != d.Size || tr.Warmup != d.Warmup || tr.Interval != time.Millisecond || tr.ReplyTimeout != 500*time.Millisecond || !tr.UnicastReply() {
		t.Errorf("traffic defaults: %+v", tr)
	}
	if s.Rounds != DefaultRounds || s.Order.Kind != OrderRotate || s.Baseline != "a" || s.Timestamps != TimestampsAuto {
		t.Errorf("defaults: rounds %d order %s baseline %s stamps %s", s.Rounds, s.Order, s.Baseline, s.Timestamps)
	}
	if s.Hosts[1].Name != "rsp" || !slices.Equal(s.Hosts[1].Command, []string{"ssh", "rsp"}) {
		t.Errorf("hosts: %+v", s.Hosts)
	}
	a, b := s.Arms[0].Effective, s.Arms[1].Effective
	if *a.Responder.CPU != 2 || a.Responder.Sched.String() != "fifo:50" || a.Responder.Poll != nil || !a.CState.Poll || *a.NIC.Coalesce.RxUsecs != 8 {
		t.Errorf("arm a: %+v", a)
	}
	if *b.Responder.CPU != 3 || b.Responder.Sched.Priority != 50 || b.Responder.Poll.BusyPollUS != 50 ||
		*b.NIC.Coalesce.RxUsecs != 0 || *b.NIC.Coalesce.AdaptiveRx || *b.NIC.Ring.RX != 512 ||
		b.CState.Poll || *b.CState.MaxLatencyUS != 0 || !slices.Equal(b.Requires, []Requirement{RequireIsolated, RequireSMT}) {
		t.Errorf("arm b: %+v", b)
	}
	if s.Arms[1].Knobs.Responder.Sched != nil {
		t.Error("arm b as written got the default sched")
	}
}

// TestCoalesceTxFrames: nic.coalesce takes tx-frames as `rig nicctl set
// --tx-frames` does: merged from defaults, printed by the dry run, carried
// to the agent as ethtoolnl's tx_frames, and a bad value is refused at its
// line and column.
func TestCoalesceTxFrames(t *testing.T) {
	const src = `name: t
hosts: {h: {via: local, roles: [sender, responder], iface: eth0}}
traffic: {group: "239.1.1.1:5000"}
defaults:
  nic: {coalesce: {tx-frames: 8}}
arms:
  - name: a
  - name: b
    nic: {coalesce: {tx-frames: %s, rx-usecs: 0}}
`
	s := load(t, strings.Replace(src, "%s", "16", 1))
	a, b := s.Arms[0].Effective.NIC.Coalesce, s.Arms[1].Effective.NIC.Coalesce
	if a.TxFrames == nil || *a.TxFrames != 8 || b.TxFrames == nil || *b.TxFrames != 16 || *b.RxUsecs != 0 {
		t.Fatalf("a %+v b %+v", a, b)
	}
	var out bytes.Buffer
	if err := WriteDryRun(&out, s, s.Plan(), DryRunOptions{}); err != nil || !strings.Contains(out.String(), "coalescing: ethtool -C eth0 rx-usecs 0 tx-frames 16") {
		t.Fatalf("dry run: %v\n%s", err, out.String())
	}
	if j, err := json.Marshal(s.Arms[1].Effective); err != nil || !strings.Contains(string(j), `"tx_frames":16`) {
		t.Fatalf("knobs JSON: %s %v", j, err)
	}
	if _, err := Parse("t.yaml", []byte(strings.Replace(src, "%s", "-1", 1))); err == nil || !strings.Contains(err.Error(), "t.yaml:9:33:") || !strings.Contains(err.Error(), "tx-frames") {
		t.Fatalf("tx-frames -1: %v", err)
	}
}

func TestCPUListForms(t *testing.T) {
	for _, v := range []string{`"0-2,5"`, `[0, 1, 2, 5]`, `[5, 2, 1, 0, 2]`} {
		s := load(t, `name: t
hosts: {h: {via: local, roles: [sender, responder], iface: eth0}}
traffic: {group: "239.1.1.1:5000"}
arms:
  - name: a
    irq: {cpus: `+v+`}
`)
		if got := s.Arms[0].Effective.IRQ.CPUs; !slices.Equal(got, []int{0, 1, 2, 5}) {
			t.Errorf("%s: %v", v, got)
		}
	}
}

func TestDryRunCurrentValues(t *testing.T) {
	root := t.TempDir()
	for _, f := range []struct{ p, v string }{
		{"sys/devices/system/cpu/online", "0-1"},
		{"sys/devices/system/cpu/cpu1/cpuidle/state0/name", "POLL"},
		{"sys/devices/system/cpu/cpu1/cpuidle/state1/name", "C1"},
		{"sys/devices/system/cpu/cpu1/cpuidle/state1/disable", "0"},
		{"sys/devices/system/cpu/cpu1/cpuidle/state0/disable", "0"},
		{"sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "performance"},
	} {
		p := filepath.Join(root, f.p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, st := range []string{"state0", "state1"} {
		for _, n := range []string{"latency", "usage", "time"} {
			os.WriteFile(filepath.Join(root, "sys/devices/system/cpu/cpu1/cpuidle", st, n), []byte("1\n"), 0o644)
		}
	}
	s := load(t, `name: t
emulate: netns
traffic: {group: "239.1.1.1:5000"}
arms:
  - name: poll
    responder: {cpu: 1}
    cstate: {poll: true}
`)
	fs := hostfs.FS{Root: root}
	var out bytes.Buffer
	if err := WriteDryRun(&out, s, s.Plan(), DryRunOptions{Local: &fs}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"cpu1/cpuidle/state1 (C1): disable 0 → 1", "governor of CPU 1: performance"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "(POLL)") {
		t.Errorf("dry run disables POLL:\n%s", out.String())
	}
}

func FuzzLoad(f *testing.F) {
	for _, g := range []string{"../../scenarios/*.yaml", "testdata/bad/*.yaml"} {
		files, _ := filepath.Glob(g)
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add([]byte("a: &x [1]\nb: *x\n<<: {c: 1}\n"))
	f.Add([]byte("name: t\nemulate: netns\ntraffic: {group: \"239.1.1.1:5000\"}\nresponders: 2\ndefaults: {sender: {engine: native, poll: busy}}\narms: [{name: a, sender: {engine: xdp}}]\n"))
	facts := smallHost()
	f.Fuzz(func(t *testing.T, src []byte) {
		s, err := Parse("fuzz.yaml", src)
		if err != nil {
			var list ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("not an ErrorList: %v", err)
			}
			for _, e := range list {
				if e.Line < 1 || e.Col < 1 {
					t.Fatalf("no position: %v", e)
				}
			}
			return
		}
		if err := Validate(s, factsFor(s, facts)); err != nil {
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("validate: %v", err)
			}
		}
		p := s.Plan()
		if err := WriteDryRun(&bytes.Buffer{}, s, p, DryRunOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}

// formatDoc is the scenario reference.
const formatDoc = "../../docs/scenarios.md"

// docExample returns the YAML block that follows heading in a Markdown file.
func docExample(t *testing.T, file, heading string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, ex, ok := strings.Cut(string(b), heading+"\n")
	_, ex, ok2 := strings.Cut(ex, "```yaml\n")
	ex, _, ok3 := strings.Cut(ex, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatalf("%s has no YAML example under %q", file, heading)
	}
	return ex
}

// TestFormatDoc keeps the scenario reference (docs/scenarios.md) honest:
// its complete example loads, and every key the loader accepts is
// documented. The README's ten-line scenario loads too.
func TestFormatDoc(t *testing.T) {
	b, err := os.ReadFile(formatDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	s, err := Parse("docs/scenarios.md example", []byte(docExample(t, formatDoc, "### Complete example")))
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(s, factsFor(s, smallHost())); err != nil {
		t.Fatal(err)
	}
	s, err = Parse("README.md example", []byte(docExample(t, "../../README.md", "## A scenario in ten lines")))
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(s, factsFor(s, bigHost())); err != nil {
		t.Fatal(err)
	}
	if len(s.Hosts) != 3 || len(s.Arms) != 2 || s.Arms[1].Effective.IRQ == nil {
		t.Errorf("README.md example: %d hosts, %d arms: not the example this test knows", len(s.Hosts), len(s.Arms))
	}
	for _, path := range []string{"", "hosts.x", "traffic", "arms[0]", "arms[0].responder", "arms[0].irq", "arms[0].nic",
		"arms[0].nic.coalesce", "arms[0].nic.ring", "arms[0].cstate", "arms[0].load", "arms[0].smt-sibling", "arms[0].power", "arms[0].noise", "arms[0].sender", "capture"} {
		keys := knownKeys(path)
		if len(keys) == 0 {
			t.Errorf("no keys known under %q", path)
		}
		for _, k := range keys {
			if !strings.Contains(doc, "`"+k+"`") && !strings.Contains(doc, "."+k+"`") {
				t.Errorf("%s does not document %s.%s", formatDoc, path, k)
			}
		}
	}
}

func TestAnchorsKeepPositions(t *testing.T) {
	src := `name: t
emulate: netns
traffic: {group: "239.1.1.1:5000"}
defaults: &d
  responder: {cpu: 1}
arms:
  - name: a
    <<: *d
  - name: b
    responder: {sched: "fifo:0"}
`
	_, err := Parse("t.yaml", []byte(src))
	var list ErrorList
	if !errors.As(err, &list) || list[0].Line != 10 {
		t.Fatalf("want an error on line 10, got %v", err)
	}
}

func TestSkipReasons(t *testing.T) {
	s := load(t, `name: t
hosts:
  rsp: {via: ssh rsp, roles: [responder], iface: eth0}
  snd: {via: local, roles: [sender], iface: eth0}
traffic: {group: "239.1.1.1:5000"}
defaults:
  responder: {cpu: 1}
arms:
  - name: base
  - name: sib
    smt-sibling: {load: --cpu 1}
  - name: optional-load
    load: {stress-ng: --cpu 1}
    requires: [stress-ng]
  - name: hw
    requires: [hw-timestamps, nohz_full]
`)
	if err := Validate(s, factsFor(s, smallHost())); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"base":          "",
		"sib":           "CPU 1 has no SMT sibling (thread_siblings_list 1: one thread per core) for the smt-sibling load",
		"optional-load": "stress-ng is not installed",
		"hw":            "CPU 1 is not nohz_full (nohz_full: none); no hardware timestamps: eth0 cannot give rig's probes RX ALL + TX ON in hardware (RX: no hardware RX stamps; TX: no hardware TX stamps",
	}
	for _, a := range s.Arms {
		if a.Skip != want[a.Name] && (want[a.Name] == "" || !strings.HasPrefix(a.Skip, want[a.Name])) {
			t.Errorf("arm %s: skip %q, want %q", a.Name, a.Skip, want[a.Name])
		}
	}
	if p := s.Plan(); len(p.Arms) != 1 || len(p.Rounds[0]) != 1 || p.Baseline != 0 {
		t.Errorf("plan: %+v", p)
	}

	// timestamps: hardware is an error, not a skip, where a NIC cannot.
	s.Timestamps = TimestampsHardware
	err := Validate(s, factsFor(s, smallHost()))
	if err == nil || !strings.Contains(err.Error(), "timestamps: hardware, and on host rsp (RX ALL + TX ON): eth0 cannot give rig's probes") {
		t.Errorf("hardware stamps on a software NIC: %v", err)
	}
	// Facts that cannot say what the file asks (an arm requires hardware
	// stamps of a NIC the host could not read) are not a file problem: a
	// *HostError, and the plan says why.
	unread := smallHost().facts()
	delete(unread.Timestamping, "eth0")
	unread.TimestampingErr = map[string]string{"eth0": "SIOCGHWTSTAMP: EPERM"}
	var list ErrorList
	var he *HostError
	if err := Validate(s, map[string]*facts.Facts{"rsp": unread}); errors.As(err, &list) || !errors.As(err, &he) || !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("unreadable NIC on a host: %v", err)
	}
	if tp := s.TimestampPlans(map[string]*facts.Facts{"rsp": unread}); len(tp) != 1 || !strings.Contains(tp[0].String(), "not checked: timestamping of eth0: SIOCGHWTSTAMP: EPERM") {
		t.Errorf("plan of an unreadable NIC: %v", tp)
	}
	// Facts that contradict themselves (a CPU without its siblings) are
	// not a file problem: a *HostError.
	broken := bigHost().facts()
	delete(broken.Siblings, 1)
	smt := load(t, "name: t\nemulate: netns\ntraffic: {group: \"239.1.1.1:5000\"}\narms:\n  - name: a\n    responder: {cpu: 1}\n    requires: [smt]\n")
	if err := Validate(smt, factsFor(smt, broken)); errors.As(err, &list) || !errors.As(err, &he) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("facts without CPU 1's siblings: %v", err)
	}
	if u := s.Unchecked(map[string]*facts.Facts{"rsp": smallHost().facts()}); !slices.Equal(u, []string{"snd"}) {
		t.Errorf("unchecked: %v", u)
	}
}

// TestCaptureNeedsItsOwnPort: a capture on the interface its host sends
// or answers on sees that host's own packets as outgoing (software stamps
// at best) and its turnaround would be the sender's round trip.
func TestCaptureNeedsItsOwnPort(t *testing.T) {
	for _, tc := range []struct{ name, hosts, want string }{
		{"one entry", `  snd: {via: local, roles: [sender, capture], iface: eth1}
  rsp: {via: ssh rsp, roles: [responder], iface: eth1}`, "t.yaml:3:28: host snd captures on the interface it sends or answers on"},
		{"two entries, one port", `  snd: {via: local, roles: [sender], iface: eth1}
  cap: {via: local, roles: [capture], iface: eth1}
  rsp: {via: ssh rsp, roles: [responder], iface: eth1}`, "the capture captures on eth1, which host snd (via local) sends or answers on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte("name: t\nhosts:\n"+tc.hosts+"\ntraffic: {group: \"239.1.1.1:5000\"}\narms: [{name: a}]\n"))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "mirror/SPAN port") {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	// The same port name on another machine is another port.
	load(t, `name: t
hosts:
  snd: {via: local, roles: [sender], iface: eth1}
  cap: {via: ssh tap, roles: [capture], iface: eth1}
  rsp: {via: ssh rsp, roles: [responder], iface: eth1}
traffic: {group: "239.1.1.1:5000"}
arms: [{name: a}]
`)
}

// TestHardwareTimestampRules: validation applies the probes' rules —
// sender and responder need RX ALL + TX ON, the capture RX ALL — to every
// host's facts, and the dry-run plan says what the run will do.
func TestHardwareTimestampRules(t *testing.T) {
	src := `name: t
hosts:
  snd: {via: local, roles: [sender], iface: ens5}
  cap: {via: ssh cap, roles: [capture], iface: ens6}
  rsp: {via: ssh rsp, roles: [responder], iface: ens5, take-over-ptp: true}
traffic: {group: "239.1.1.1:5000"}
timestamps: hardware
arms: [{name: a}]
`
	ena := tstamp.NICState{Caps: tstamp.Caps{SOF: tstamp.FlagRxHardware, PHCIndex: 0, TxTypes: 1 << tstamp.TxOff,
		RxFilters: 1<<tstamp.FilterNone | 1<<tstamp.FilterAll}, ConfigKnown: true}
	off := hwNIC()
	off.Config = tstamp.HWTstampConfig{}
	ptp := hwNIC()
	ptp.Config.RxFilter, ptp.Owner = tstamp.FilterPTPv2Event, "ptp4l (pid 7, -i ens5)"
	host := func(nics map[string]tstamp.NICState) *StaticFacts {
		f := smallHost()
		f.Ifaces = append(f.Ifaces, "ens5", "ens6")
		f.NICs = nics
		return f
	}
	s := load(t, src)
	// ENA (RX only): the capture may use it, the sender and responder not.
	facts := factsOf(map[string]hostOf{"snd": host(map[string]tstamp.NICState{"ens5": ena}), "cap": host(map[string]tstamp.NICState{"ens6": ena}),
		"rsp": host(map[string]tstamp.NICState{"ens5": hwNIC()})})
	err := Validate(s, facts)
	if err == nil || !strings.Contains(err.Error(), "on host snd (RX ALL + TX ON): ens5 cannot give rig's probes RX ALL + TX ON in hardware (TX: no hardware TX stamps") ||
		strings.Contains(err.Error(), "host cap") || strings.Contains(err.Error(), "host rsp") {
		t.Fatalf("ENA sender: %v", err)
	}
	// A NIC that is off is switched on by the run (once, journaled); a
	// ptp4l-owned one only because the host allows the take-over.
	facts["snd"] = host(map[string]tstamp.NICState{"ens5": off}).facts()
	facts["rsp"] = host(map[string]tstamp.NICState{"ens5": ptp}).facts()
	if err := Validate(s, facts); err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	for _, tp := range s.TimestampPlans(facts) {
		plan.WriteString(tp.String() + "\n")
	}
	for _, want := range []string{
		"snd ens5 (RX ALL + TX ON): write: ens5: tx_type=OFF rx_filter=NONE → tx_type=ON rx_filter=ALL — journaled once for the run",
		"cap ens6 (RX ALL): write: ens6: tx_type=OFF rx_filter=NONE → tx_type=OFF rx_filter=ALL",
		"rsp ens5 (RX ALL + TX ON): write: ens5: tx_type=ON rx_filter=PTP_V2_EVENT → tx_type=ON rx_filter=ALL",
	} {
		if !strings.Contains(plan.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, plan.String())
		}
	}
	// Without the take-over, ptp4l's config is refused in hardware mode.
	s = load(t, strings.Replace(src, ", take-over-ptp: true", "", 1))
	if err := Validate(s, facts); err == nil || !strings.Contains(err.Error(), "ptp4l (pid 7, -i ens5) owns ens5's timestamping config: rig does not change it") {
		t.Fatalf("ptp4l without take-over: %v", err)
	}
}

// TestFanoutScenario: responders: 2 builds two responder hosts, whose ids
// follow the host order; each gets the knobs of defaults, then its own
// defaults.responders entry, then the arm's, then the arm's entry for it.
func TestFanoutScenario(t *testing.T) {
	s, err := Load("../../scenarios/fanout-demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Responders, []string{"responder", "responder1"}) || !s.Fanout() {
		t.Fatalf("responders %v", s.Responders)
	}
	var stress Arm
	for _, a := range s.Arms {
		if a.Name == "stress1" {
			stress = a
		}
	}
	r0, r1 := s.KnobsFor(stress, "responder"), s.KnobsFor(stress, "responder1")
	if r0.Responder.CPU == nil || *r0.Responder.CPU != 0 || r0.Load != nil || r0.Responder.Poll == nil || *r0.Responder.Poll != (probe.Poll{Mode: probe.Block}) {
		t.Errorf("responder's knobs %+v", r0)
	}
	if r1.Responder.CPU == nil || *r1.Responder.CPU != 1 || r1.Load == nil || !slices.Equal(r1.Load.CPUs, []int{1}) {
		t.Errorf("responder1's knobs %+v", r1)
	}
	if stress.Effective.Load != nil {
		t.Errorf("the arm's knobs for every responder carry responder1's load: %+v", stress.Effective)
	}
	// Real hosts: every host with the responder role is a responder, ids
	// in host-name order.
	s, err = Parse("t.yaml", []byte(`name: t
hosts:
  a: {via: local, roles: [sender, responder], iface: eth1}
  b: {via: ssh b, roles: [responder], iface: eth1}
  c: {via: ssh c, roles: [capture], iface: eth2}
traffic: {group: 239.1.1.1:5000}
arms:
  - name: x
    responders: {b: {responder: {cpu: 3}}}
`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Responders, []string{"a", "b"}) || *s.KnobsFor(s.Arms[0], "b").Responder.CPU != 3 || s.KnobsFor(s.Arms[0], "a").Responder.CPU != nil {
		t.Errorf("responders %v, knobs %+v", s.Responders, s.Arms[0].PerResponder)
	}
	// A responder's own knobs are checked against its host's facts, at
	// their line.
	s, err = Parse("t.yaml", []byte(`name: t
hosts:
  a: {via: local, roles: [sender, responder], iface: eth1}
  b: {via: ssh b, roles: [responder], iface: eth1}
traffic: {group: 239.1.1.1:5000}
arms:
  - name: x
    responders:
      b: {responder: {cpu: 40}}
`))
	if err != nil {
		t.Fatal(err)
	}
	facts := factsFor(s, bigHost())
	err = Validate(s, facts)
	if err == nil || !strings.Contains(err.Error(), "t.yaml:9:") || !strings.Contains(err.Error(), "40") {
		t.Errorf("responder b's CPU 40 on a 26-CPU host: %v", err)
	}
}

// Pods on different nodes get multicast requests only where the cluster
// network carries multicast (not EKS, AKS or GKE without a multicast
// domain): the dry run of the multicast Kubernetes scenario says so and
// names the unicast pair; the unicast scenarios do not need the note.
func TestDryRunWarnsKubernetesMulticast(t *testing.T) {
	for file, want := range map[string]bool{"k8s-pinned-vs-shared.yaml": true, "k8s-pinned-unicast.yaml": false, "k8s-shared-unicast.yaml": false, "demo.yaml": false} {
		s, err := Load("../../scenarios/" + file)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := WriteDryRun(&out, s, s.Plan(), DryRunOptions{}); err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(out.String(), "are reached by kubectl (pods): multicast requests must cross the cluster network from node to node") &&
			strings.Contains(out.String(), "run scenarios/k8s-pinned-unicast.yaml and k8s-shared-unicast.yaml and rig compare the two")
		if got != want {
			t.Errorf("%s: note %v, want %v:\n%s", file, got, want, out.String())
		}
	}
}

// TestNoiseKnob: noise: {for: D} in defaults reaches every arm, an arm's
// own replaces it, and the dry run says what runs.
func TestNoiseKnob(t *testing.T) {
	src := `name: t
emulate: netns
traffic: {group: 239.1.1.1:5000}
defaults:
  responder: {cpu: quietest}
  noise: {for: 200ms}
arms:
  - name: a
  - name: b
    noise: {for: 2s}
`
	s, err := Parse("noise.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []time.Duration{200 * time.Millisecond, 2 * time.Second} {
		if n := s.Arms[i].Effective.Noise; n == nil || n.For != want {
			t.Errorf("arm %s: noise %+v, want for %v", s.Arms[i].Name, n, want)
		}
	}
	d := strings.Join(describe(s.Arms[0], "eth1", nil), "\n")
	if !strings.Contains(d, "noise window: rig noise on the responder CPU for 200ms before the round's probes (noise.json; with several responders on each one's CPU in turn, noise-<id>.json)  [defaults]") {
		t.Errorf("dry run:\n%s", d)
	}
}

// TestPcapKey: capture: {pcap: true} reaches the scenario, and the dry run
// states what the pcap files take: 10000 requests and replies of
// 14+20+8+64 B frames, 16 B a record, 24 B a file.
func TestPcapKey(t *testing.T) {
	s := load(t, `name: t
emulate: netns
traffic: {group: "239.1.1.1:5000", count: 10000, size: 64}
rounds: 3
capture: {pcap: true}
arms: [{name: a}, {name: b}]
`)
	if !s.Pcap {
		t.Fatal("capture.pcap: true did not reach the scenario")
	}
	var out bytes.Buffer
	if err := WriteDryRun(&out, s, s.Plan(), DryRunOptions{}); err != nil {
		t.Fatal(err)
	}
	// 24 + 2·10000·(16+106) = 2 440 024 B a round, 6 rounds in all.
	want := "pcap: every round's capture writes capture.pcap, up to 2.3 MiB a round (10000 requests and 10000 replies, at most 128 B of each frame; held in the capture host's memory until the round ends): 14.0 MiB for the run on the results disk"
	if !strings.Contains(out.String(), want) {
		t.Errorf("dry run lacks %q:\n%s", want, out.String())
	}
	if s := load(t, "name: t\nemulate: netns\ntraffic: {group: \"239.1.1.1:5000\"}\ncapture: {pcap: false}\narms: [{name: a}]\n"); s.Pcap {
		t.Error("capture.pcap: false turned pcap on")
	}
}
