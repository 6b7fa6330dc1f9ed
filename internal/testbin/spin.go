package testbin

import (
	"bufio"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Spinner is a shell script a test runs pinned to one CPU to load it; the
// lines it prints are the test's events.
type Spinner struct {
	lines chan struct{}
	n     int
}

// Spin starts script under sh, pinned to cpu (taskset) and, with pidns, in
// a PID namespace of its own with its own /proc (unshare -p -f --mount-proc:
// what a pod without hostPID is), and returns once it printed its first
// line. Its process group is killed when the test ends.
func Spin(t testing.TB, cpu int, pidns bool, script string) *Spinner {
	t.Helper()
	Integration(t)
	args := []string{"taskset", "-c", strconv.Itoa(cpu), "sh", "-c", script}
	if pidns {
		args = append([]string{"unshare", "-p", "-f", "--mount-proc", "--kill-child"}, args...)
	}
	if _, err := exec.LookPath(args[0]); err != nil {
		t.Skipf("%s not installed (util-linux)", args[0])
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	s := &Spinner{lines: make(chan struct{}, 1<<16)}
	go func() {
		for sc := bufio.NewScanner(out); sc.Scan(); {
			s.lines <- struct{}{}
		}
		close(s.lines)
	}()
	s.Wait(t, 1)
	return s
}

// Wait returns once the script printed n more lines; it fails the test
// after a minute or when the script ended. It returns how many lines were
// printed so far.
func (s *Spinner) Wait(t testing.TB, n int) int {
	t.Helper()
	deadline := time.After(time.Minute)
	for want := s.n + n; s.n < want; {
		select {
		case _, ok := <-s.lines:
			if !ok {
				t.Fatalf("the spinner ended after %d lines", s.n)
			}
			s.n++
		case <-deadline:
			t.Fatalf("the spinner printed %d lines in a minute, want %d", s.n, want)
		}
	}
	return s.n
}

// Lines takes in the lines printed so far without waiting and returns
// their count.
func (s *Spinner) Lines() int {
	for {
		select {
		case _, ok := <-s.lines:
			if !ok {
				return s.n
			}
			s.n++
		default:
			return s.n
		}
	}
}

// ShortLived prints a line as each of its children ends: every child is a
// shell that counts to 3000 (some milliseconds of CPU) and exits, so none
// lives through two scans of /proc a quarter of a second apart.
const ShortLived = `echo up; while :; do sh -c 'i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done'; echo done; done`

// Burner prints one line and runs until killed.
const Burner = `echo up; while :; do :; done`
