package testbin

import (
	"os"
	"os/exec"
	"testing"

	"github.com/rig-project/rig/internal/load"
)

// Integration skips t under -short and when not root: the integration
// tests build network namespaces and change host settings.
func Integration(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test (-short)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces, host settings)")
	}
}

// StressNG skips t when stress-ng is missing, or when a stress-ng that is
// not the test's own runs already (the test could not prove that its own
// load was stopped).
func StressNG(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("stress-ng"); err != nil {
		t.Skip("stress-ng not installed (make deps installs it)")
	}
	if load.Alive() {
		t.Skip("a stress-ng from elsewhere is running; cannot prove the test's own load stops")
	}
}
