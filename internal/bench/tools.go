package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/samples"
)

// sockperf runs `sockperf server` in the responder namespace and `sockperf
// ping-pong` against it from the sender namespace, both pinned like rig,
// and parses the client's output and full log. busy adds --nonblocked on
// both ends (sockperf then spins on recvfrom); mps is "1000" or "max".
func (b *runner) sockperf(ctx context.Context, dir string, busy bool, mps string, d time.Duration) (*Sockperf, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	snd, rsp := b.topo.Sender.Addr.String(), b.topo.Responder.Addr.String()
	srvArgs := []string{"sockperf", "server", "-i", sockperfGroup, "-p", sockperfPort,
		"--mc-rx-if", rsp, "--mc-tx-if", rsp, "--force-unicast-reply"}
	cliArgs := []string{"sockperf", "ping-pong", "-i", sockperfGroup, "-p", sockperfPort,
		"--mc-tx-if", snd, "--mc-rx-if", snd, "--mps=" + mps, "-t", strconv.Itoa(int(d / time.Second)),
		"-m", strconv.Itoa(b.cfg.Size), "--full-rtt", "--full-log", filepath.Join(dir, "full.csv")}
	if busy {
		srvArgs = append(srvArgs, "--nonblocked")
		cliArgs = append(cliArgs, "--nonblocked")
	}
	srvOut, err := os.Create(filepath.Join(dir, "server.txt"))
	if err != nil {
		return nil, err
	}
	defer srvOut.Close()
	srv := exec.Command(b.prefix(netlab.Responder, b.cfg.ResponderCPU)[0],
		append(b.prefix(netlab.Responder, b.cfg.ResponderCPU)[1:], srvArgs...)...)
	srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	srv.Stdout, srv.Stderr = pw, pw
	srvStart := time.Now()
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("sockperf server: %w (install it: make deps)", err)
	}
	exited := make(chan error, 1)
	go func() { err := srv.Wait(); pw.Close(); exited <- err }()
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		once := false
		for sc.Scan() {
			fmt.Fprintln(srvOut, sc.Text())
			// sockperf says how it waits once its socket is set up.
			if !once && strings.Contains(sc.Text(), "using ") {
				once = true
				close(ready)
			}
		}
		io.Copy(io.Discard, pr)
	}()
	stop := func() {
		_ = srv.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-srv.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	select {
	case <-ready:
	case err := <-exited:
		return nil, fmt.Errorf("sockperf server exited before it was ready: %v (output in %s)", err, srvOut.Name())
	case <-time.After(10 * time.Second):
		stop()
		return nil, fmt.Errorf("sockperf server not ready after 10s (output in %s)", srvOut.Name())
	case <-ctx.Done():
		stop()
		return nil, ctx.Err()
	}
	out, cliUsage, cerr := runCapture(ctx, append(b.prefix(netlab.Sender, b.cfg.SenderCPU), cliArgs...), d+30*time.Second)
	stop()
	if werr := os.WriteFile(filepath.Join(dir, "client.txt"), out, 0o644); werr != nil {
		return nil, werr
	}
	if cerr != nil {
		return nil, fmt.Errorf("sockperf ping-pong: %w\n%s", cerr, tail(out, 8))
	}
	full, err := os.ReadFile(filepath.Join(dir, "full.csv"))
	if err != nil {
		return nil, fmt.Errorf("sockperf ping-pong wrote no full log: %w", err)
	}
	s, err := ParseSockperf(bytes.NewReader(append(append(out, '\n'), full...)))
	if err != nil {
		return nil, fmt.Errorf("sockperf ping-pong output (%s): %w", dir, err)
	}
	s.ClientUsage, s.ServerUsage = cliUsage, processUsage(srv.ProcessState, time.Since(srvStart))
	return s, nil
}

// cyclictest measures timer wake-up latency for count 1 ms loops on cpu,
// SCHED_OTHER unless extra says otherwise. --laptop keeps it from holding
// /dev/cpu_dma_latency at 0, which rig does not do and which would change
// the machine under the other tools' rounds.
func cyclictest(ctx context.Context, file string, cpu, count int, extra ...string) (*Cyclictest, error) {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return nil, err
	}
	argv := append([]string{"cyclictest", "-q", "--laptop", "-a", strconv.Itoa(cpu), "-t", "1",
		"-i", "1000", "-l", strconv.Itoa(count), "-h", "20000"}, extra...)
	out, _, err := runCapture(ctx, argv, time.Duration(count)*time.Millisecond+30*time.Second)
	if werr := os.WriteFile(file, out, 0o644); werr != nil {
		return nil, werr
	}
	if err != nil {
		return nil, fmt.Errorf("cyclictest: %w (install rt-tests: make deps)\n%s", err, tail(out, 8))
	}
	c, err := ParseCyclictest(bytes.NewReader(out))
	if err != nil {
		return nil, fmt.Errorf("cyclictest output (%s): %w", file, err)
	}
	return c, nil
}

// runCapture runs argv with stdout and stderr combined, killing it after
// timeout or on ctx cancellation. It also returns the process's CPU use
// over its life (nil when it did not run).
func runCapture(ctx context.Context, argv []string, timeout time.Duration) ([]byte, *samples.ThreadUsage, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil && err != nil {
		err = fmt.Errorf("%s: %w (%v)", argv[0], ctx.Err(), err)
	}
	return out, processUsage(cmd.ProcessState, time.Since(start)), err
}

// processUsage is a finished process's CPU use (all its threads, over its
// whole life, from wait4's rusage) in the form rig's sample files give for
// their measuring thread; nil when there is none.
func processUsage(st *os.ProcessState, wall time.Duration) *samples.ThreadUsage {
	if st == nil {
		return nil
	}
	ru, ok := st.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return nil
	}
	return &samples.ThreadUsage{WallNS: wall.Nanoseconds(), CPUNS: ru.Utime.Nano() + ru.Stime.Nano(),
		Voluntary: ru.Nvcsw, Involuntary: ru.Nivcsw}
}

func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}
