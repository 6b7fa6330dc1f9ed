// Package round runs one round: a responder, an optional capture and a
// sender, each as its own rig process on its own host, started through
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
	"strconv"
	"strings"
	"time"

	"github.com/rig-project/rig/internal/agent"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/wire"
)

// Host is where one role runs.
type Host struct {
	Agent *agent.Client
	Iface string
	// AllowMgmt lets the arm's knobs change Iface although it carries the
	// default route (the scenario host's allow-mgmt).
	AllowMgmt bool
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

	Group      string // group:port of multicast requests
	Reply      string // "unicast" or group:port
	Count      int
	Interval   time.Duration
	Size       int
	Warmup     int
	Timestamps string
	RunID      uint64
	Arm        string
	ArmIndex   int
	Round      int

	// To is where unicast requests go (the responder's address:port);
	// when set, Group is not used: the sender and the capture get --to,
	// the responder --listen.
	To string

	ResponderCPU int // -1: not pinned
	Poll         string
	Sched        string
	SenderCPU    int    // -1: not pinned
	SenderPoll   string // rig send --poll: "" (block) or "busy"
	Spin         time.Duration
	ReplyTimeout time.Duration // 0: the sender's default
	ReadyTimeout time.Duration // default 10 s
	// Lead: once the responder is ready, it runs alone this long before
	// the sender starts (a busy responder spins meanwhile, and the
	// scheduler places other tasks' wake-ups on the idle CPUs).
	Lead time.Duration
	// Telemetry samples the responder CPU during the round (needs a
	// pinned responder); it is written to telemetry.json.
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
	Host  Host
	CPU   int    // -1: not pinned
	Poll  string // "" (block), "busy", "busy-poll:µs"
	Sched string // "" (other) or "fifo:N"
}

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
	res := &Result{Dir: s.Dir, Files: map[samples.Role]string{}, ResponderFiles: map[uint32]string{}}
	fanout := len(s.Others) > 0
	start := time.Now()
	common := func(iface, unicast string) []string {
		dest := []string{"--group", s.Group}
		if s.To != "" {
			dest = []string{"--" + unicast, s.To}
		}
		// The run prepared the NICs' timestamping once (the agents'
		// timestamps op); the probes only use it.
		return append(dest, "--iface", iface, "--timestamps", s.Timestamps, "--nic-timestamping", "leave",
			"--run-id", wire.FormatRunID(s.RunID), "--arm", s.Arm, "--arm-index", strconv.Itoa(s.ArmIndex),
			"--round", strconv.Itoa(s.Round), "--max-duration", s.maxDuration().String())
	}
	cleanup := context.WithoutCancel(ctx)
	var procs []proc
	// finish stops what runs, waits for it and brings the files back.
	finish := func() error {
		var errs []error
		for i := len(procs) - 1; i >= 0; i-- {
			p := procs[i]
			_ = p.host.Agent.Stop(cleanup, p.h)
			wr, err := p.host.Agent.Wait(cleanup, p.h)
			if err == nil && wr.Error != "" {
				err = fmt.Errorf("%s exited: %s\n    %s", p.name(fanout), wr.Error, strings.Join(wr.Tail, "\n    "))
			}
			if err != nil && ctx.Err() == nil {
				errs = append(errs, err)
			}
			fr, ferr := p.host.Agent.Fetch(cleanup, p.h)
			if ferr != nil {
				if ctx.Err() == nil {
					errs = append(errs, fmt.Errorf("%s sample file: %w", p.name(fanout), ferr))
				}
				continue
			}
			if len(fr.Telemetry) > 0 {
				if err := rundir.WriteFileAtomic(filepath.Join(s.Dir, rundir.Telemetry), fr.Telemetry); err != nil {
					errs = append(errs, err)
				}
			}
			name := samples.FileName(p.role)
			if p.role == samples.RoleResponder {
				name = samples.ResponderFileName(p.id)
			}
			path := filepath.Join(s.Dir, name)
			if err := rundir.WriteFileAtomic(path, fr.Data); err != nil {
				errs = append(errs, err)
				continue
			}
			if p.role == samples.RoleResponder {
				res.ResponderFiles[p.id] = path
			}
			if p.role != samples.RoleResponder || p.id == 0 {
				res.Files[p.role] = path
			}
		}
		res.Elapsed = time.Since(start)
		return errors.Join(errs...)
	}
	startProc := func(p proc, a agent.StartArgs, progress func(string)) error {
		h, err := p.host.Agent.Start(ctx, a, progress)
		if err != nil {
			return fmt.Errorf("%s: %w", p.name(fanout), err)
		}
		p.h = h
		procs = append(procs, p)
		return nil
	}
	responders := append([]Other{{Host: s.Responder, CPU: s.ResponderCPU, Poll: s.Poll, Sched: s.Sched}}, s.Others...)
	for id, o := range responders {
		rsp := append(common(o.Host.Iface, "listen"), "--reply", orDefault(s.Reply, "unicast"),
			"--cpu", strconv.Itoa(o.CPU), "--poll", orDefault(o.Poll, "block"),
			"--sched", orDefault(o.Sched, "other"), "--capacity", strconv.Itoa(s.Count))
		if fanout {
			rsp = append(rsp, "--id", strconv.Itoa(id))
		}
		ra := agent.StartArgs{Command: "respond", Args: rsp}
		// Telemetry watches responder 0's CPU (its file is the round's).
		if s.Telemetry && id == 0 && o.CPU >= 0 {
			ra.Telemetry = &agent.TelemetryArgs{CPU: o.CPU, IntervalNS: int64(s.TelemetryInterval), Iface: o.Host.Iface}
		}
		if err := startProc(proc{role: samples.RoleResponder, id: uint32(id), host: o.Host}, ra, nil); err != nil {
			return res, errors.Join(err, finish())
		}
	}
	if s.Capture != nil {
		capArgs := append(common(s.Capture.Iface, "to"), "--capacity", strconv.Itoa(s.Count))
		if fanout {
			capArgs = append(capArgs, "--responders", strconv.Itoa(len(responders)))
		}
		if s.Capture.VXLAN {
			capArgs = append(capArgs, "--vxlan")
		}
		if p := replyPort(s.Reply); p != "" {
			capArgs = append(capArgs, "--reply-port", p)
		}
		if err := startProc(proc{role: samples.RoleCapture, host: *s.Capture}, agent.StartArgs{Command: "capture", Args: capArgs}, nil); err != nil {
			return res, errors.Join(err, finish())
		}
	}
	for _, p := range procs {
		if err := p.host.Agent.Ready(ctx, p.h, s.ReadyTimeout); err != nil {
			return res, errors.Join(fmt.Errorf("%s: %w", p.name(fanout), err), finish())
		}
	}
	if s.Lead > 0 {
		select {
		case <-time.After(s.Lead):
		case <-ctx.Done():
			return res, errors.Join(ctx.Err(), finish())
		}
	}
	snd := append(common(s.Sender.Iface, "to"), "--count", strconv.Itoa(s.Count), "--interval", s.Interval.String(),
		"--size", strconv.Itoa(orInt(s.Size, wire.DefaultSize)), "--warmup", strconv.Itoa(s.Warmup),
		"--cpu", strconv.Itoa(s.SenderCPU), "--spin", s.Spin.String(), "--quiet")
	if s.Reply != "" && s.Reply != "unicast" {
		snd = append(snd, "--reply-group", s.Reply)
	}
	if s.ReplyTimeout > 0 {
		snd = append(snd, "--reply-timeout", s.ReplyTimeout.String())
	}
	if s.SenderPoll != "" {
		snd = append(snd, "--poll", s.SenderPoll)
	}
	if fanout {
		snd = append(snd, "--responders", strconv.Itoa(len(responders)))
	}
	// Progress lines only when someone reads them: each one wakes a
	// goroutine of the sender and the agent relaying it, on the host under
	// test (the bench pins both to the measured CPU: ~250 µs a second there).
	var onLine func(string)
	if s.Progress != nil {
		snd = append(snd, "--progress-lines")
		onLine = func(line string) {
			var sent, recv int
			if _, err := fmt.Sscanf(line, "progress %d %d", &sent, &recv); err == nil {
				s.Progress(sent, recv)
			}
		}
	}
	if err := startProc(proc{role: samples.RoleSender, host: s.Sender}, agent.StartArgs{Command: "send", Args: snd}, onLine); err != nil {
		return res, errors.Join(err, finish())
	}
	// The sender ends the round: wait for it first, then stop the others.
	sp := procs[len(procs)-1]
	procs = procs[:len(procs)-1]
	wr, werr := sp.host.Agent.Wait(ctx, sp.h)
	if werr != nil { // interrupted: stop the sender too
		procs = append(procs, sp)
		return res, errors.Join(werr, finish())
	}
	procs = append([]proc{sp}, procs...) // fetched like the others, stopped first (no-op)
	err := finish()
	if wr.Error != "" {
		err = errors.Join(fmt.Errorf("sender exited: %s\n    %s", wr.Error, strings.Join(wr.Tail, "\n    ")), err)
	}
	if ctx.Err() != nil {
		return res, errors.Join(ctx.Err(), err)
	}
	return res, err
}

func replyPort(reply string) string {
	if i := strings.LastIndexByte(reply, ':'); i >= 0 && reply != "unicast" {
		return reply[i+1:]
	}
	return ""
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func orInt(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}
