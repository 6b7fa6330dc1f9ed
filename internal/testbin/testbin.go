// Package testbin builds the rig binary once per test process, for tests
// that run rig as users do (separate processes, namespaces, signals).
package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	once sync.Once
	path string
	err  error
	out  []byte
)

// Rig returns the path of a freshly built rig binary (built with -race when
// the test binary is). The binary lives until the test process exits.
func Rig(t testing.TB) string {
	t.Helper()
	once.Do(func() {
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
