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
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rig-project/rig/internal/check"
	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/scenario"
	"github.com/rig-project/rig/nicctl"
)

// logMu serialises the log lines of all clients: a run's agents share one
// log writer.
var logMu sync.Mutex

// Client is the controller's end of one agent.
type Client struct {
	Name  string // host name, for messages
	Hello Hello

	cmd     *exec.Cmd
	in      io.WriteCloser
	encMu   sync.Mutex
	enc     *json.Encoder
	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]chan Response
	onLine  map[int]func(string)
	log     io.Writer
	stderr  *tailBuffer
	done    chan struct{}
	readErr error
}

// Dial starts argv (the command that reaches the host followed by
// `rig agent --stdio`), reads the agent's Hello and checks the protocol.
// Log lines of the agent's processes go to log, prefixed with name.
func Dial(ctx context.Context, name string, argv, env []string, log io.Writer) (*Client, error) {
	if log == nil {
		log = io.Discard
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	// Its own process group: a Ctrl-C on the terminal reaches rig run,
	// which takes the arms back through the agents before they go.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c := &Client{Name: name, cmd: cmd, in: in, enc: json.NewEncoder(in), pending: map[uint64]chan Response{},
		onLine: map[int]func(string){}, log: log, stderr: &tailBuffer{done: make(chan struct{})}, done: make(chan struct{})}
	// stderr through a pipe of our own, so that an agent that is gone can
	// be reported with the last words of what reached it (kubectl's
	// "command terminated with exit code 137" comes after stdout's EOF).
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = pw
	err = cmd.Start()
	pw.Close()
	if err == nil {
		go c.stderr.copyFrom(pr)
	} else {
		pr.Close()
	}
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) {
			return nil, fmt.Errorf("host %s: start agent (%s): %q is not on PATH: install %s on this machine (the one running rig run), or change the host's via: %w",
				name, strings.Join(argv, " "), argv[0], argv[0], err)
		}
		return nil, fmt.Errorf("host %s: start agent (%s): %w", name, strings.Join(argv, " "), err)
	}
	br := bufio.NewReaderSize(out, 1<<16)
	hello := make(chan error, 1)
	go func() {
		line, err := br.ReadBytes('\n')
		if err != nil {
			hello <- fmt.Errorf("no hello: %w", err)
			return
		}
		if err := json.Unmarshal(line, &c.Hello); err != nil {
			hello <- fmt.Errorf("hello %q is not JSON: %w", strings.TrimSpace(string(line)), err)
			return
		}
		hello <- nil
		c.readLoop(br)
	}()
	select {
	case err = <-hello:
	case <-time.After(30 * time.Second):
		err = errors.New("no hello within 30 s")
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err == nil && (c.Hello.Proto != Proto || c.Hello.Version != Version) {
		err = fmt.Errorf("agent speaks %s version %d, this rig speaks %s version %d: install the same rig on both hosts",
			c.Hello.Proto, c.Hello.Version, Proto, Version)
	}
	if err == nil && c.Hello.Error != "" {
		c.kill()
		return nil, fmt.Errorf("host %s: %s", name, c.Hello.Error)
	}
	if err != nil {
		c.kill()
		return nil, fmt.Errorf("host %s: agent (%s): %w%s", name, strings.Join(argv, " "), err, c.stderr.final())
	}
	return c, nil
}

func (c *Client) readLoop(br *bufio.Reader) {
	defer close(c.done)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			c.handleLine(line)
		}
		if err != nil {
			c.mu.Lock()
			c.readErr = err
			for id, ch := range c.pending {
				close(ch)
				delete(c.pending, id)
			}
			c.mu.Unlock()
			return
		}
	}
}

// handleLine dispatches one line from the agent: an Event to its process's
// progress callback or to the log, a Response to the call waiting for its
// ID. Anything else is ignored.
func (c *Client) handleLine(line []byte) {
	var probe struct {
		Event *string `json:"event"`
	}
	if json.Unmarshal(line, &probe) == nil && probe.Event != nil {
		var ev Event
		if json.Unmarshal(line, &ev) != nil {
			return
		}
		c.mu.Lock()
		f := c.onLine[ev.Handle]
		c.mu.Unlock()
		if f != nil && ev.Event == "progress" {
			f(ev.Line)
		} else if ev.Event == "log" {
			// Several clients usually share one log.
			logMu.Lock()
			fmt.Fprintf(c.log, "[%s] %s\n", c.Name, ev.Line)
			logMu.Unlock()
		}
		return
	}
	var r Response
	if json.Unmarshal(line, &r) != nil {
		return
	}
	c.mu.Lock()
	ch := c.pending[r.ID]
	delete(c.pending, r.ID)
	c.mu.Unlock()
	if ch != nil {
		ch <- r
	}
}

// Gone reports whether the agent's stream has ended (it exited or was
// killed): what it changed on its host stays until rig restore there.
func (c *Client) Gone() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readErr != nil
}

// RemoteError is an error reported by the agent.
type RemoteError struct {
	Host, Op, Msg string
	Usage         bool // bad input rather than a host failure
}

func (e *RemoteError) Error() string { return fmt.Sprintf("host %s: %s: %s", e.Host, e.Op, e.Msg) }

// Is makes an error the agent found to be bad input match cli.ErrUsage.
func (e *RemoteError) Is(target error) bool { return e.Usage && target == cli.ErrUsage }

func (c *Client) call(ctx context.Context, op string, args, result any) error {
	req := Request{Op: op}
	if args != nil {
		b, err := json.Marshal(args)
		if err != nil {
			return err
		}
		req.Args = b
	}
	ch := make(chan Response, 1)
	c.mu.Lock()
	if c.readErr != nil {
		c.mu.Unlock()
		return fmt.Errorf("host %s: agent is gone (%v)%s", c.Name, c.readErr, c.stderr.final())
	}
	c.nextID++
	req.ID = c.nextID
	c.pending[req.ID] = ch
	c.mu.Unlock()
	c.encMu.Lock()
	err := c.enc.Encode(req)
	c.encMu.Unlock()
	if err != nil {
		return fmt.Errorf("host %s: %s: %w", c.Name, op, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return fmt.Errorf("host %s: %s: agent exited%s", c.Name, op, c.stderr.final())
		}
		if !r.OK {
			return &RemoteError{Host: c.Name, Op: op, Msg: r.Error, Usage: r.Usage}
		}
		if result != nil && len(r.Result) > 0 {
			return json.Unmarshal(r.Result, result)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Facts reads the host's facts for validation.
func (c *Client) Facts(ctx context.Context) (*facts.Facts, error) {
	var f facts.Facts
	return &f, c.call(ctx, OpFacts, nil, &f)
}

// Env takes the host's environment snapshot (JSON).
func (c *Client) Env(ctx context.Context, ifaces []string) (json.RawMessage, error) {
	var raw json.RawMessage
	return raw, c.call(ctx, OpEnv, EnvArgs{Ifaces: ifaces}, &raw)
}

// Check runs the preflight checks on the host for a responder CPU.
func (c *Client) Check(ctx context.Context, a CheckArgs) (*check.Report, error) {
	var r check.Report
	return &r, c.call(ctx, OpCheck, a, &r)
}

// RankCPUs ranks the candidate CPUs (nil: every CPU the agent may run on)
// by measured noise over window (0: the default) on the host.
func (c *Client) RankCPUs(ctx context.Context, cpus []int, window time.Duration) (*rundir.Ranking, error) {
	var r rundir.Ranking
	if err := c.call(ctx, OpRankCPUs, RankArgs{CPUs: cpus, WindowNS: int64(window)}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Apply puts an arm's knobs in force on the host; allowMgmt lets them
// change iface although it carries the default route.
func (c *Client) Apply(ctx context.Context, arm string, k scenario.Knobs, iface string, allowMgmt bool, length time.Duration) ([]string, error) {
	kb, err := json.Marshal(k)
	if err != nil {
		return nil, err
	}
	var r ApplyResult
	err = c.call(ctx, OpApply, ApplyArgs{Arm: arm, Knobs: kb, Iface: iface, AllowMgmt: allowMgmt, LengthNS: int64(length)}, &r)
	return r.Report, err
}

// Timestamps prepares a NIC's hardware timestamping on the host for the
// whole run (nicctl.PrepareTimestamping, journaled there, taken back when
// the agent ends).
func (c *Client) Timestamps(ctx context.Context, a TimestampsArgs) (nicctl.TSResult, error) {
	var r nicctl.TSResult
	err := c.call(ctx, OpTimestamps, a, &r)
	return r, err
}

// Undo takes the arm back.
func (c *Client) Undo(ctx context.Context) ([]string, error) {
	var r ApplyResult
	err := c.call(ctx, OpUndo, nil, &r)
	return r.Report, err
}

// Start starts a rig probe process on the host; onProgress gets its
// progress lines.
func (c *Client) Start(ctx context.Context, a StartArgs, onProgress func(string)) (int, error) {
	var r StartResult
	if err := c.call(ctx, OpStart, a, &r); err != nil {
		return 0, err
	}
	if onProgress != nil {
		c.mu.Lock()
		c.onLine[r.Handle] = onProgress
		c.mu.Unlock()
	}
	return r.Handle, nil
}

// Ready waits until the process says it is ready.
func (c *Client) Ready(ctx context.Context, h int, timeout time.Duration) error {
	return c.call(ctx, OpReady, HandleArgs{Handle: h, TimeoutNS: int64(timeout)}, nil)
}

// Stop asks the process to finish and write its file.
func (c *Client) Stop(ctx context.Context, h int) error {
	return c.call(ctx, OpStop, HandleArgs{Handle: h}, nil)
}

// Wait waits for the process to exit.
func (c *Client) Wait(ctx context.Context, h int) (WaitResult, error) {
	var r WaitResult
	return r, c.call(ctx, OpWait, HandleArgs{Handle: h}, &r)
}

// Fetch returns the process's sample file and, for a responder started
// with telemetry, its telemetry.json.
func (c *Client) Fetch(ctx context.Context, h int) (FetchResult, error) {
	var r FetchResult
	return r, c.call(ctx, OpFetch, HandleArgs{Handle: h}, &r)
}

// Close says bye (the agent stops its processes and takes its arm back),
// then waits for the agent to exit, killing it after 15 s.
func (c *Client) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err := c.call(ctx, OpBye, nil, nil)
	c.in.Close()
	exited := make(chan error, 1)
	go func() { exited <- c.cmd.Wait() }()
	select {
	case werr := <-exited:
		if err == nil && werr != nil {
			err = fmt.Errorf("host %s: agent: %w%s", c.Name, werr, c.stderr.text())
		}
	case <-time.After(15 * time.Second):
		c.kill()
		err = errors.Join(err, fmt.Errorf("host %s: agent did not exit; killed", c.Name))
	}
	return err
}

func (c *Client) kill() {
	if c.cmd.Process != nil {
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		c.cmd.Wait()
	}
}

// tailBuffer keeps the last lines the agent wrote on stderr.
type tailBuffer struct {
	mu    sync.Mutex
	lines []string
	part  string
	done  chan struct{} // closed when the stderr pipe reached EOF
}

// copyFrom reads the agent's stderr until every writer closed it.
func (t *tailBuffer) copyFrom(r io.ReadCloser) {
	_, _ = io.Copy(t, r)
	r.Close()
	close(t.done)
}

// final is text once stderr ended, or after 2 s: what reaches the agent
// may outlive it a little (kubectl reports the exit code after the
// stream) or a lot (a child holds stderr open).
func (t *tailBuffer) final() string {
	select {
	case <-t.done:
	case <-time.After(2 * time.Second):
	}
	return t.text()
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.part + string(b)
	parts := strings.Split(s, "\n")
	t.part = parts[len(parts)-1]
	t.lines = append(t.lines, parts[:len(parts)-1]...)
	if len(t.lines) > 10 {
		t.lines = t.lines[len(t.lines)-10:]
	}
	return len(b), nil
}

func (t *tailBuffer) text() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	l := t.lines
	if t.part != "" {
		l = append(l, t.part)
	}
	if len(l) == 0 {
		return ""
	}
	return "\n    agent stderr: " + strings.Join(l, "\n    agent stderr: ")
}

// DialRig starts `rig agent --stdio --lane NAME` through prefix (nil: on
// this host); the lane keeps the journals of agents on one machine apart.
// env adds NAME=value entries to the agent's environment where the prefix
// passes it on (local and ip netns exec do; ssh does not). The agent takes
// the host lock alone while an arm is applied; see DialRun for a run's.
func DialRig(ctx context.Context, name string, prefix []string, rig string, env []string, log io.Writer) (*Client, error) {
	return DialRun(ctx, name, prefix, rig, "", env, log)
}

// DialRun is DialRig for an agent of run runID: from its start to its exit
// the agent shares the run's host lock on the machine it runs on (see
// journal.LockHost), and fails at once, naming the holder, when another
// rig process holds it.
func DialRun(ctx context.Context, name string, prefix []string, rig, runID string, env []string, log io.Writer) (*Client, error) {
	argv := append(append(append([]string{}, prefix...), rig), "agent", "--stdio", "--lane", name)
	if runID != "" {
		argv = append(argv, "--run", runID)
	}
	return Dial(ctx, name, argv, env, log)
}
