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
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rig-project/rig/internal/agent"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/wire"
)

// Spec is one round: the probes' command lines, the agents that start
// them, and how the round runs.
//
// Send's request stream (Common's Group or Unicast, Timestamps, RunID,
// Arm, ArmIndex and Round; Count; ReplyGroup) is every probe's: Run
// copies it into the responders' and the capture's command lines, of
// which it keeps only their own (Iface, TakeOverPTP; a responder's CPU,
// Poll, Sched, Engine; the capture's VXLAN). Run also sets what the round
// owns: the responders' ids and count, what is recorded, the NIC left as
// the run prepared it (the agents' timestamps op), every process's
// --max-duration, and a quiet sender.
type Spec struct {
	Dir  string // round directory: the sample files go here
	Send probe.Send
	// Respond are the responders' command lines by id; several answer
	// every request (fan-out), each as its own id.
	Respond []probe.Respond
	Capture *probe.Capture // nil: no capture
	// Pcap has the capture write its frames as pcap too, brought back as
	// rundir.PcapFile.
	Pcap bool
	// SendOn, RespondOn[i] and CaptureOn are the agents that start Send,
	// Respond[i] and Capture.
	SendOn, CaptureOn *agent.Client
	RespondOn         []*agent.Client

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
	// Noise, when set, is rig noise's window (its For) on each responder's
	// CPU before any probe starts (a busy responder would be its noise),
	// written to rundir.NoiseFileOf(id). Run sets its CPU and Sched: the
	// responder's.
	Noise *probe.Noise
	// Progress, when set, receives the sender's progress (once a second);
	// nil: the sender prints none.
	Progress func(sent, received int)
	// MaxDuration bounds the life of every process of the round (their
	// --max-duration): one whose agent or controller is lost ends by
	// itself. 0: the round's own length plus slack (see maxDuration).
	MaxDuration time.Duration
}

// fanout says whether several responders answer every request.
func (s Spec) fanout() bool { return len(s.Respond) > 1 }

// maxDuration is the longest a round's process may need: every readiness
// wait, the lead, the sending, the last reply, and slack for stopping.
func (s Spec) maxDuration() time.Duration {
	if s.MaxDuration > 0 {
		return s.MaxDuration
	}
	rt := s.Send.ReplyTimeout
	if rt == 0 {
		rt = time.Second
	}
	return 3*s.ReadyTimeout + s.Lead + time.Duration(s.Send.Count)*s.Send.Interval + rt + 30*time.Second
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
	role  samples.Role
	id    uint32 // the responder's id
	agent *agent.Client
	h     int
}

// name is how errors name the process: "responder 2" in a fan-out round.
func (p proc) name(fanout bool) string {
	if p.role == samples.RoleResponder && fanout {
		return fmt.Sprintf("%s %d", p.role, p.id)
	}
	return string(p.role)
}

// common is c, a probe's own part of the command line (Iface,
// TakeOverPTP), with the request stream of Send and what the round sets
// on every probe. The agent adds --out.
func (s Spec) common(c probe.Common) probe.Common {
	own := c
	c = s.Send.Common
	c.Iface, c.TakeOverPTP, c.LeaveNIC, c.MaxDuration = own.Iface, own.TakeOverPTP, true, s.maxDuration()
	return c
}

// respond is the command line of responder id: it answers until stopped,
// as its own id, to the replies' group if there is one.
func (s Spec) respond(id int) probe.Respond {
	r := s.Respond[id]
	r.Common = s.common(r.Common)
	r.ID, r.Reply, r.Capacity, r.Count = id, s.Send.ReplyGroup, s.Send.Count, 0
	return r
}

// capture is the capture's command line: the replies' port too when they
// go to a group.
func (s Spec) capture() probe.Capture {
	c := *s.Capture
	c.Common = s.common(c.Common)
	c.Capacity, c.Responders, c.ReplyPort = s.Send.Count, len(s.Respond), int(s.Send.ReplyGroup.Port())
	return c
}

// send is the sender's command line; it prints no summary, and progress
// lines only when someone reads them.
func (s Spec) send() probe.Send {
	c := s.Send
	c.Common = s.common(c.Common)
	c.Responders, c.Quiet, c.ProgressLines = len(s.Respond), true, s.Progress != nil
	return c
}

// Run runs the round. On ctx cancellation every process is stopped and the
// files written so far are still brought back.
func Run(ctx context.Context, s Spec) (*Result, error) {
	if len(s.Respond) == 0 || len(s.RespondOn) != len(s.Respond) || (s.Capture == nil) != (s.CaptureOn == nil) {
		return nil, fmt.Errorf("round: want one agent per probe: %d responders on %d agents, capture %t on an agent %t",
			len(s.Respond), len(s.RespondOn), s.Capture != nil, s.CaptureOn != nil)
	}
	if s.Send.RunID == 0 {
		s.Send.RunID = wire.NewRunID()
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
	if s.Noise != nil {
		if err := r.noise(); err != nil {
			return fmt.Errorf("noise window: %w", err)
		}
	}
	for id, on := range s.RespondOn {
		cmd := s.respond(id)
		ra := agent.StartArgs{Command: "respond", Args: cmd.Args()}
		// Telemetry watches every responder's CPUs: its CPU, or unpinned
		// every CPU it may run on.
		if s.Telemetry {
			ra.Telemetry = &agent.TelemetryArgs{CPU: cmd.CPU, IntervalNS: int64(s.TelemetryInterval), Iface: cmd.Iface}
		}
		if err := r.start(proc{role: samples.RoleResponder, id: uint32(id), agent: on}, ra, nil); err != nil {
			return errors.Join(err, r.finish())
		}
	}
	if s.Capture != nil {
		if err := r.start(proc{role: samples.RoleCapture, agent: s.CaptureOn}, agent.StartArgs{Command: "capture", Args: s.capture().Args(), Pcap: s.Pcap}, nil); err != nil {
			return errors.Join(err, r.finish())
		}
	}
	for _, p := range r.procs {
		if err := p.agent.Ready(r.ctx, p.h, s.ReadyTimeout); err != nil {
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
	if err := r.start(proc{role: samples.RoleSender, agent: s.SendOn}, agent.StartArgs{Command: "send", Args: s.send().Args()}, onLine); err != nil {
		return errors.Join(err, r.finish())
	}
	return r.waitSender()
}

// noise runs the noise window on each responder's host and CPU, with its
// scheduling policy (what its loop would suffer), alone, and writes each
// result to the round directory (rundir.NoiseFileOf). The windows run one
// after another: responders that share a CPU (an emulated lab's) would
// otherwise measure each other.
func (r *runner) noise() error {
	for id, on := range r.spec.RespondOn {
		n := *r.spec.Noise
		n.CPU, n.Sched = r.spec.Respond[id].CPU, r.spec.Respond[id].Sched
		if err := r.noiseOn(on, n, uint32(id)); err != nil {
			if r.spec.fanout() {
				return fmt.Errorf("responder %d: %w", id, err)
			}
			return err
		}
	}
	return nil
}

func (r *runner) noiseOn(on *agent.Client, n probe.Noise, id uint32) error {
	if n.CPU < 0 {
		return errors.New("the responder has no CPU: set responder.cpu")
	}
	h, err := on.Start(r.ctx, agent.StartArgs{Command: "noise", Args: n.Args()}, nil)
	if err != nil {
		return err
	}
	wr, err := on.Wait(r.ctx, h)
	if err != nil { // interrupted: the loop stops and writes what it has
		_ = on.Stop(r.cleanup, h)
		_, _ = on.Wait(r.cleanup, h)
		return err
	}
	if wr.Error != "" {
		return fmt.Errorf("rig noise exited: %s\n    %s", wr.Error, strings.Join(wr.Tail, "\n    "))
	}
	fr, err := on.Fetch(r.cleanup, h)
	if err != nil {
		return err
	}
	return rundir.WriteFileAtomic(filepath.Join(r.spec.Dir, rundir.NoiseFileOf(id)), fr.Data)
}

// start starts p (its role and id) through its agent.
func (r *runner) start(p proc, a agent.StartArgs, progress func(string)) error {
	h, err := p.agent.Start(r.ctx, a, progress)
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
	wr, werr := sp.agent.Wait(r.ctx, sp.h)
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
	_ = p.agent.Stop(r.cleanup, p.h)
	wr, err := p.agent.Wait(r.cleanup, p.h)
	if err == nil && wr.Error != "" {
		err = fmt.Errorf("%s exited: %s\n    %s", p.name(r.spec.fanout()), wr.Error, strings.Join(wr.Tail, "\n    "))
	}
	if err != nil && r.ctx.Err() == nil {
		errs = append(errs, err)
	}
	fr, ferr := p.agent.Fetch(r.cleanup, p.h)
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
	if p.role == samples.RoleCapture && r.spec.Pcap {
		errs = append(errs, r.writePcap(fr.Pcap))
	}
	if p.role == samples.RoleResponder {
		r.res.ResponderFiles[p.id] = path
	}
	if p.role != samples.RoleResponder || p.id == 0 {
		r.res.Files[p.role] = path
	}
	return errors.Join(errs...)
}

// writePcap writes the capture's pcap file to the round directory; none
// came back is an error (the capture failed before writing it).
func (r *runner) writePcap(data []byte) error {
	path := filepath.Join(r.spec.Dir, rundir.PcapFile)
	if len(data) == 0 {
		return fmt.Errorf("capture: no %s came back", rundir.PcapFile)
	}
	if err := rundir.WriteFileAtomic(path, data); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
