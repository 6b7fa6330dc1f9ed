package native

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/probe"
)

// TestStackLaunch: a stack whose launcher or library this host lacks is
// refused with its install hint, before anything starts; a custom library
// found is preloaded by its path, with the stack's variables.
func TestStackLaunch(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv("LD_LIBRARY_PATH", "")
	t.Setenv("LD_PRELOAD", "")
	for _, c := range []struct {
		s    probe.Stack
		want string
	}{
		{probe.Stack{Name: "onload"}, "--stack onload: its launcher onload is not on PATH"},
		{probe.Stack{Name: "exasock"}, "the exanic-utils package"},
		{probe.Stack{Name: "xlio"}, "library libxlio.so is not in LD_LIBRARY_PATH"},
		{probe.Stack{Name: "vma"}, "install NVIDIA VMA"},
		{probe.Stack{Name: probe.StackCustom, Preload: "/nonexistent/libx.so"}, "library /nonexistent/libx.so: stat /nonexistent/libx.so: no such file"},
		{probe.Stack{Name: probe.StackCustom, Launcher: "no-launcher", Preload: "/nonexistent/libx.so"}, "its launcher no-launcher is not on PATH"},
	} {
		_, err := StackLaunch(c.s)
		var ref *Refusal
		if !errors.As(err, &ref) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want a refusal saying %q", c.s, err, c.want)
		}
	}
	lib := filepath.Join(t.TempDir(), "libi.so")
	os.WriteFile(lib, nil, 0o644)
	l, err := StackLaunch(probe.Stack{Name: probe.StackCustom, Preload: lib, Env: "A=1,B=2"})
	if err != nil || l.Launcher != "" || strings.Join(l.Env, " ") != "A=1 B=2 LD_PRELOAD="+lib {
		t.Errorf("custom: %+v, %v", l, err)
	}
	if l, err := StackLaunch(probe.Stack{}); err != nil || l.Launcher != "" || l.Env != nil {
		t.Errorf("kernel: %+v, %v", l, err)
	}
}

// TestProveStack: the stack's library must be mapped in the program (this
// test's own executable stands in for it) and its presence check, where
// it has one, must say yes; anything else is refused, saying which.
func TestProveStack(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pid := os.Getpid()
	mapped := probe.Stack{Name: probe.StackCustom, Preload: exe}
	if p, err := ProveStack(mapped, "responder", "veth-r", pid, Ready{}); err != nil || filepath.Base(p) != filepath.Base(exe) {
		t.Errorf("mapped: %q, %v", p, err)
	}
	var ref *Refusal
	if _, err := ProveStack(probe.Stack{Name: probe.StackCustom, Preload: "/x/librig-absent.so"}, "responder", "veth-r", pid, Ready{}); !errors.As(err, &ref) ||
		!strings.Contains(err.Error(), "librig-absent.so is not mapped in the native program") {
		t.Errorf("absent: %v", err)
	}
	mapped.Presence = "x_loaded"
	for presence, want := range map[string]string{"yes": "", "no": "x_loaded() says no", "absent": "x_loaded() is not in the process"} {
		_, err := ProveStack(mapped, "responder", "veth-r", pid, Ready{Presence: presence})
		if want == "" && err != nil || want != "" && (!errors.As(err, &ref) || !strings.Contains(err.Error(), want)) {
			t.Errorf("presence %s: %v, want %q", presence, err, want)
		}
	}
	mapped.FdStat = "x_fd_stat"
	for acc, want := range map[string]string{"yes": "", "no": "x_loaded() says yes, but x_fd_stat() says the responder's socket is not accelerated: is veth-r an interface the stack accelerates?",
		"absent": "x_fd_stat() is not in the process", "error:9": "x_fd_stat() failed on the responder's socket: bad file descriptor", "": "x_fd_stat() was not answered"} {
		_, err := ProveStack(mapped, "responder", "veth-r", pid, Ready{Presence: "yes", Accelerated: acc})
		if want == "" && err != nil || want != "" && (!errors.As(err, &ref) || !strings.Contains(err.Error(), want)) {
			t.Errorf("accelerated %q: %v, want %q", acc, err, want)
		}
	}
}
