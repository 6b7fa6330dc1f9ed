package agent

import (
	"slices"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
)

// The telemetry's IRQ-drift watch finds the ENA queue IRQs on both arches
// (arm64's /proc/interrupts has the Edge/Level column before the names).
func TestQueueIRQsAWS(t *testing.T) {
	for tree, want := range map[string][]int{
		"c8g": {19, 20, 21, 22, 23, 24, 25, 26},
		"c7i": {28, 29, 30, 31, 32, 33, 34, 35},
	} {
		if got := queueIRQs(hostfs.FS{Root: "../hostinfo/testdata/" + tree}, "ens5"); !slices.Equal(got, want) {
			t.Errorf("%s: queue IRQs %v, want %v", tree, got, want)
		}
	}
}
