// Package testbin builds the rig binary once per test process, for tests
// that run rig as users do (separate processes, namespaces, signals).
package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// EnvRace holds the race runtime's options for the processes of a
// race-built binary.
const EnvRace = "GORACE"

var (
	once sync.Once
	path string
	err  error
	out  []byte
)

// Rig returns the path of a freshly built rig binary (built with -race when
// the test binary is). The binary lives until the test process exits.
// Built with -race, its processes started from here on exit as a plain
// rig does: without the race runtime's second of grace at exit
// (GORACE atexit_sleep_ms), which every round paid per process.
func Rig(t testing.TB) string {
	t.Helper()
	once.Do(func() {
		if o := os.Getenv(EnvRace); raceEnabled && !strings.Contains(o, "atexit_sleep_ms") {
			os.Setenv(EnvRace, strings.TrimSpace(o+" atexit_sleep_ms=0"))
		}
		dir, e := os.MkdirTemp("", "rig-testbin-")
		if e != nil {
			err = e
			return
		}
		path = filepath.Join(dir, "rig")
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		args := []string{"build", "-o", path}
		if raceEnabled {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, "./cmd/rig")...)
		cmd.Dir = root
		out, err = cmd.CombinedOutput()
	})
	if err != nil {
		t.Fatalf("building rig: %v\n%s", err, out)
	}
	return path
}
