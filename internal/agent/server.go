package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rig-project/rig/internal/check"
	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/cpurank"
	"github.com/rig-project/rig/internal/envsnap"
	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostctl"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/scenario"
	"github.com/rig-project/rig/internal/spawn"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/internal/version"
	"github.com/rig-project/rig/nicctl"
)

// probeCommands are the only processes an agent starts.
var probeCommands = []string{"respond", "send", "capture", "noise"}

// Server is the agent side: `rig agent --stdio`.
type Server struct {
	FS       hostfs.FS
	StateDir string // journal directory (default journal.Dir())
	// LockDir holds the host lock: the base of the journal lanes, one lock
	// for the machine (default StateDir).
	LockDir string
	// RunID is the run this agent belongs to: the agent shares the run's
	// host lock on its machine from its start to its exit. Without one it
	// takes the lock alone while an arm is applied.
	RunID   string
	Rig     string // this rig binary (default os.Executable)
	WorkDir string // where sample files go (default a new directory below os.TempDir, see RemoveStaleWorkDirs)

	out     *json.Encoder
	outMu   sync.Mutex
	mu      sync.Mutex
	procs   map[int]*serverProc
	next    int
	applied *hostctl.Applied
	host    *hostctl.Host
	nic     *nicctl.Env
	j       *journal.Journal
	lock    *journal.HostLock
	closing bool // cleanup has begun: no new process or arm
	// tsHeld undo the NIC timestamping prepared for the run, in force
	// until cleanup.
	tsHeld []func()
}

type serverProc struct {
	// tel samples a responder's CPU; it is finished once, when the
	// controller stops the process (before the responder thread exits, so
	// the last sample still reads it) or when the process ends by itself.
	tel     *procTelemetry
	telOnce sync.Once
	telDone bool
	cmd     *exec.Cmd
	out     string
	pcap    bool // it writes pcapPath(out) too
	ready   chan struct{}
	done    chan struct{}
	once    sync.Once
	err     error
	mu      sync.Mutex
	tail    []string
}

// Serve speaks the protocol on r/w until the controller says bye or r
// closes; then it stops every process and takes every knob back. Writes to
// w that fail (the controller is gone) change nothing of that.
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	if s.FS.Root == "" {
		s.FS = hostfs.Default()
	}
	if s.StateDir == "" {
		s.StateDir = journal.Dir()
	}
	if s.LockDir == "" {
		s.LockDir = s.StateDir
	}
	if s.Rig == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		s.Rig = exe
	}
	s.procs = map[int]*serverProc{}
	s.out = json.NewEncoder(w)
	host, _ := os.Hostname()
	ns, _ := os.Readlink("/proc/self/ns/net")
	hello := Hello{Proto: Proto, Version: Version, Rig: version.String(), Host: host, PID: os.Getpid(), Netns: ns}
	if s.RunID != "" {
		l, err := journal.LockHost(s.LockDir, journal.Self(s.RunID))
		if err != nil {
			hello.Error = err.Error()
			s.send(hello)
			return err
		}
		s.lock = l
		defer l.Unlock()
	}
	if s.WorkDir == "" {
		d, err := newWorkDir()
		if err != nil {
			hello.Error = err.Error()
			s.send(hello)
			return err
		}
		s.WorkDir = d
		defer os.RemoveAll(d)
	}
	if err := s.send(hello); err != nil {
		return err
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	var wg sync.WaitGroup
	// On the way out: stop the processes and take the arm back first (that
	// also ends the requests waiting on them), then wait for the requests,
	// then clean up again for anything a request started meanwhile.
	defer s.cleanup()
	defer wg.Wait()
	defer s.cleanup()
	for sc.Scan() {
		var req Request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			s.send(Response{OK: false, Error: fmt.Sprintf("agent: bad request line: %v", err)})
			continue
		}
		if req.Op == OpBye {
			s.cleanup()
			s.send(Response{ID: req.ID, OK: true})
			return nil
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.handle(ctx, req)
			resp := Response{ID: req.ID, OK: err == nil}
			if err != nil {
				resp.Error = err.Error()
				resp.Usage = errors.Is(err, cli.ErrUsage)
			} else if res != nil {
				resp.Result, _ = json.Marshal(res)
			}
			s.send(resp)
		}()
	}
	return sc.Err()
}

func (s *Server) send(v any) error {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	return s.out.Encode(v)
}

func (s *Server) handle(ctx context.Context, req Request) (any, error) {
	switch req.Op {
	case OpFacts:
		return facts.Read(s.FS)
	case OpEnv:
		var a EnvArgs
		if err := decode(req.Args, &a); err != nil {
			return nil, err
		}
		return envsnap.Take(ctx, s.FS, envsnap.Options{Ifaces: a.Ifaces}), nil
	case OpCheck:
		var a CheckArgs
		if err := decode(req.Args, &a); err != nil {
			return nil, err
		}
		return check.Run(ctx, s.FS, check.Options{CPU: a.CPU, Iface: a.Iface, Multicast: a.Multicast})
	case OpRankCPUs:
		var a RankArgs
		if err := decode(req.Args, &a); err != nil {
			return nil, err
		}
		return cpurank.Rank(ctx, s.FS, cpurank.Options{CPUs: a.CPUs, Window: time.Duration(a.WindowNS)})
	case OpTimestamps:
		var a TimestampsArgs
		if err := decode(req.Args, &a); err != nil {
			return nil, err
		}
		return s.timestamps(ctx, a)
	case OpApply:
		var a ApplyArgs
		if err := decode(req.Args, &a); err != nil {
			return nil, err
		}
		return s.apply(ctx, a)
	case OpUndo:
		return s.undo(ctx)
	case OpStart:
		var a StartArgs
		if err := decode(req.Args, &a); err != nil {
			return nil, err
		}
		return s.start(a)
	case OpReady, OpStop, OpWait, OpFetch:
		var a HandleArgs
		if err := decode(req.Args, &a); err != nil {
			return nil, err
		}
		p, err := s.proc(a.Handle)
		if err != nil {
			return nil, err
		}
		switch req.Op {
		case OpReady:
			return struct{}{}, p.waitReady(time.Duration(a.TimeoutNS))
		case OpStop:
			p.stop()
			return struct{}{}, nil
		case OpWait:
			<-p.done
			return p.result(), nil
		default:
			<-p.done
			b, err := os.ReadFile(p.out)
			t, _ := os.ReadFile(p.out + ".telemetry.json")
			r := FetchResult{Data: b, Telemetry: t}
			if p.pcap { // none: the round says it is missing
				r.Pcap, _ = os.ReadFile(pcapPath(p.out))
			}
			return r, err
		}
	}
	return nil, fmt.Errorf("agent: unknown operation %q (this agent speaks %s version %d)", req.Op, Proto, Version)
}

func decode(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("agent: bad arguments: %w", err)
	}
	return nil
}

func (s *Server) apply(ctx context.Context, a ApplyArgs) (_ any, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil, errors.New("agent: shutting down")
	}
	if s.applied != nil {
		return nil, errors.New("agent: an arm is already applied; undo it first")
	}
	if err := s.lockLone(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			s.unlockLone()
		}
	}()
	var k scenario.Knobs
	if err := json.Unmarshal(a.Knobs, &k); err != nil {
		return nil, fmt.Errorf("agent: knobs: %w", err)
	}
	if err := s.openJournal(); err != nil {
		return nil, err
	}
	s.host = &hostctl.Host{FS: s.FS, NIC: s.nic, Journal: s.j, Iface: a.Iface, AllowMgmt: a.AllowMgmt}
	ap, err := hostctl.Apply(ctx, s.host, hostctl.Arm{Name: a.Arm, Knobs: k, Length: time.Duration(a.LengthNS)})
	if err != nil {
		return nil, err
	}
	s.applied = ap
	return ApplyResult{Report: ap.Report}, nil
}

// openJournal opens the host-change journal on first use (s.mu held).
func (s *Server) openJournal() error {
	if s.j != nil {
		return nil
	}
	j, err := journal.Open(s.StateDir, hostctl.Handlers(s.env()))
	if err != nil {
		return err
	}
	s.j = j
	return nil
}

// env is the NIC environment of the agent's changes (s.mu held).
func (s *Server) env() *nicctl.Env {
	if s.nic == nil {
		s.nic = nicctl.NewEnv(s.FS)
	}
	return s.nic
}

// timestamps prepares a NIC's timestamping for the whole run as a hand-run
// probe does (nicctl.HoldTimestamping), under the host lock the agent
// holds, in a journal lane of its own: an arm's undo leaves it in force,
// cleanup takes it back at the end.
func (s *Server) timestamps(ctx context.Context, a TimestampsArgs) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil, errors.New("agent: shutting down")
	}
	if s.applied != nil {
		return nil, errors.New("agent: an arm is applied: timestamping is prepared before the first arm")
	}
	mode, err := tstamp.ParseMode(a.Mode)
	if err != nil {
		return nil, err
	}
	if err := s.lockLone(); err != nil {
		return nil, err
	}
	req := nicctl.TSRequest{Mode: mode, Need: a.Need, AllowMgmt: a.AllowMgmt, TakeOver: a.TakeOver}
	h := nicctl.TSHold{Base: s.LockDir, Lane: fmt.Sprintf("agent-%d-%s", os.Getpid(), a.Iface), Lock: s.lock}
	res, undo, err := nicctl.HoldTimestamping(ctx, s.env(), a.Iface, req, h)
	s.tsHeld = append(s.tsHeld, undo) // the lock too, until cleanup
	return res, err
}

func (s *Server) undo(ctx context.Context) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.applied == nil {
		return ApplyResult{}, nil
	}
	n := len(s.applied.Report)
	err := s.applied.Undo(context.WithoutCancel(ctx))
	res := ApplyResult{Report: s.applied.Report[n:]}
	s.applied = nil
	if err == nil {
		s.unlockLone()
	}
	return res, err
}

// lockLone takes the host lock alone for an agent outside a run, before
// it changes the host (s.mu held). A run's agent holds the run's already.
func (s *Server) lockLone() error {
	if s.lock != nil {
		return nil
	}
	l, err := journal.LockHost(s.LockDir, journal.Self(""))
	if err != nil {
		return err
	}
	s.lock = l
	return nil
}

// unlockLone releases a lone agent's host lock once nothing it changed is
// in force: no arm, no prepared timestamping (s.mu held). What failed to
// be undone keeps it until the agent exits.
func (s *Server) unlockLone() {
	if s.RunID == "" && s.lock != nil && s.applied == nil && len(s.tsHeld) == 0 {
		s.lock.Unlock()
		s.lock = nil
	}
}

func (s *Server) start(a StartArgs) (any, error) {
	if !slices.Contains(probeCommands, a.Command) {
		return nil, fmt.Errorf("agent: %q is not a rig probe command (want %s)", a.Command, strings.Join(probeCommands, ", "))
	}
	for _, arg := range a.Args {
		for _, f := range []string{"--out", "--pcap"} {
			if arg == f || strings.HasPrefix(arg, f+"=") {
				return nil, fmt.Errorf("agent: %s is chosen by the agent", f)
			}
		}
	}
	if a.Pcap && a.Command != "capture" {
		return nil, fmt.Errorf("agent: a pcap file is the capture's, not rig %s's", a.Command)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil, errors.New("agent: shutting down")
	}
	s.next++
	h := s.next
	out := filepath.Join(s.WorkDir, fmt.Sprintf("%d-%s.samples", h, a.Command))
	argv := append([]string{a.Command}, a.Args...)
	argv = append(argv, "--out", out)
	if a.Pcap {
		argv = append(argv, "--pcap", pcapPath(out))
	}
	cmd := exec.Command(s.Rig, argv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	p := &serverProc{cmd: cmd, out: out, pcap: a.Pcap, ready: make(chan struct{}), done: make(chan struct{})}
	// A probe ends with its agent, even one killed with SIGKILL: SIGTERM
	// makes it write its file and exit (a busy responder would otherwise
	// keep its CPU forever). Its --max-duration is the second guard.
	if err := spawn.Start(cmd, syscall.SIGTERM); err != nil {
		return nil, fmt.Errorf("agent: start rig %s: %w", a.Command, err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if probe.IsProgress(line) {
				s.send(Event{Event: "progress", Handle: h, Line: line})
				continue
			}
			if strings.Contains(line, ": ready") {
				p.once.Do(func() {
					p.mu.Lock()
					if a.Telemetry != nil && !p.telDone {
						p.tel = startTelemetry(s.FS, a.Telemetry, cmd.Process.Pid, line)
					}
					p.mu.Unlock()
					close(p.ready)
				})
			}
			p.mu.Lock()
			p.tail = append(p.tail, line)
			if len(p.tail) > 8 {
				p.tail = p.tail[1:]
			}
			p.mu.Unlock()
			s.send(Event{Event: "log", Handle: h, Line: line})
		}
		p.err = cmd.Wait()
		p.finishTelemetry()
		close(p.done)
	}()
	s.procs[h] = p
	return StartResult{Handle: h}, nil
}

// pcapPath is the pcap file of the capture whose sample file is out.
func pcapPath(out string) string { return strings.TrimSuffix(out, ".samples") + ".pcap" }

func (s *Server) proc(h int) (*serverProc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.procs[h]
	if !ok {
		return nil, fmt.Errorf("agent: no process %d", h)
	}
	return p, nil
}

func (p *serverProc) waitReady(timeout time.Duration) error {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	select {
	case <-p.ready:
		return nil
	case <-p.done:
		return fmt.Errorf("exited before it was ready: %v%s", p.err, p.tailText())
	case <-time.After(timeout):
		return fmt.Errorf("not ready after %v%s", timeout, p.tailText())
	}
}

func (p *serverProc) finishTelemetry() {
	p.telOnce.Do(func() {
		p.mu.Lock()
		t := p.tel
		p.telDone = true // a responder stopped before it was ready gets none
		p.mu.Unlock()
		if t != nil {
			t.finish(p.out + ".telemetry.json")
		}
	})
}

// stop asks the process to finish (SIGINT: it writes its file and exits)
// and kills its group if it has not after 5 s.
func (p *serverProc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	p.finishTelemetry()
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

func (p *serverProc) result() WaitResult {
	r := WaitResult{}
	p.mu.Lock()
	r.Tail = append(r.Tail, p.tail...)
	p.mu.Unlock()
	if p.err != nil {
		r.Error = p.err.Error()
		r.ExitCode = -1
		var ee *exec.ExitError
		if errors.As(p.err, &ee) {
			r.ExitCode = ee.ExitCode()
		}
	}
	return r
}

func (p *serverProc) tailText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.tail) == 0 {
		return ""
	}
	return "\n    " + strings.Join(p.tail, "\n    ")
}

// Shutdown stops every process and takes the arm back (for signals).
func (s *Server) Shutdown() { s.cleanup() }

// cleanup stops every process and takes the arm back; it runs on bye, on
// a signal and when the controller goes away. It may run more than once.
func (s *Server) cleanup() {
	s.mu.Lock()
	s.closing = true
	procs := make([]*serverProc, 0, len(s.procs))
	for _, p := range s.procs {
		procs = append(procs, p)
	}
	s.mu.Unlock()
	for _, p := range procs {
		p.stop()
	}
	s.undo(context.Background())
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, undo := range slices.Backward(s.tsHeld) {
		undo()
	}
	s.tsHeld = nil
	undone := true
	if s.j != nil {
		// What is left an arm's undo could not put back: try again.
		_, err := s.j.Undo(context.Background())
		undone = err == nil
		s.j.Close()
		s.j = nil
	}
	if undone {
		s.unlockLone()
	}
	if s.nic != nil {
		s.nic.Close()
		s.nic = nil
	}
}
