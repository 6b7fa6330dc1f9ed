package native

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/rig-project/rig/internal/probe"
)

// LibraryIn finds library name (libonload.so) in a listing whose lines end
// in a path: /proc/PID/maps, or `ldconfig -p` ("… => /path"). A file
// matches when its base name is name or name with a version (name.1.2).
// It returns the first path that matches.
func LibraryIn(r io.Reader, name string) (string, bool) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	for sc.Scan() {
		i := strings.Index(sc.Text(), " /")
		if i < 0 {
			continue
		}
		path := strings.TrimSuffix(strings.TrimSpace(sc.Text()[i:]), " (deleted)")
		if b := filepath.Base(path); b == name || strings.HasPrefix(b, name+".") {
			return path, true
		}
	}
	return "", false
}

// libDirs are the dynamic loader's own directories, searched besides
// LD_LIBRARY_PATH and its cache (ldconfig -p).
var libDirs = []string{"/lib", "/usr/lib", "/lib64", "/usr/lib64"}

// FindStack finds stack s on this host as rig respond starts it: its
// launcher on PATH, else its library (a custom stack's preload too) where
// the dynamic loader finds it. launcher and preload are what to start it
// with (preload "": nothing to preload); what is missing is the error.
func FindStack(s probe.Stack) (launcher, preload string, err error) {
	info := s.Info()
	if info.Launcher != "" {
		if launcher, err = exec.LookPath(info.Launcher); err != nil {
			return "", "", fmt.Errorf("its launcher %s is not on PATH (%v)", info.Launcher, err)
		}
	}
	preload = s.Preload
	if s.Name != probe.StackCustom && info.Launcher == "" {
		preload = info.Library
	}
	if preload == "" {
		return launcher, "", nil
	}
	where, err := FindLibrary(preload)
	if err != nil {
		return "", "", err
	}
	if strings.Contains(preload, "/") {
		preload = where
	}
	return launcher, preload, nil
}

// FindLibrary finds lib as the dynamic loader would for LD_PRELOAD: a path
// as given, a name in LD_LIBRARY_PATH, the loader's cache or its
// directories.
func FindLibrary(lib string) (string, error) {
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
		if p, ok := LibraryIn(bytes.NewReader(out), lib); ok && filepath.Base(p) == lib {
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
