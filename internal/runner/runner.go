// Package runner executes a scenario: it turns the plan (arms × rounds)
// into rounds on the hosts, applies and takes back each arm's knobs on the
// responder host, writes a self-describing run directory, and analyses it.
//
// Before the first round it prepares each host's NIC timestamping once for
// the run. The order of work for every arm of every round is fixed: rank
// the candidate CPUs (responder.cpu: quietest) → apply the knobs
// (journaled) → run the round → take the knobs back → write the files. A
// cancelled context (Ctrl-C, SIGTERM) stops the current round, takes the
// knobs back, keeps finished rounds on disk and marks the manifest.
package runner

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rig-project/rig/analysis"
	"github.com/rig-project/rig/internal/agent"
	"github.com/rig-project/rig/internal/check"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/owner"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/round"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/scenario"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/internal/version"
	"github.com/rig-project/rig/internal/wire"
)

// Options configure a run.
type Options struct {
	Scenario    *scenario.Scenario
	ResultsDir  string   // parent of the run directory (default "results")
	Rig         string   // this rig binary, run by local and netns agents (default: os.Executable)
	RemoteRig   string   // the rig binary on hosts reached by ssh/kubectl (default "rig" on their PATH)
	CommandLine []string // recorded in the manifest
	StateDir    string   // journal directory (default journal.Dir()); the host lock is there too
	// RunID names the run in the manifest, on the wire and in the host
	// lock (default a new random one).
	RunID string
	FS    hostfs.FS
	// Log receives progress and process logs (nil: discard).
	Log io.Writer
	// Progress, if set, is told about each round as it runs.
	Progress ProgressFunc
}

// ProgressFunc reports the arm and round running, requests sent and
// replies received so far, and the planned totals.
type ProgressFunc func(p Progress)

// Progress is one progress report.
type Progress struct {
	Arm            string
	Round, Rounds  int
	Step, Steps    int // arm-rounds done / planned
	Sent, Received int
	Count          int
	Elapsed        time.Duration
	ETA            time.Duration
}

// Result is a finished (or interrupted) run.
type Result struct {
	Dir    string
	Report *analysis.Report
}

// hosts are the agents of a run, one per host (per namespace when
// emulated), and which one plays each role.
type hosts struct {
	agents            map[string]*agent.Client // by host name
	sender, responder round.Host
	// others are responders 1..N-1 of a fan-out scenario, in id order
	// (scenario.Scenario.Responders[1:]).
	others  []round.Host
	capture *round.Host
	lab     string // emulated lab name to remove at the end
	// restore is, by host name, the command that runs rig restore where
	// the host's journal is (restoreCommand).
	restore map[string]string
}

func (hs *hosts) close() error {
	var errs []error
	for _, c := range hs.agents {
		errs = append(errs, c.Close())
	}
	if hs.lab != "" {
		errs = append(errs, netlab.Down(hs.lab))
	}
	return errors.Join(errs...)
}

// Run executes the scenario. The run directory is returned even when the
// run fails or is interrupted, so finished rounds are never lost.
func Run(ctx context.Context, o Options) (*Result, error) {
	s := o.Scenario
	if o.ResultsDir == "" {
		o.ResultsDir = "results"
	}
	if o.StateDir == "" {
		o.StateDir = journal.Dir()
	}
	if o.FS.Root == "" {
		o.FS = hostfs.Default()
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	// Agents and the runner log from several goroutines.
	o.Log = &syncWriter{w: o.Log}
	if o.Rig == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		o.Rig = exe
	}
	if o.RunID == "" {
		o.RunID = wire.FormatRunID(wire.NewRunID())
	}
	// The run holds this machine from here to its end; its agents share
	// the lock (each on its own machine), everyone else is refused.
	lock, err := journal.LockHost(o.StateDir, journal.Self(o.RunID))
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	if err := journal.CheckPending(o.StateDir); err != nil {
		return nil, err
	}
	hs, err := setupHosts(ctx, s, o)
	if hs != nil {
		defer func() {
			if cerr := hs.close(); cerr != nil {
				fmt.Fprintf(o.Log, "rig run: closing hosts: %v\n", cerr)
			}
		}()
	}
	if err != nil {
		return nil, err
	}
	facts, err := validate(ctx, s, hs)
	if err != nil {
		return nil, err
	}
	to, err := unicastTo(s, hs, facts)
	if err != nil {
		return nil, err
	}
	plan := s.Plan()
	if len(plan.Arms) == 0 {
		return nil, errors.New("no arm can run on these hosts: every arm was skipped (see rig run --dry-run)")
	}
	if s.RequireCheck {
		if err := preflight(ctx, o, s, plan, hs); err != nil {
			return nil, err
		}
	}
	start := time.Now().UTC()
	dir, err := rundir.Create(o.ResultsDir, s.Name, start)
	if err != nil {
		return nil, err
	}
	res := &Result{Dir: dir}
	man := manifest(s, plan, o, start)
	setRequests(man, s, to)
	if err := rundir.WriteJSON(filepath.Join(dir, rundir.ManifestFile), man); err != nil {
		return res, err
	}
	if err := writeEnv(ctx, dir, hs, o.Log); err != nil {
		return res, err // before any change: nothing to undo
	}
	// The NICs' timestamping, once for the run, after the environment
	// snapshot (which shows the hosts as they were) and before any arm.
	man.NICTimestamping, err = prepareTimestamping(ctx, o, s, hs)
	if err != nil {
		man.Interrupted = err.Error()
		return res, errors.Join(err, rundir.WriteJSON(filepath.Join(dir, rundir.ManifestFile), man))
	}

	steps := len(plan.Rounds) * len(plan.Arms)
	step := 0
	runErr := func() error {
		for r, order := range plan.Rounds {
			for _, ai := range order {
				arm := plan.Arms[ai]
				armIndex := armIndexOf(s, arm.Name)
				if err := ctx.Err(); err != nil {
					return err
				}
				err := runArmRound(ctx, o, s, hs, dir, arm, armIndex, r, man.RunID, to, func(sent, recv int) {
					if o.Progress != nil {
						el := time.Since(start)
						done := float64(step) + float64(sent)/float64(max(1, s.Traffic.Count))
						eta := time.Duration(0)
						if done > 0 {
							eta = time.Duration(float64(el) * (float64(steps) - done) / done)
						}
						o.Progress(Progress{Arm: arm.Name, Round: r, Rounds: len(plan.Rounds), Step: step, Steps: steps,
							Sent: sent, Received: recv, Count: s.Traffic.Count, Elapsed: el, ETA: eta})
					}
				})
				if err != nil {
					return fmt.Errorf("arm %s round %d: %w", arm.Name, r, err)
				}
				step++
			}
		}
		return nil
	}()
	man.EndedAt = time.Now().UTC().Format(time.RFC3339)
	man.Granted = granted(dir, plan)
	if runErr != nil {
		man.Interrupted = runErr.Error()
	}
	if err := rundir.WriteJSON(filepath.Join(dir, rundir.ManifestFile), man); err != nil {
		runErr = errors.Join(runErr, err)
	}
	rep, aerr := analysis.Regenerate(dir, analysis.Options{})
	res.Report = rep
	if aerr != nil && runErr == nil {
		runErr = fmt.Errorf("analysis: %w", aerr)
	}
	return res, runErr
}

func armIndexOf(s *scenario.Scenario, name string) int {
	for i, a := range s.Arms {
		if a.Name == name {
			return i
		}
	}
	return -1
}

// restoreCommand is the command that runs rig restore on a host reached by
// prefix (none for this machine; ssh HOST, ip netns exec NS, kubectl exec
// -i POD --, as the scenario's via) whose agent is the binary rig.
func restoreCommand(prefix []string, rig string) string {
	return strings.Join(append(slices.Clone(prefix), rig, "restore"), " ")
}

// applyOn applies knobs k of arm on responder host h and returns the
// function that takes them back (nil when the apply failed: the agent
// takes back what a failed apply did itself).
func (hs *hosts) applyOn(ctx context.Context, o Options, arm string, h round.Host, k scenario.Knobs, length time.Duration) (func() error, error) {
	rsp := h.Agent
	report, err := rsp.Apply(ctx, arm, k, h.Iface, h.AllowMgmt, length)
	for _, line := range report {
		fmt.Fprintf(o.Log, "  [%s] %s\n", rsp.Name, line)
	}
	// An agent that answers took back what it did; one that died could not.
	hint := fmt.Sprintf("to put host %s back, run `%s`", rsp.Name, hs.restore[rsp.Name])
	if err != nil && rsp.Gone() {
		return nil, fmt.Errorf("applying knobs on host %s: %w (%s)", rsp.Name, err, hint)
	} else if err != nil {
		return nil, fmt.Errorf("applying knobs on host %s: %w", rsp.Name, err)
	}
	return func() error {
		report, uerr := rsp.Undo(context.WithoutCancel(ctx))
		for _, line := range report {
			fmt.Fprintf(o.Log, "  [%s] %s\n", rsp.Name, line)
		}
		if uerr != nil {
			return fmt.Errorf("taking back the knobs: %w (%s)", uerr, hint)
		}
		return nil
	}, nil
}

// runArmRound applies the arm on the responder hosts, runs one round, and
// takes the arm back.
func runArmRound(ctx context.Context, o Options, s *scenario.Scenario, hs *hosts,
	dir string, arm scenario.Arm, armIndex, r int, runID string, to netip.Addr, progress func(int, int)) (err error) {
	k := arm.Effective
	if s.Fanout() {
		k = s.KnobsFor(arm, s.Responders[0])
	}
	length := s.Traffic.RoundDuration() + 10*time.Second
	fmt.Fprintf(o.Log, "rig run: round %d arm %s\n", r, arm.Name)
	// The arm's knobs go to the responder hosts; taken back even when the
	// round was interrupted, the last applied first.
	var undos []func() error
	defer func() {
		for i := len(undos) - 1; i >= 0; i-- {
			err = errors.Join(err, undos[i]())
		}
	}()
	k, _, err = pinQuietest(ctx, o, hs.responder.Agent, k, rundir.RoundDir(dir, arm.Name, r))
	if err != nil {
		return err
	}
	undo, err := hs.applyOn(ctx, o, arm.Name, hs.responder, k, length)
	if err != nil {
		return err
	}
	undos = append(undos, undo)
	var others []round.Other
	for i, h := range hs.others {
		ok := s.KnobsFor(arm, s.Responders[i+1])
		undo, err := hs.applyOn(ctx, o, arm.Name, h, ok, length)
		if err != nil {
			return err
		}
		undos = append(undos, undo)
		other := round.Other{Host: h, CPU: -1}
		if c := ok.Responder.CPU; c != nil {
			other.CPU = *c
		}
		if p := ok.Responder.Poll; p != nil {
			other.Poll = *p
		}
		if sc := ok.Responder.Sched; sc != nil {
			other.Sched = *sc
		}
		other.Engine, other.Stack = engineStack(ok.Responder)
		others = append(others, other)
	}
	id, _ := wire.ParseRunID(runID)
	ts, err := tstamp.ParseMode(string(s.Timestamps))
	if err != nil {
		return err
	}
	spec := round.Spec{
		Dir:    rundir.RoundDir(dir, arm.Name, r),
		Sender: hs.sender, Responder: hs.responder, Others: others, Capture: hs.capture,
		Group: s.Traffic.Group, Reply: s.Traffic.Reply, Count: s.Traffic.Count,
		Interval: s.Traffic.Interval, Size: s.Traffic.Size, Warmup: s.Traffic.Warmup,
		Timestamps: ts, RunID: id, Arm: arm.Name, ArmIndex: armIndex, Round: r,
		ReplyTimeout: s.Traffic.ReplyTimeout,
		ResponderCPU: -1, SenderCPU: -1, Spin: 50 * time.Microsecond,
		Progress: progress, Telemetry: true,
	}
	if arm.Request == scenario.RequestUnicast {
		spec.Group, spec.To = netip.AddrPort{}, s.RequestTo(arm, to)
	}
	if c := k.Responder.CPU; c != nil {
		spec.ResponderCPU = *c
	}
	if p := k.Responder.Poll; p != nil {
		spec.Poll = *p
	}
	if sc := k.Responder.Sched; sc != nil {
		spec.Sched = *sc
	}
	spec.Engine, spec.Stack = engineStack(k.Responder)
	_, err = round.Run(ctx, spec)
	return err
}

// engineStack is the responder's engine and stack as an arm's knobs set
// them (zero: the Go engine on the kernel's stack).
func engineStack(r scenario.Responder) (probe.Engine, probe.Stack) {
	var e probe.Engine
	var st probe.Stack
	if r.Engine != nil {
		e = *r.Engine
	}
	if r.Stack != nil {
		st = *r.Stack
	}
	return e, st
}

func replyString(t scenario.Traffic) string {
	if t.UnicastReply() {
		return "unicast"
	}
	return t.Reply.String()
}

// setupHosts reaches the hosts: it builds the emulated topology when the
// scenario asks for it, and starts one agent per host.
func setupHosts(ctx context.Context, s *scenario.Scenario, o Options) (*hosts, error) {
	hs := &hosts{agents: map[string]*agent.Client{}, restore: map[string]string{}}
	dial := func(name string, prefix []string, rig string) (*agent.Client, error) {
		c, err := agent.DialRun(ctx, name, prefix, rig, o.RunID, []string{journal.EnvDir + "=" + o.StateDir}, o.Log)
		if err != nil {
			return nil, err
		}
		hs.agents[name] = c
		if hs.lab != "" {
			prefix = nil // the run's lab goes with the run: its hosts are put back from here
		}
		hs.restore[name] = restoreCommand(prefix, rig)
		fmt.Fprintf(o.Log, "rig run: host %s: agent pid %d on %s (%s)\n", name, c.Hello.PID, c.Hello.Host, c.Hello.Rig)
		return c, nil
	}
	if s.Emulate == "netns" {
		name := netlab.UniqueName("run")
		hs.lab = name
		// The lab lives for this process: if it is killed, `rig restore` and
		// the next `rig run` find the lab stale and remove it.
		self := owner.Self()
		topo, err := netlab.Up(ctx, name, netlab.Options{Owner: &self, Responders: len(s.Responders)})
		if err != nil {
			return hs, fmt.Errorf("building the emulated topology: %w", err)
		}
		for _, r := range []struct {
			role netlab.Role
			host string
			dst  *round.Host
		}{{netlab.Sender, scenario.EmulatedSender, &hs.sender}, {netlab.Responder, scenario.EmulatedResponder, &hs.responder}} {
			h, _ := topo.Host(r.role)
			c, err := dial(r.host, topo.Exec(r.role), o.Rig)
			if err != nil {
				return hs, err
			}
			*r.dst = round.Host{Agent: c, Iface: h.Interface}
		}
		for i, h := range topo.More {
			c, err := dial(scenario.EmulatedResponderN(i+1), topo.Exec(h.Role), o.Rig)
			if err != nil {
				return hs, err
			}
			hs.others = append(hs.others, round.Host{Agent: c, Iface: h.Interface})
		}
		c, err := dial(scenario.EmulatedCapture, topo.Exec(netlab.Capture), o.Rig)
		if err != nil {
			return hs, err
		}
		hs.capture = &round.Host{Agent: c, Iface: topo.Capture.Interface}
		return hs, nil
	}
	for _, h := range s.Hosts {
		if h.Iface == "" {
			return hs, fmt.Errorf("host %s: iface is required for its roles (the NIC that %s uses)", h.Name, roleList(h))
		}
	}
	for _, h := range s.Hosts {
		c, err := dial(h.Name, h.Command, agentRig(o, h))
		if err != nil {
			return hs, err
		}
		rh := round.Host{Agent: c, Iface: h.Iface, AllowMgmt: h.AllowMgmt, TakeOverPTP: h.TakeOverPTP, VXLAN: h.Mirror == scenario.MirrorVXLAN}
		if h.Has(scenario.RoleSender) {
			hs.sender = rh
		}
		if h.Has(scenario.RoleResponder) {
			// Hosts come sorted by name: responder ids follow that order
			// (scenario.Scenario.Responders).
			if hs.responder.Agent == nil {
				hs.responder = rh
			} else {
				hs.others = append(hs.others, rh)
			}
		}
		if h.Has(scenario.RoleCapture) {
			c := rh
			hs.capture = &c
		}
	}
	return hs, nil
}

// prepareTimestamping asks every host's agent to prepare its NIC's
// timestamping for the run (nicctl.PrepareTimestamping: read, decide, write
// only what is missing, journaled on that host and taken back when its
// agent ends). An interface that carries several roles gets what they all
// need. A refusal (timestamps: hardware on a NIC that cannot or may not)
// ends the run before the first round.
func prepareTimestamping(ctx context.Context, o Options, s *scenario.Scenario, hs *hosts) ([]rundir.NICTimestamping, error) {
	type key struct {
		c     *agent.Client
		iface string
	}
	var order []key
	need := map[key]tstamp.Need{}
	add := func(h *round.Host, n tstamp.Need) {
		if h == nil || h.Agent == nil || h.Iface == "" {
			return
		}
		k := key{h.Agent, h.Iface}
		if _, ok := need[k]; !ok {
			order = append(order, k)
		}
		m := need[k]
		need[k] = tstamp.Need{RX: m.RX || n.RX, TX: m.TX || n.TX}
	}
	add(&hs.sender, tstamp.NeedProbe)
	add(&hs.responder, tstamp.NeedProbe)
	for i := range hs.others {
		add(&hs.others[i], tstamp.NeedProbe)
	}
	add(hs.capture, tstamp.NeedCapture)
	var out []rundir.NICTimestamping
	for _, k := range order {
		a := agent.TimestampsArgs{Iface: k.iface, Mode: string(s.Timestamps), Need: need[k]}
		for _, h := range s.Hosts {
			if h.Name == k.c.Name {
				a.TakeOver, a.AllowMgmt = h.TakeOverPTP, h.AllowMgmt
			}
		}
		r, err := k.c.Timestamps(ctx, a)
		rec := rundir.NICTimestamping{Host: k.c.Name, Iface: k.iface, Result: r}
		fmt.Fprintf(o.Log, "  [%s] %s\n", k.c.Name, r)
		if err != nil {
			rec.Error = err.Error()
			out = append(out, rec)
			return out, fmt.Errorf("host %s: %w", k.c.Name, err)
		}
		out = append(out, rec)
	}
	return out, nil
}

// agentRig is the rig binary that runs host h's agent: this one on this
// machine and its namespaces, RemoteRig on hosts reached by ssh or kubectl.
func agentRig(o Options, h scenario.Host) string {
	if h.Local() || IsNetns(h) {
		return o.Rig
	}
	return cmp.Or(o.RemoteRig, "rig")
}

// IsNetns reports a host reached with `ip netns exec NS`: a network
// namespace of this machine (same files, same rig binary).
func IsNetns(h scenario.Host) bool {
	return len(h.Command) == 4 && h.Command[0] == "ip" && h.Command[1] == "netns" && h.Command[2] == "exec"
}

// validate checks the scenario against the facts each agent reports,
// before anything on any host changes. File problems come back as
// scenario.ErrorList (bad input).
func validate(ctx context.Context, s *scenario.Scenario, hs *hosts) (map[string]*scenario.Facts, error) {
	facts := map[string]*scenario.Facts{}
	for name, c := range hs.agents {
		f, err := c.Facts(ctx)
		if err != nil {
			return nil, err
		}
		facts[name] = f
	}
	return facts, scenario.Validate(s, facts)
}

func manifest(s *scenario.Scenario, p scenario.Plan, o Options, start time.Time) *rundir.Manifest {
	m := &rundir.Manifest{
		Format: "rig-run", FormatVersion: rundir.FormatVersion,
		RigVersion: version.Version, RigCommit: version.Commit(),
		WireVersion: wire.Version, SampleVersion: samples.FormatVersion,
		CommandLine: o.CommandLine, Scenario: s.Name, ScenarioFile: s.File, ScenarioGiven: string(s.Source),
		Effective: effective(s, p),
		RunID:     o.RunID, StartedAt: start.Format(time.RFC3339),
		Baseline: s.Baseline, Warmup: s.Traffic.Warmup, Rounds: s.Rounds, Count: s.Traffic.Count,
		IntervalNS: int64(s.Traffic.Interval), Timestamps: string(s.Timestamps),
		Hosts: map[string]rundir.Host{},
	}
	for _, a := range s.Arms {
		ma := rundir.Arm{Name: a.Name, Index: armIndexOf(s, a.Name), Skipped: a.Skip, Knobs: knobMap(a.Effective)}
		if s.Fanout() {
			ma.ResponderKnobs = map[string]map[string]any{}
			for _, h := range s.Responders {
				ma.ResponderKnobs[h] = knobMap(s.KnobsFor(a, h))
			}
		}
		m.Arms = append(m.Arms, ma)
	}
	if s.Fanout() {
		m.Responders = s.Responders
	}
	for _, order := range p.Rounds {
		var idx []int
		for _, ai := range order {
			idx = append(idx, armIndexOf(s, p.Arms[ai].Name))
		}
		m.Order = append(m.Order, idx)
	}
	for _, h := range s.Hosts {
		var roles []string
		for _, r := range h.Roles {
			roles = append(roles, string(r))
		}
		m.Hosts[h.Name] = rundir.Host{Roles: roles, Via: h.Via}
	}
	return m
}

// effectiveScenario is the scenario after defaults and host facts: what
// the run actually did.
type effectiveScenario struct {
	Name       string            `json:"name"`
	Emulate    string            `json:"emulate,omitempty"`
	Traffic    map[string]any    `json:"traffic"`
	Timestamps string            `json:"timestamps"`
	Rounds     int               `json:"rounds"`
	Order      string            `json:"order"`
	Baseline   string            `json:"baseline"`
	Arms       []effectiveArm    `json:"arms"`
	Skipped    map[string]string `json:"skipped,omitempty"`
}

type effectiveArm struct {
	Name  string         `json:"name"`
	Knobs map[string]any `json:"knobs"`
}

func effective(s *scenario.Scenario, p scenario.Plan) effectiveScenario {
	e := effectiveScenario{Name: s.Name, Emulate: s.Emulate, Timestamps: string(s.Timestamps), Rounds: s.Rounds,
		Order: s.Order.String(), Baseline: s.Baseline, Skipped: map[string]string{},
		Traffic: map[string]any{
			"group": s.Traffic.Group.String(), "reply": replyString(s.Traffic), "interval": s.Traffic.Interval.String(),
			"count": s.Traffic.Count, "size": s.Traffic.Size, "warmup": s.Traffic.Warmup,
			"reply_timeout": s.Traffic.ReplyTimeout.String(),
		}}
	for _, a := range p.Arms {
		e.Arms = append(e.Arms, effectiveArm{Name: a.Name, Knobs: knobMap(a.Effective)})
	}
	for _, a := range p.Skipped {
		e.Skipped[a.Name] = a.Skip
	}
	return e
}

// knobMap renders knobs as plain JSON values for the manifest.
func knobMap(k scenario.Knobs) map[string]any {
	b, err := json.Marshal(k)
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	for key, v := range m {
		if v == nil {
			delete(m, key)
		}
	}
	return m
}

// writeEnv records each host's environment into env/<host>.json. A
// snapshot that cannot be taken is logged and recorded in the file as
// {"error": ...} (the report says so), not fatal; a file that cannot be
// written (a full disk) is an error, as for the manifest.
func writeEnv(ctx context.Context, dir string, hs *hosts, log io.Writer) error {
	for name, c := range hs.agents {
		var ifaces []string
		switch {
		case c == hs.responder.Agent:
			ifaces = []string{hs.responder.Iface}
		case slices.ContainsFunc(hs.others, func(h round.Host) bool { return h.Agent == c }):
			for _, h := range hs.others {
				if h.Agent == c {
					ifaces = []string{h.Iface}
				}
			}
		case c == hs.sender.Agent:
			ifaces = []string{hs.sender.Iface}
		case hs.capture != nil && c == hs.capture.Agent:
			ifaces = []string{hs.capture.Iface}
		}
		raw, err := c.Env(ctx, ifaces)
		if err != nil {
			fmt.Fprintf(log, "rig run: host %s: environment snapshot: %v\n", name, err)
			raw, _ = json.Marshal(map[string]string{"error": err.Error()}) // a map of strings always marshals
		}
		if err := rundir.WriteFileAtomic(filepath.Join(dir, rundir.EnvDir, name+".json"), append(raw, '\n')); err != nil {
			return fmt.Errorf("environment of host %s: %w", name, err)
		}
	}
	return nil
}

func roleList(h scenario.Host) string {
	var r []string
	for _, x := range h.Roles {
		r = append(r, string(x))
	}
	return strings.Join(r, " and ")
}

// CheckFailedError is returned when require-check is set and `rig check`
// on a responder host (Host) does not pass (check.Report.Passed): a FAIL,
// or a check that can FAIL could not tell.
type CheckFailedError struct {
	Host   string
	Report *check.Report
}

func (e *CheckFailedError) Error() string {
	var b strings.Builder
	e.Report.WriteText(&b)
	what := "failed"
	if e.Report.Worst < check.Fail {
		what = "could not tell what a check that can FAIL needs"
	}
	return "require-check: rig check " + what + " on responder host " + e.Host + "; nothing was changed:\n" + b.String()
}

// preflight runs `rig check` on every responder host for every responder
// CPU the arms give it (with several responders, each host's own knobs:
// defaults, then responders.<host>, then the arm's), and stops the run on
// a FAIL or on a check that can FAIL and could not tell (warnings are
// logged). An arm with responder.cpu: quietest (one
// responder only) is checked on the CPU a ranking picks now (each round
// ranks again); an arm that leaves the CPU unset, on the CPU rig check
// picks among the CPUs the host lets rig use.
func preflight(ctx context.Context, o Options, s *scenario.Scenario, p scenario.Plan, hs *hosts) error {
	multicast := slices.ContainsFunc(p.Arms, func(a scenario.Arm) bool { return a.Request != scenario.RequestUnicast })
	for i, h := range append([]round.Host{hs.responder}, hs.others...) {
		seen := map[int]bool{}
		ranked := map[string]int{} // quietest candidates → the CPU picked
		for _, a := range p.Arms {
			k := a.Effective
			if s.Fanout() {
				k = s.KnobsFor(a, s.Responders[i])
			}
			cpu := -1
			if c := k.Responder.CPU; c != nil {
				cpu = *c
			}
			if q := k.Responder.Quietest; q != nil {
				c, ok := ranked[q.String()]
				if !ok {
					_, rk, err := pinQuietest(ctx, o, h.Agent, k, "")
					if err != nil {
						return fmt.Errorf("require-check: %w", err)
					}
					c = rk.Chosen
					ranked[q.String()] = c
				}
				cpu = c
			}
			if seen[cpu] {
				continue
			}
			seen[cpu] = true
			if s.Fanout() {
				fmt.Fprintf(o.Log, "rig run: rig check on responder host %s\n", h.Agent.Name)
			}
			rep, err := h.Agent.Check(ctx, agent.CheckArgs{CPU: cpu, Iface: h.Iface, Multicast: multicast})
			if err != nil {
				return fmt.Errorf("require-check on host %s: %w", h.Agent.Name, err)
			}
			rep.WriteText(o.Log)
			if !rep.Passed() {
				return &CheckFailedError{Host: h.Agent.Name, Report: rep}
			}
		}
	}
	return nil
}

// syncWriter serialises writes to a log shared by goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// granted reads, from the first round on disk, what timestamping each role
// was granted and the clock of every stamp column, for the manifest.
func granted(dir string, p scenario.Plan) map[string]any {
	for r := range p.Rounds {
		for _, a := range p.Arms {
			rd := rundir.RoundDir(dir, a.Name, r)
			out := map[string]any{}
			for _, role := range []samples.Role{samples.RoleSender, samples.RoleResponder, samples.RoleCapture} {
				f, _ := samples.ReadFile(filepath.Join(rd, samples.FileName(role)))
				if f == nil {
					continue
				}
				out[string(role)] = map[string]any{"timestamps": f.Header.Settings["timestamps"], "clocks": f.Header.Clocks}
			}
			if len(out) > 0 {
				return out
			}
		}
	}
	return nil
}
