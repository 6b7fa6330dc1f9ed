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
	"github.com/rig-project/rig/internal/facts"
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

// host is where one role runs: its agent, its NIC, and what the scenario
// host allows there.
type host struct {
	Agent *agent.Client
	// Node applies the arm's node knobs (scenario.Knobs.SplitNode) on a
	// responder host that cannot (a pod): the host option node's agent.
	Node  *agent.Client
	Iface string
	// AllowMgmt lets the arm's knobs change Iface although it carries the
	// default route (the scenario host's allow-mgmt); TakeOverPTP lets the
	// probes take hardware TX stamps next to a ptp4l or chronyd that owns
	// the NIC's config (the host's take-over-ptp, as the run's preparation).
	AllowMgmt, TakeOverPTP bool
	// VXLAN: a capture port that receives VXLAN-encapsulated mirror
	// copies (rig capture --vxlan).
	VXLAN bool
	// CPU pins the sender's or the capture's thread (host option cpu).
	CPU *int
}

// hosts are the agents of a run, one per host (per namespace when
// emulated), and which one plays each role.
type hosts struct {
	agents map[string]*agent.Client // by host name
	sender host
	// responders are the responder hosts by id, in the order of
	// scenario.Scenario.Responders.
	responders []host
	capture    *host
	lab        string           // emulated lab name to remove at the end
	topo       *netlab.Topology // the emulated lab, nil on real hosts
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

// run is one run in progress: its options and scenario, its hosts, and,
// once the scenario passed the hosts' checks, its plan, directory and
// manifest.
type run struct {
	o     Options
	s     *scenario.Scenario
	hs    *hosts
	to    netip.Addr // where the unicast arms' requests go (unicastTo)
	plan  scenario.Plan
	start time.Time
	dir   string
	man   *rundir.Manifest
	// bootID is each host's kernel boot id (its facts): responders with
	// the same one share a machine's CPUs.
	bootID map[string]string
}

// Run executes the scenario. The run directory is returned even when the
// run fails or is interrupted, so finished rounds are never lost.
func Run(ctx context.Context, o Options) (*Result, error) {
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
	r := &run{o: o, s: o.Scenario, hs: &hosts{agents: map[string]*agent.Client{}, restore: map[string]string{}}}
	defer func() {
		if cerr := r.hs.close(); cerr != nil {
			fmt.Fprintf(o.Log, "rig run: closing hosts: %v\n", cerr)
		}
	}()
	if err := r.setupHosts(ctx); err != nil {
		return nil, err
	}
	err = r.prepare(ctx)
	if r.dir == "" {
		return nil, err
	}
	res := &Result{Dir: r.dir}
	if err != nil {
		return res, err
	}
	res.Report, err = r.rounds(ctx)
	return res, err
}

// prepare is everything before the first round: it checks the scenario
// against the hosts, creates the run directory with its manifest and the
// hosts' environment, and prepares the NICs' timestamping. The run
// directory exists (r.dir) once the checks passed.
func (r *run) prepare(ctx context.Context) error {
	byHost, err := r.validate(ctx)
	if err != nil {
		return err
	}
	for _, a := range r.s.Arms { // what the dry run shows: warnings, not refusals
		for _, n := range a.Notes {
			fmt.Fprintf(r.o.Log, "rig run: arm %s: note: %s\n", a.Name, n)
		}
	}
	r.bootID = map[string]string{}
	for name, f := range byHost {
		r.bootID[name] = f.BootID
	}
	for _, w := range r.s.Warnings {
		fmt.Fprintf(r.o.Log, "rig run: warning: %s\n", w.Error())
	}
	if r.to, err = r.unicastTo(byHost); err != nil {
		return err
	}
	r.plan = r.s.Plan()
	if len(r.plan.Arms) == 0 {
		return errors.New("no arm can run on these hosts: every arm was skipped (see rig run --dry-run)")
	}
	if r.s.RequireCheck {
		if err := r.preflight(ctx); err != nil {
			return err
		}
	}
	r.start = time.Now().UTC()
	if r.dir, err = rundir.Create(r.o.ResultsDir, r.s.Name, r.start); err != nil {
		return err
	}
	r.man = r.manifest()
	if err := r.writeManifest(); err != nil {
		return err
	}
	if err := r.writeEnv(ctx); err != nil {
		return err // before any change: nothing to undo
	}
	// The NICs' timestamping, once for the run, after the environment
	// snapshot (which shows the hosts as they were) and before any arm.
	if r.man.NICTimestamping, err = r.prepareTimestamping(ctx); err != nil {
		r.man.Interrupted = err.Error()
		return errors.Join(err, r.writeManifest())
	}
	return nil
}

// writeManifest writes the manifest as it stands into the run directory.
func (r *run) writeManifest() error {
	return rundir.WriteJSON(filepath.Join(r.dir, rundir.ManifestFile), r.man)
}

// rounds runs every arm of every round in the plan's order, then records
// in the manifest how the run ended and analyses the run directory.
func (r *run) rounds(ctx context.Context) (*analysis.Report, error) {
	s, plan := r.s, r.plan
	steps := len(plan.Rounds) * len(plan.Arms)
	step := 0
	runErr := func() error {
		for n, order := range plan.Rounds {
			for _, ai := range order {
				arm := plan.Arms[ai]
				if err := ctx.Err(); err != nil {
					return err
				}
				err := r.armRound(ctx, arm, n, func(sent, recv int) {
					if r.o.Progress != nil {
						el := time.Since(r.start)
						done := float64(step) + float64(sent)/float64(max(1, s.Traffic.Count))
						eta := time.Duration(0)
						if done > 0 {
							eta = time.Duration(float64(el) * (float64(steps) - done) / done)
						}
						r.o.Progress(Progress{Arm: arm.Name, Round: n, Rounds: len(plan.Rounds), Step: step, Steps: steps,
							Sent: sent, Received: recv, Count: s.Traffic.Count, Elapsed: el, ETA: eta})
					}
				})
				if err != nil {
					return fmt.Errorf("arm %s round %d: %w", arm.Name, n, err)
				}
				step++
			}
		}
		return nil
	}()
	r.man.EndedAt = time.Now().UTC().Format(time.RFC3339)
	r.man.Granted = granted(r.dir, plan)
	if runErr != nil {
		r.man.Interrupted = runErr.Error()
	}
	if err := r.writeManifest(); err != nil {
		runErr = errors.Join(runErr, err)
	}
	rep, aerr := analysis.Regenerate(r.dir, analysis.Options{})
	if aerr != nil && runErr == nil {
		runErr = fmt.Errorf("analysis: %w", aerr)
	}
	return rep, runErr
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

// applyOn applies knobs k of arm on responder host h — the node knobs
// first, on its node agent when it has one — and returns the functions
// that take them back, in the order applied (none for an apply that
// failed: the agent takes back what a failed apply did itself). What the
// agents report goes to the log and to record.
func (r *run) applyOn(ctx context.Context, arm string, h host, k scenario.Knobs, length time.Duration, record *[]string) ([]func() error, error) {
	if h.Node == nil || !k.HasNode() {
		undo, err := r.applyAgent(ctx, arm, h.Agent, h, k, length, record)
		if err != nil {
			return nil, err
		}
		return []func() error{undo}, nil
	}
	node, rest := k.SplitNode()
	undoNode, err := r.applyAgent(ctx, arm, h.Node, h, node, length, record)
	if err != nil {
		return nil, err
	}
	undo, err := r.applyAgent(ctx, arm, h.Agent, h, rest, length, record)
	if err != nil {
		return []func() error{undoNode}, err
	}
	return []func() error{undoNode, undo}, nil
}

// applyAgent applies knobs k of arm through agent rsp, for responder host
// h's interface, and returns the function that takes them back (nil when
// the apply failed).
func (r *run) applyAgent(ctx context.Context, arm string, rsp *agent.Client, h host, k scenario.Knobs, length time.Duration, record *[]string) (func() error, error) {
	log := func(report []string) {
		for _, line := range report {
			fmt.Fprintf(r.o.Log, "  [%s] %s\n", rsp.Name, line)
			*record = append(*record, fmt.Sprintf("[%s] %s", rsp.Name, line))
		}
	}
	report, err := rsp.Apply(ctx, arm, k, h.Iface, h.AllowMgmt, length)
	log(report)
	// An agent that answers took back what it did; one that died could not.
	hint := fmt.Sprintf("to put host %s back, run `%s`", rsp.Name, r.hs.restore[rsp.Name])
	if err != nil && rsp.Gone() {
		return nil, fmt.Errorf("applying knobs on host %s: %w (%s)", rsp.Name, err, hint)
	} else if err != nil {
		return nil, fmt.Errorf("applying knobs on host %s: %w", rsp.Name, err)
	}
	return func() error {
		report, uerr := rsp.Undo(context.WithoutCancel(ctx))
		log(report)
		if uerr != nil {
			return fmt.Errorf("taking back the knobs: %w (%s)", uerr, hint)
		}
		return nil
	}, nil
}

// knobs are the knobs arm a applies on responder i: the arm's, or with
// several responders that host's own.
func (r *run) knobs(a scenario.Arm, i int) scenario.Knobs {
	if r.s.Fanout() {
		return r.s.KnobsFor(a, r.s.Responders[i])
	}
	return a.Effective
}

// armRound applies the arm on the responder hosts, runs round n, and
// takes the arm back.
func (r *run) armRound(ctx context.Context, arm scenario.Arm, n int, progress func(int, int)) (err error) {
	length := r.s.Traffic.RoundDuration() + 10*time.Second
	if n := r.knobs(arm, 0).Noise; n != nil { // a window per responder, one after another
		length += n.For * time.Duration(len(r.hs.responders))
	}
	fmt.Fprintf(r.o.Log, "rig run: round %d arm %s\n", n, arm.Name)
	spec, err := r.spec(arm, n)
	if err != nil {
		return err
	}
	spec.Progress = progress
	// The arm's knobs go to the responder hosts; taken back even when the
	// round was interrupted, the last applied first. What the hosts said
	// they changed and put back is the round's host-changes.txt.
	var undos []func() error
	var record []string
	defer func() {
		for i := len(undos) - 1; i >= 0; i-- {
			err = errors.Join(err, undos[i]())
		}
		if len(record) > 0 {
			err = errors.Join(err, rundir.WriteFileAtomic(filepath.Join(spec.Dir, rundir.HostChanges), []byte(strings.Join(record, "\n")+"\n")))
		}
	}()
	ks, err := r.pinQuietest(ctx, arm, spec.Dir)
	if err != nil {
		return err
	}
	var measured []int
	for _, k := range ks {
		if c := k.Responder.CPU; c != nil {
			measured = append(measured, *c)
		}
	}
	for i, h := range r.hs.responders {
		k := ks[i]
		if q := k.IRQ; q != nil && q.Away && r.s.Fanout() {
			// The responders share the host's IRQs: each one's CPU is measured.
			k.IRQ = &scenario.IRQ{CPUs: q.CPUs, Away: true, AwayFrom: measured}
		}
		undo, err := r.applyOn(ctx, arm.Name, h, k, length, &record)
		undos = append(undos, undo...)
		if err != nil {
			return err
		}
		xdp, err := r.passXDP(arm.Name, i, k)
		if err != nil {
			return err
		}
		undos = append(undos, xdp)
		if k.Noise != nil {
			spec.Noise = &probe.Noise{For: k.Noise.For}
		}
		spec.Respond = append(spec.Respond, respond(h, k))
		spec.RespondOn = append(spec.RespondOn, h.Agent)
	}
	_, err = round.Run(ctx, spec)
	return err
}

// passXDP readies emulated responder i's switch port for an arm whose
// reflector runs in driver mode (netlab's PassXDP), for the arm's round
// only: the other arms' replies keep the veth path without XDP. This
// process holds the program: killed, it takes the program with it.
func (r *run) passXDP(arm string, i int, k scenario.Knobs) (func() error, error) {
	if r.hs.topo == nil || k.Responder.Engine == nil || *k.Responder.Engine != probe.EngineXDP {
		return func() error { return nil }, nil
	}
	h := r.hs.topo.ResponderHosts()[i]
	c, err := r.hs.topo.PassXDP(h.Role)
	if err != nil {
		return nil, fmt.Errorf("readying the lab for engine xdp: %w", err)
	}
	fmt.Fprintf(r.o.Log, "rig run: arm %s: XDP pass program on %s in %s for the reflector on %s (veth delivers XDP_TX frames only to a peer running XDP)\n",
		arm, h.Port, r.hs.topo.Switch.Netns, h.Interface)
	return c.Close, nil
}

// spec is arm's round n without its responders: the sender's command line
// (the request stream of every probe), the capture's, and their agents.
func (r *run) spec(arm scenario.Arm, n int) (round.Spec, error) {
	s, t := r.s, r.s.Traffic
	ts, err := tstamp.ParseMode(string(s.Timestamps))
	if err != nil {
		return round.Spec{}, err
	}
	c := probe.DefaultSend()
	c.Iface, c.TakeOverPTP = r.hs.sender.Iface, r.hs.sender.TakeOverPTP
	if v := r.hs.sender.CPU; v != nil {
		c.CPU = *v
	}
	c.Timestamps, c.Arm, c.ArmIndex, c.Round = ts, arm.Name, armIndexOf(s, arm.Name), n
	c.RunID, _ = wire.ParseRunID(r.o.RunID)
	c.Group, c.ReplyGroup, c.Count, c.Interval, c.Warmup = t.Group, t.Reply, t.Count, t.Interval, t.Warmup
	c.Size, c.ReplyTimeout = cmp.Or(t.Size, c.Size), cmp.Or(t.ReplyTimeout, c.ReplyTimeout)
	if arm.Request == scenario.RequestUnicast {
		c.Group, c.Unicast = netip.AddrPort{}, s.RequestTo(arm, r.to)
	}
	if v := arm.Effective.Sender.Engine; v != nil {
		c.Engine = *v
	}
	if v := arm.Effective.Sender.Poll; v != nil {
		c.Poll = *v
	}
	if v := arm.Effective.Sender.Stack; v != nil {
		c.Stack = *v
	}
	spec := round.Spec{Dir: rundir.RoundDir(r.dir, arm.Name, n), Send: c, SendOn: r.hs.sender.Agent, Telemetry: true}
	if h := r.hs.capture; h != nil {
		cc := probe.DefaultCapture()
		cc.Iface, cc.TakeOverPTP, cc.VXLAN = h.Iface, h.TakeOverPTP, h.VXLAN
		if v := h.CPU; v != nil {
			cc.CPU = *v
		}
		spec.Capture, spec.CaptureOn, spec.Pcap = &cc, h.Agent, s.Pcap
	}
	return spec, nil
}

// respond is responder host h's command line under knobs k.
func respond(h host, k scenario.Knobs) probe.Respond {
	c := probe.DefaultRespond()
	c.Iface, c.TakeOverPTP = h.Iface, h.TakeOverPTP
	if v := k.Responder.CPU; v != nil {
		c.CPU = *v
	}
	if v := k.Responder.Poll; v != nil {
		c.Poll = *v
	}
	if v := k.Responder.Sched; v != nil {
		c.Sched = *v
	}
	if v := k.Responder.Engine; v != nil {
		c.Engine = *v
	}
	if v := k.Responder.Stack; v != nil && v.Name != "" {
		c.Stack = *v
	}
	return c
}

func replyString(t scenario.Traffic) string {
	if t.UnicastReply() {
		return "unicast"
	}
	return t.Reply.String()
}

// setupHosts reaches the hosts: it builds the emulated topology when the
// scenario asks for it, and starts one agent per host.
func (r *run) setupHosts(ctx context.Context) error {
	s, o, hs := r.s, r.o, r.hs
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
			return fmt.Errorf("building the emulated topology: %w", err)
		}
		hs.topo = topo
		dialRole := func(role netlab.Role, name, iface string) (host, error) {
			c, err := dial(name, topo.Exec(role), o.Rig)
			return host{Agent: c, Iface: iface}, err
		}
		if hs.sender, err = dialRole(netlab.Sender, scenario.EmulatedSender, topo.Sender.Interface); err != nil {
			return err
		}
		for i, h := range topo.ResponderHosts() {
			rh, err := dialRole(h.Role, scenario.EmulatedResponderN(i), h.Interface)
			if err != nil {
				return err
			}
			hs.responders = append(hs.responders, rh)
		}
		c, err := dialRole(netlab.Capture, scenario.EmulatedCapture, topo.Capture.Interface)
		hs.capture = &c
		return err
	}
	for _, h := range s.Hosts {
		if h.Iface == "" {
			return fmt.Errorf("host %s: iface is required for its roles (the NIC that %s uses)", h.Name, roleList(h))
		}
	}
	for _, h := range s.Hosts {
		c, err := dial(h.Name, h.Command, r.agentRig(h))
		if err != nil {
			return err
		}
		rh := host{Agent: c, Iface: h.Iface, AllowMgmt: h.AllowMgmt, TakeOverPTP: h.TakeOverPTP, VXLAN: h.Mirror == scenario.MirrorVXLAN, CPU: h.CPU}
		if n := h.Node; n != nil {
			if rh.Node, err = dial(n.Name, n.Command, r.agentRig(*n)); err != nil {
				return err
			}
		}
		if h.Has(scenario.RoleSender) {
			hs.sender = rh
		}
		if h.Has(scenario.RoleResponder) {
			// Hosts come sorted by name: responder ids follow that order
			// (scenario.Scenario.Responders).
			hs.responders = append(hs.responders, rh)
		}
		if h.Has(scenario.RoleCapture) {
			c := rh
			hs.capture = &c
		}
	}
	return nil
}

// prepareTimestamping asks every host's agent to prepare its NIC's
// timestamping for the run (nicctl.PrepareTimestamping: read, decide, write
// only what is missing, journaled on that host and taken back when its
// agent ends). An interface that carries several roles gets what they all
// need. A refusal (timestamps: hardware on a NIC that cannot or may not)
// ends the run before the first round.
func (r *run) prepareTimestamping(ctx context.Context) ([]rundir.NICTimestamping, error) {
	hs := r.hs
	type key struct {
		c     *agent.Client
		iface string
	}
	var order []key
	need := map[key]tstamp.Need{}
	add := func(h *host, n tstamp.Need) {
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
	for i := range hs.responders {
		add(&hs.responders[i], tstamp.NeedProbe)
	}
	add(hs.capture, tstamp.NeedCapture)
	var out []rundir.NICTimestamping
	for _, k := range order {
		a := agent.TimestampsArgs{Iface: k.iface, Mode: string(r.s.Timestamps), Need: need[k]}
		for _, h := range r.s.Hosts {
			if h.Name == k.c.Name {
				a.TakeOver, a.AllowMgmt = h.TakeOverPTP, h.AllowMgmt
			}
		}
		res, err := k.c.Timestamps(ctx, a)
		rec := rundir.NICTimestamping{Host: k.c.Name, Iface: k.iface, Result: res}
		fmt.Fprintf(r.o.Log, "  [%s] %s\n", k.c.Name, res)
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
func (r *run) agentRig(h scenario.Host) string {
	if h.Local() || IsNetns(h) {
		return r.o.Rig
	}
	return cmp.Or(r.o.RemoteRig, "rig")
}

// IsNetns reports a host reached with `ip netns exec NS`: a network
// namespace of this machine (same files, same rig binary).
func IsNetns(h scenario.Host) bool {
	return len(h.Command) == 4 && h.Command[0] == "ip" && h.Command[1] == "netns" && h.Command[2] == "exec"
}

// validate checks the scenario against the facts each agent reports,
// before anything on any host changes. File problems come back as
// scenario.ErrorList (bad input).
func (r *run) validate(ctx context.Context) (map[string]*facts.Facts, error) {
	byHost := map[string]*facts.Facts{}
	for name, c := range r.hs.agents {
		f, err := c.Facts(ctx)
		if err != nil {
			return nil, err
		}
		byHost[name] = f
	}
	return byHost, scenario.Validate(r.s, byHost)
}

// manifest is the run's manifest as it starts.
func (r *run) manifest() *rundir.Manifest {
	s, p, o := r.s, r.plan, r.o
	m := &rundir.Manifest{
		Format: "rig-run", FormatVersion: rundir.FormatVersion,
		RigVersion: version.Version, RigCommit: version.Commit(),
		WireVersion: wire.Version, SampleVersion: samples.FormatVersion,
		CommandLine: o.CommandLine, Scenario: s.Name, ScenarioFile: s.File, ScenarioGiven: string(s.Source),
		Effective: effective(s, p),
		RunID:     o.RunID, StartedAt: r.start.Format(time.RFC3339),
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
		mh := rundir.Host{Roles: roles, Via: h.Via}
		if h.Node != nil {
			mh.Node = h.Node.Via
		}
		m.Hosts[h.Name] = mh
	}
	r.setRequests(m)
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
	Capture    map[string]bool   `json:"capture,omitempty"` // {"pcap": true}
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
	if s.Pcap {
		e.Capture = map[string]bool{"pcap": true}
	}
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
func (r *run) writeEnv(ctx context.Context) error {
	hs := r.hs
	for name, c := range hs.agents {
		// The NIC of the host's first role: responder, sender, capture.
		var ifaces []string
		roles := append(slices.Clone(hs.responders), hs.sender)
		if hs.capture != nil {
			roles = append(roles, *hs.capture)
		}
		if i := slices.IndexFunc(roles, func(h host) bool { return h.Agent == c }); i >= 0 {
			ifaces = []string{roles[i].Iface}
		}
		raw, err := c.Env(ctx, ifaces)
		if err != nil {
			fmt.Fprintf(r.o.Log, "rig run: host %s: environment snapshot: %v\n", name, err)
			raw, _ = json.Marshal(map[string]string{"error": err.Error()}) // a map of strings always marshals
		}
		if err := rundir.WriteFileAtomic(filepath.Join(r.dir, rundir.EnvDir, name+".json"), append(raw, '\n')); err != nil {
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
// logged). An arm with responder.cpu: quietest is checked on the CPU a
// ranking picks now (each round ranks again; pinQuietest); an arm that leaves the CPU unset, on the CPU rig check
// picks among the CPUs the host lets rig use.
func (r *run) preflight(ctx context.Context) error {
	multicast := slices.ContainsFunc(r.plan.Arms, func(a scenario.Arm) bool { return a.Request != scenario.RequestUnicast })
	seen := make([]map[int]bool, len(r.hs.responders))
	ranked := map[string][]scenario.Knobs{} // the arm's quietest choices → the CPUs picked
	for _, a := range r.plan.Arms {
		var cpus []string // each responder's choice: the ranking's key
		for i := range r.hs.responders {
			switch k := r.knobs(a, i).Responder; {
			case k.Quietest != nil:
				cpus = append(cpus, k.Quietest.String())
			case k.CPU != nil:
				cpus = append(cpus, fmt.Sprint(*k.CPU))
			default:
				cpus = append(cpus, "-")
			}
		}
		key := strings.Join(cpus, "; ")
		ks, ok := ranked[key]
		if !ok {
			var err error
			if ks, err = r.pinQuietest(ctx, a, ""); err != nil {
				return fmt.Errorf("require-check: %w", err)
			}
			ranked[key] = ks
		}
		for i, h := range r.hs.responders {
			cpu := -1
			if c := ks[i].Responder.CPU; c != nil {
				cpu = *c
			}
			if seen[i] == nil {
				seen[i] = map[int]bool{}
			}
			if seen[i][cpu] {
				continue
			}
			seen[i][cpu] = true
			if r.s.Fanout() {
				fmt.Fprintf(r.o.Log, "rig run: rig check on responder host %s\n", h.Agent.Name)
			}
			rep, err := h.Agent.Check(ctx, agent.CheckArgs{CPU: cpu, Iface: h.Iface, Multicast: multicast})
			if err != nil {
				return fmt.Errorf("require-check on host %s: %w", h.Agent.Name, err)
			}
			rep.WriteText(r.o.Log)
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
