// Package round runs one round: a responder (or several, fan-out), an
// optional capture and a sender, each as its own rig process on its own host, started through
// that host's agent, and brings their sample files back.
//
// Separate processes keep the measured loops free of each other's garbage
// collector and scheduler; the files they write are joined afterwards.
package round

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rig-project/rig/internal/agent"
	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/internal/wire"
)

// Host is where one role runs.
type Host struct {
	Agent *agent.Client
	Iface string
	// AllowMgmt lets the arm's knobs change Iface although it carries the
	// default route (the scenario host's allow-mgmt); TakeOverPTP lets the
	// probes take hardware TX stamps next to a ptp4l or chronyd that owns
	// the NIC's config (the host's take-over-ptp, as the run's preparation).
	AllowMgmt, TakeOverPTP bool
	// VXLAN: a capture port that receives VXLAN-encapsulated mirror
	// copies (rig capture --vxlan).
	VXLAN bool
}

// Spec is one round.
type Spec struct {
	Dir       string // round directory: the sample files go here
	Sender    Host
	Responder Host
	// Others are the responders 1..N-1 of a fan-out round: every one
	// answers every request (multicast), each as its own id. Responder
	// (with ResponderCPU, Poll and Sched) is responder 0.
	Others  []Other
	Capture *Host // nil: no capture

	Group      netip.AddrPort // multicast requests' group:port
	Reply      netip.AddrPort // the replies' group:port; zero: unicast replies
	Count      int
	Interval   time.Duration
	Size       int // 0: wire.DefaultSize
	Warmup     int
	Timestamps tstamp.Mode
	RunID      uint64 // 0: a new one
	Arm        string
	ArmIndex   int
	Round      int

	// To is where unicast requests go (the responder's address:port);
	// when set, Group is not used: the sender and the capture get --to,
	// the responder --listen.
	To netip.AddrPort

	ResponderCPU int // -1: not pinned
	Poll         probe.Poll
	Sched        cpusched.Sched
	Engine       probe.Engine   // rig respond --engine
	Stack        probe.Stack    // rig respond --stack (the zero Stack: the kernel's)
	SenderCPU    int            // -1: not pinned
	SenderPoll   probe.PollMode // rig send --poll
	Spin         time.Duration
	ReplyTimeout time.Duration // 0: the sender's default
	ReadyTimeout time.Duration // default 10 s
	// Lead: once the responder is ready, it runs alone this long before
	// the sender starts (a busy responder spins meanwhile, and the
	// scheduler places other tasks' wake-ups on the idle CPUs).
	Lead time.Duration
	// Telemetry samples each responder's CPUs during the round (its CPU
	// and SMT siblings; unpinned, every CPU it may run on); each is
	// written to rundir.TelemetryFile(id).
	Telemetry         bool
	TelemetryInterval time.Duration
	// Progress, when set, receives the sender's progress (once a second);
	// nil: the sender prints none.
	Progress func(sent, received int)
	// MaxDuration bounds the life of every process of the round (their
	// --max-duration): one whose agent or controller is lost ends by
	// itself. 0: the round's own length plus slack (see maxDuration).
	MaxDuration time.Duration
}

// Other is one more responder of a fan-out round: where it runs and how.
type Other struct {
	Host   Host
	CPU    int // -1: not pinned
	Poll   probe.Poll
	Sched  cpusched.Sched
	Engine probe.Engine
	Stack  probe.Stack
}

// responders are the round's responders by id: Responder, with
// ResponderCPU, Poll and Sched, is responder 0, Others follow.
func (s Spec) responders() []Other {
	return append([]Other{{Host: s.Responder, CPU: s.ResponderCPU, Poll: s.Poll, Sched: s.Sched, Engine: s.Engine, Stack: s.Stack}}, s.Others...)
}

// fanout says whether several responders answer every request.
func (s Spec) fanout() bool { return len(s.Others) > 0 }

// maxDuration is the longest a round's process may need: every readiness
// wait, the lead, the sending, the last reply, and slack for stopping.
func (s Spec) maxDuration() time.Duration {
	if s.MaxDuration > 0 {
		return s.MaxDuration
	}
	rt := s.ReplyTimeout
	if rt == 0 {
		rt = time.Second
	}
	return 3*s.ReadyTimeout + s.Lead + time.Duration(s.Count)*s.Interval + rt + 30*time.Second
}

// Result is what one round produced.
type Result struct {
	Dir   string
	Files map[samples.Role]string // the responder's: responder 0's
	// ResponderFiles are every responder's file by id.
	ResponderFiles map[uint32]string
	Elapsed        time.Duration
}

// proc is one started rig process.
type proc struct {
	role samples.Role
	id   uint32 // the responder's id
	host Host
	h    int
}

// name is how errors name the process: "responder 2" in a fan-out round.
func (p proc) name(fanout bool) string {
	if p.role == samples.RoleResponder && fanout {
		return fmt.Sprintf("%s %d", p.role, p.id)
	}
	return string(p.role)
}

// common is the part of every probe's command line that the round sets:
// the run prepared the NICs' timestamping once (the agents' timestamps
// op), so the probes only use it. The agent adds --out.
func (s Spec) common(h Host) probe.Common {
	c := probe.Common{Iface: h.Iface, Group: s.Group, Timestamps: s.Timestamps, RunID: s.RunID, Arm: s.Arm,
		ArmIndex: s.ArmIndex, Round: s.Round, LeaveNIC: true, TakeOverPTP: h.TakeOverPTP, MaxDuration: s.maxDuration()}
	if s.To.IsValid() {
		c.Group, c.Unicast = netip.AddrPort{}, s.To
	}
	return c
}

// respond is the command line of responder id (0: Responder, else
// Others[id-1]): it answers until stopped, as its own id.
func (s Spec) respond(id int) probe.Respond {
	o := s.responders()[id]
	r := probe.DefaultRespond()
	r.Common = s.common(o.Host)
	r.Reply, r.ID, r.CPU, r.Poll, r.Sched, r.Capacity = s.Reply, id, o.CPU, o.Poll, o.Sched, s.Count
	r.Engine = o.Engine
	if o.Stack.Name != "" {
		r.Stack = o.Stack
	}
	return r
}

// capture is the capture's command line: the replies' port too when they
// go to a group.
func (s Spec) capture() probe.Capture {
	c := probe.DefaultCapture()
	c.Common = s.common(*s.Capture)
	c.Capacity, c.VXLAN, c.Responders = s.Count, s.Capture.VXLAN, len(s.responders())
	if s.Reply.IsValid() {
		c.ReplyPort = int(s.Reply.Port())
	}
	return c
}

// send is the sender's command line; it prints no summary, and progress
// lines only when someone reads them.
func (s Spec) send() probe.Send {
	c := probe.DefaultSend()
	c.Common = s.common(s.Sender)
	c.Count, c.Interval, c.Size, c.Warmup = s.Count, s.Interval, orInt(s.Size, wire.DefaultSize), s.Warmup
	c.CPU, c.Spin, c.Poll, c.ReplyGroup = s.SenderCPU, s.Spin, s.SenderPoll, s.Reply
	c.Responders = len(s.responders())
	if s.ReplyTimeout > 0 {
		c.ReplyTimeout = s.ReplyTimeout
	}
	c.Quiet, c.ProgressLines = true, s.Progress != nil
	return c
}

// Run runs the round. On ctx cancellation every process is stopped and the
// files written so far are still brought back.
func Run(ctx context.Context, s Spec) (*Result, error) {
	if s.RunID == 0 {
		s.RunID = wire.NewRunID()
	}
	if s.ReadyTimeout == 0 {
		s.ReadyTimeout = 10 * time.Second
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return nil, err
	}
	r := &runner{ctx: ctx, cleanup: context.WithoutCancel(ctx), spec: s,
		res: &Result{Dir: s.Dir, Files: map[samples.Role]string{}, ResponderFiles: map[uint32]string{}}, begin: time.Now()}
	return r.res, r.run()
}

// runner is one round in progress: the processes started so far, in
// order, and what their files became.
type runner struct {
	ctx     context.Context
	cleanup context.Context // for stopping and fetching after ctx ends
	spec    Spec
	res     *Result
	begin   time.Time
	procs   []proc
}

// run starts every responder and the capture, waits for them, starts the
// sender after the lead, and ends the round when the sender ends.
func (r *runner) run() error {
	s := r.spec
	for id, o := range s.responders() {
		ra := agent.StartArgs{Command: "respond", Args: s.respond(id).Args()}
		// Telemetry watches every responder's CPUs: its CPU, or unpinned
		// every CPU it may run on.
		if s.Telemetry {
			ra.Telemetry = &agent.TelemetryArgs{CPU: o.CPU, IntervalNS: int64(s.TelemetryInterval), Iface: o.Host.Iface}
		}
		if err := r.start(proc{role: samples.RoleResponder, id: uint32(id), host: o.Host}, ra, nil); err != nil {
			return errors.Join(err, r.finish())
		}
	}
	if s.Capture != nil {
		if err := r.start(proc{role: samples.RoleCapture, host: *s.Capture}, agent.StartArgs{Command: "capture", Args: s.capture().Args()}, nil); err != nil {
			return errors.Join(err, r.finish())
		}
	}
	for _, p := range r.procs {
		if err := p.host.Agent.Ready(r.ctx, p.h, s.ReadyTimeout); err != nil {
			return errors.Join(fmt.Errorf("%s: %w", p.name(s.fanout()), err), r.finish())
		}
	}
	if s.Lead > 0 {
		select {
		case <-time.After(s.Lead):
		case <-r.ctx.Done():
			return errors.Join(r.ctx.Err(), r.finish())
		}
	}
	// Progress lines only when someone reads them: each one wakes a
	// goroutine of the sender and the agent relaying it, on the host under
	// test (the bench pins both to the measured CPU: ~250 µs a second there).
	var onLine func(string)
	if s.Progress != nil {
		onLine = func(line string) {
			if sent, recv, ok := probe.ParseProgress(line); ok {
				s.Progress(sent, recv)
			}
		}
	}
	if err := r.start(proc{role: samples.RoleSender, host: s.Sender}, agent.StartArgs{Command: "send", Args: s.send().Args()}, onLine); err != nil {
		return errors.Join(err, r.finish())
	}
	return r.waitSender()
}

// start starts p (its role, id and host) through its host's agent.
func (r *runner) start(p proc, a agent.StartArgs, progress func(string)) error {
	h, err := p.host.Agent.Start(r.ctx, a, progress)
	if err != nil {
		return fmt.Errorf("%s: %w", p.name(r.spec.fanout()), err)
	}
	p.h = h
	r.procs = append(r.procs, p)
	return nil
}

// waitSender waits for the sender, which ends the round, then stops the
// others and brings every file back.
func (r *runner) waitSender() error {
	sp := r.procs[len(r.procs)-1]
	r.procs = r.procs[:len(r.procs)-1]
	wr, werr := sp.host.Agent.Wait(r.ctx, sp.h)
	if werr != nil { // interrupted: stop the sender too
		r.procs = append(r.procs, sp)
		return errors.Join(werr, r.finish())
	}
	r.procs = append([]proc{sp}, r.procs...) // fetched like the others, stopped first (no-op)
	err := r.finish()
	if wr.Error != "" {
		err = errors.Join(fmt.Errorf("sender exited: %s\n    %s", wr.Error, strings.Join(wr.Tail, "\n    ")), err)
	}
	if r.ctx.Err() != nil {
		return errors.Join(r.ctx.Err(), err)
	}
	return err
}

// finish stops what runs, last started first, waits for it and brings the
// files back. After a cancellation only the files' own errors count.
func (r *runner) finish() error {
	var errs []error
	for i := len(r.procs) - 1; i >= 0; i-- {
		if err := r.collect(r.procs[i]); err != nil {
			errs = append(errs, err)
		}
	}
	r.res.Elapsed = time.Since(r.begin)
	return errors.Join(errs...)
}

// collect stops p, waits for it and brings its files back.
func (r *runner) collect(p proc) error {
	var errs []error
	_ = p.host.Agent.Stop(r.cleanup, p.h)
	wr, err := p.host.Agent.Wait(r.cleanup, p.h)
	if err == nil && wr.Error != "" {
		err = fmt.Errorf("%s exited: %s\n    %s", p.name(r.spec.fanout()), wr.Error, strings.Join(wr.Tail, "\n    "))
	}
	if err != nil && r.ctx.Err() == nil {
		errs = append(errs, err)
	}
	fr, ferr := p.host.Agent.Fetch(r.cleanup, p.h)
	if ferr != nil {
		if r.ctx.Err() == nil {
			errs = append(errs, fmt.Errorf("%s sample file: %w", p.name(r.spec.fanout()), ferr))
		}
		return errors.Join(errs...)
	}
	if len(fr.Telemetry) > 0 {
		if err := rundir.WriteFileAtomic(filepath.Join(r.spec.Dir, rundir.TelemetryFile(p.id)), fr.Telemetry); err != nil {
			errs = append(errs, err)
		}
	}
	name := samples.FileName(p.role)
	if p.role == samples.RoleResponder {
		name = samples.ResponderFileName(p.id)
	}
	path := filepath.Join(r.spec.Dir, name)
	if err := rundir.WriteFileAtomic(path, fr.Data); err != nil {
		return errors.Join(append(errs, err)...)
	}
	if p.role == samples.RoleResponder {
		r.res.ResponderFiles[p.id] = path
	}
	if p.role != samples.RoleResponder || p.id == 0 {
		r.res.Files[p.role] = path
	}
	return errors.Join(errs...)
}

func orInt(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}
