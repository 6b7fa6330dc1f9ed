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

var (
	nativeOnce sync.Once
	nativeDir  string
	nativeErr  error
	nativeOut  []byte
)

// Native builds the native engine and its test tools once per test
// process, as `make native-test` does, and returns their directory:
// rig-respond-native and rig-send-native, san/ (both under ASan and UBSan),
// rig-wire-check (under both too), seccomp-exec and librig-interpose.so.
// It needs make and a C compiler (make deps installs gcc).
func Native(t testing.TB) string {
	t.Helper()
	nativeOnce.Do(func() {
		if nativeDir, nativeErr = os.MkdirTemp("", "rig-native-"); nativeErr != nil {
			return
		}
		_, file, _, _ := runtime.Caller(0)
		cmd := exec.Command("make", "-s", "--no-print-directory", "native-test", "NATIVE_OUT="+nativeDir)
		cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..")
		// Not the jobserver of a make that runs the tests.
		for _, e := range os.Environ() {
			if k, _, _ := strings.Cut(e, "="); k != "MAKEFLAGS" && k != "MFLAGS" && k != "MAKELEVEL" {
				cmd.Env = append(cmd.Env, e)
			}
		}
		nativeOut, nativeErr = cmd.CombinedOutput()
	})
	if nativeErr != nil {
		t.Fatalf("building the native engine (make native-test; it needs make and gcc: make deps installs them): %v\n%s", nativeErr, nativeOut)
	}
	return nativeDir
}
