package responder

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rig-project/rig/internal/native"
	"github.com/rig-project/rig/internal/probe"
)

// libDirs are the dynamic loader's own directories, searched besides
// LD_LIBRARY_PATH and its cache (ldconfig -p).
var libDirs = []string{"/lib", "/usr/lib", "/lib64", "/usr/lib64"}

// stackLaunch checks stack s on this host before anything is set up — its
// launcher on PATH, or its library where the dynamic loader finds it — and
// says how to start the native program under it. What is missing is
// refused with the stack's install hint.
func stackLaunch(s probe.Stack) (native.Launch, error) {
	if s.Kernel() {
		return native.Launch{}, nil
	}
	info := s.Info()
	l := native.Launch{Env: s.Vars()}
	if info.Launcher != "" {
		p, err := exec.LookPath(info.Launcher)
		if err != nil {
			return l, &native.Refusal{Msg: fmt.Sprintf("--stack %s: its launcher %s is not on PATH (%v): %s", s.Name, info.Launcher, err, info.Install)}
		}
		l.Launcher = p
	}
	preload := s.Preload
	if s.Name != probe.StackCustom && info.Launcher == "" {
		preload = info.Library
	}
	if preload == "" {
		return l, nil
	}
	if where, err := findLibrary(preload); err != nil {
		return l, &native.Refusal{Msg: fmt.Sprintf("--stack %s: %v: %s", s.Name, err, info.Install)}
	} else if strings.Contains(preload, "/") {
		preload = where
	}
	if old := os.Getenv("LD_PRELOAD"); old != "" {
		preload += " " + old
	}
	l.Env = append(l.Env, "LD_PRELOAD="+preload)
	return l, nil
}

// findLibrary finds lib as the dynamic loader would for LD_PRELOAD: a path
// as given, a name in LD_LIBRARY_PATH, the loader's cache or its
// directories.
func findLibrary(lib string) (string, error) {
	if strings.Contains(lib, "/") {
		p, err := filepath.Abs(lib)
		if err == nil {
			_, err = os.Stat(p)
		}
		if err != nil {
			return "", fmt.Errorf("library %s: %w", lib, err)
		}
		return p, nil
	}
	dirs := append(filepath.SplitList(os.Getenv("LD_LIBRARY_PATH")), libDirs...)
	for _, d := range dirs {
		if p := filepath.Join(d, lib); fileExists(p) {
			return p, nil
		}
	}
	out, err := exec.Command("ldconfig", "-p").Output()
	if err == nil {
		if p, ok := native.LibraryIn(bytes.NewReader(out), lib); ok && filepath.Base(p) == lib {
			return p, nil
		}
		return "", fmt.Errorf("library %s is not in LD_LIBRARY_PATH, %s or the loader's cache (ldconfig -p)", lib, strings.Join(libDirs, ", "))
	}
	return "", fmt.Errorf("library %s is not in LD_LIBRARY_PATH or %s, and the loader's cache could not be read (ldconfig -p: %v; give the library's path)", lib, strings.Join(libDirs, ", "), err)
}

func fileExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// proveStack requires stack s in the running program: its library mapped
// (/proc/PID/maps) and, where the stack offers one, its presence check
// saying yes. It returns the library's path as mapped.
func proveStack(s probe.Stack, pid int, ready native.Ready) (string, error) {
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
	return path, nil
}
