// Package load runs noisy neighbours: stress-ng pinned to a CPU list, in
// its own process group so that every worker is stopped with it.
//
// Each stress-ng gets a --timeout a little longer than the arm it loads,
// so a rig that dies with SIGKILL still leaves no load behind for long.
package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/spawn"
)

// Spec is one stress-ng load.
type Spec struct {
	// Args are stress-ng's arguments as the scenario gives them, e.g.
	// "--cpu 1 --cpu-method fft". --taskset, --timeout and --metrics-brief
	// are added by rig.
	Args string
	CPUs []int // CPUs the workers may run on (--taskset)
	// Timeout bounds the load even if rig cannot stop it.
	Timeout time.Duration
	// Prefix runs stress-ng on another host or namespace (argv prefix).
	Prefix []string
}

// Process is a running stress-ng.
type Process struct {
	spec    Spec
	cmd     *exec.Cmd
	out     bytes.Buffer
	mu      sync.Mutex
	done    chan struct{}
	err     error
	Argv    []string
	Started time.Time
}

// ErrNotInstalled is returned when stress-ng is not on PATH.
var ErrNotInstalled = errors.New("stress-ng is not installed (Debian/Ubuntu: apt-get install stress-ng)")

// Start launches the load. It returns once stress-ng runs; Stop ends it.
func Start(s Spec) (*Process, error) {
	if len(s.Prefix) == 0 {
		if _, err := exec.LookPath("stress-ng"); err != nil {
			return nil, ErrNotInstalled
		}
	}
	if len(s.CPUs) == 0 {
		return nil, errors.New("load: no CPUs to load")
	}
	if s.Timeout <= 0 {
		s.Timeout = time.Hour
	}
	args := strings.Fields(s.Args)
	for _, a := range args {
		switch {
		case a == "--taskset" || strings.HasPrefix(a, "--taskset="), a == "-t", a == "--timeout", strings.HasPrefix(a, "--timeout="):
			return nil, fmt.Errorf("load: stress-ng argument %q is set by rig (from cpus and the arm's length); remove it", a)
		}
	}
	secs := int((s.Timeout + time.Second - 1) / time.Second)
	argv := append(append([]string{}, s.Prefix...), "stress-ng")
	argv = append(argv, args...)
	argv = append(argv, "--taskset", cpulist.Format(s.CPUs), "--timeout", fmt.Sprintf("%ds", secs), "--metrics-brief")
	p := &Process{spec: s, done: make(chan struct{}), Argv: argv}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.cmd.Stdout = &lockedWriter{p: p}
	p.cmd.Stderr = &lockedWriter{p: p}
	// If rig dies (even by SIGKILL) the load dies with it.
	if err := spawn.Start(p.cmd, syscall.SIGKILL); err != nil {
		return nil, fmt.Errorf("start %s: %w", strings.Join(argv, " "), err)
	}
	p.Started = time.Now()
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	// stress-ng validates its arguments at once: give it a moment to fail.
	select {
	case <-p.done:
		return nil, fmt.Errorf("stress-ng exited at start (%v): %s", p.err, strings.TrimSpace(p.Output()))
	case <-time.After(300 * time.Millisecond):
	}
	return p, nil
}

type lockedWriter struct{ p *Process }

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	if w.p.out.Len() < 1<<16 {
		w.p.out.Write(b)
	}
	return len(b), nil
}

// Output is what stress-ng printed (its --metrics-brief lines prove the
// load ran).
func (p *Process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// Pid is the stress-ng parent's pid (also its process group id).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Running reports whether stress-ng has not exited.
func (p *Process) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Stop ends the whole process group: SIGINT (stress-ng stops its workers
// and prints its metrics), then SIGKILL after grace. It returns once the
// parent has exited and no member of the group is left.
func (p *Process) Stop(ctx context.Context, grace time.Duration) error {
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
	// Workers are in the group too: make sure none survives its parent.
	deadline := time.Now().Add(grace)
	for groupAlive(pgid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			if time.Now().After(deadline.Add(grace)) {
				return fmt.Errorf("stress-ng process group %d survives SIGKILL", pgid)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// groupAlive reports whether any process of the group exists.
func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
