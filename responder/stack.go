package responder

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/rig-project/rig/internal/native"
	"github.com/rig-project/rig/internal/probe"
)

// stackLaunch checks stack s on this host before anything is set up — its
// launcher on PATH, or its library where the dynamic loader finds it — and
// says how to start the native program under it. What is missing is
// refused with the stack's install hint.
func stackLaunch(s probe.Stack) (native.Launch, error) {
	if s.Kernel() {
		return native.Launch{}, nil
	}
	l := native.Launch{Env: s.Vars()}
	launcher, preload, err := native.FindStack(s)
	if err != nil {
		return l, &native.Refusal{Msg: fmt.Sprintf("--stack %s: %v: %s", s.Name, err, s.Info().Install)}
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

// proveStack requires stack s in the running program: its library mapped
// (/proc/PID/maps) and, where the stack offers them, its presence check
// saying yes and its per-socket check saying the program's socket is
// accelerated (a loaded stack may still leave a socket to the kernel). It
// returns the library's path as mapped.
func proveStack(s probe.Stack, iface string, pid int, ready native.Ready) (string, error) {
	info := s.Info()
	maps := "/proc/" + strconv.Itoa(pid) + "/maps"
	b, err := os.ReadFile(maps)
	if err != nil {
		return "", fmt.Errorf("--stack %s: cannot tell whether %s is loaded in the native program: %w", s.Name, info.Library, err)
	}
	path, ok := native.LibraryIn(bytes.NewReader(b), info.Library)
	if !ok {
		return "", &native.Refusal{Msg: fmt.Sprintf("--stack %s: %s is not mapped in the native program (%s): the stack did not load, and the kernel would answer instead (its messages are above)", s.Name, info.Library, maps)}
	}
	if info.Presence != "" && ready.Presence != "yes" {
		return "", &native.Refusal{Msg: fmt.Sprintf("--stack %s: %s is mapped, but its presence check %s() %s: the stack is not accelerating the program", s.Name, path, info.Presence,
			map[string]string{"no": "says no", "absent": "is not in the process", "": "was not answered"}[ready.Presence])}
	}
	if info.FdStat != "" && ready.Accelerated != "yes" {
		said := map[string]string{"no": "says the responder's socket is not accelerated: is " + iface + " an interface the stack accelerates? (or an environment that keeps sockets off it, as EF_DONT_ACCELERATE, or a handover to the kernel)",
			"absent": "is not in the process", "": "was not answered"}[ready.Accelerated]
		if n, ok := strings.CutPrefix(ready.Accelerated, "error:"); ok {
			errno, _ := strconv.Atoi(n)
			said = "failed on the responder's socket: " + syscall.Errno(errno).Error()
		}
		loaded := path + " is mapped"
		if info.Presence != "" {
			loaded += " and " + info.Presence + "() says yes"
		}
		return "", &native.Refusal{Msg: fmt.Sprintf("--stack %s: %s, but %s() %s", s.Name, loaded, info.FdStat, said)}
	}
	return path, nil
}
