package native

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/rig-project/rig/internal/probe"
)

// StackLaunch checks stack s on this host before anything is set up — its
// launcher on PATH, or its library where the dynamic loader finds it — and
// says how to start the native program under it. What is missing is
// refused with the stack's install hint.
func StackLaunch(s probe.Stack) (Launch, error) {
	if s.Kernel() {
		return Launch{}, nil
	}
	l := Launch{Env: s.Vars()}
	launcher, preload, err := FindStack(s)
	if err != nil {
		return l, &Refusal{Msg: fmt.Sprintf("--stack %s: %v: %s", s.Name, err, s.Info().Install)}
	}
	l.Launcher = launcher
	if preload == "" {
		return l, nil
	}
	if old := os.Getenv("LD_PRELOAD"); old != "" {
		preload += " " + old
	}
	l.Env = append(l.Env, "LD_PRELOAD="+preload)
	return l, nil
}

// ProveStack requires stack s in the running program of role (responder,
// sender): its library mapped
// (/proc/PID/maps) and, where the stack offers them, its presence check
// saying yes and its per-socket check saying the program's socket is
// accelerated (a loaded stack may still leave a socket to the kernel). It
// returns the library's path as mapped.
func ProveStack(s probe.Stack, role, iface string, pid int, ready Ready) (string, error) {
	info := s.Info()
	maps := "/proc/" + strconv.Itoa(pid) + "/maps"
	b, err := os.ReadFile(maps)
	if err != nil {
		return "", fmt.Errorf("--stack %s: cannot tell whether %s is loaded in the native program: %w", s.Name, info.Library, err)
	}
	path, ok := LibraryIn(bytes.NewReader(b), info.Library)
	if !ok {
		return "", &Refusal{Msg: fmt.Sprintf("--stack %s: %s is not mapped in the native program (%s): the stack did not load, and the kernel would answer instead (its messages are above)", s.Name, info.Library, maps)}
	}
	if info.Presence != "" && ready.Presence != "yes" {
		return "", &Refusal{Msg: fmt.Sprintf("--stack %s: %s is mapped, but its presence check %s() %s: the stack is not accelerating the program", s.Name, path, info.Presence,
			map[string]string{"no": "says no", "absent": "is not in the process", "": "was not answered"}[ready.Presence])}
	}
	if info.FdStat != "" && ready.Accelerated != "yes" {
		said := map[string]string{"no": "says the " + role + "'s socket is not accelerated: is " + iface + " an interface the stack accelerates? (or an environment that keeps sockets off it, as EF_DONT_ACCELERATE, or a handover to the kernel)",
			"absent": "is not in the process", "": "was not answered"}[ready.Accelerated]
		if n, ok := strings.CutPrefix(ready.Accelerated, "error:"); ok {
			errno, _ := strconv.Atoi(n)
			said = "failed on the " + role + "'s socket: " + syscall.Errno(errno).Error()
		}
		loaded := path + " is mapped"
		if info.Presence != "" {
			loaded += " and " + info.Presence + "() says yes"
		}
		return "", &Refusal{Msg: fmt.Sprintf("--stack %s: %s, but %s() %s", s.Name, loaded, info.FdStat, said)}
	}
	return path, nil
}

// StackArgs are a native program's flags for s's own checks (sock.c's
// stack_checks): its presence check and per-socket check, where it has them.
func StackArgs(s probe.Stack) []string {
	var a []string
	if p := s.Info().Presence; p != "" {
		a = append(a, "--presence", p)
	}
	if f := s.Info().FdStat; f != "" {
		a = append(a, "--fd-stat", f)
	}
	return a
}

// StackSettings adds to a sample header's settings what proved stack s in
// the program (lib as ProveStack found it mapped; nothing for the kernel's).
func StackSettings(m map[string]any, s probe.Stack, lib string, ready Ready) {
	if lib == "" {
		return
	}
	m["stack_library"], m["stack_env"] = lib, s.Vars()
	if p := s.Info().Presence; p != "" {
		m["stack_presence"] = p + ": " + ready.Presence
	}
	if f := s.Info().FdStat; f != "" {
		m["stack_fd_stat"] = fmt.Sprintf("%s: %s (stack %s, id %d)", f, ready.Accelerated, ready.FdStack, ready.FdStackID)
	}
}
