package round

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/testbin"
)

// TestPcapDiskFull: a round directory with room for capture.samples and
// not for capture.pcap (4000 frames of 122 B) fails the round with an
// error naming capture.pcap, and leaves no part of it behind.
func TestPcapDiskFull(t *testing.T) {
	testbin.Integration(t)
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "rig-pcap-test", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	topo := netlabtest.New(t, netlab.Options{})
	var log bytes.Buffer
	spec := labSpec(t, topo, agents(t, topo, &log), true)
	spec.Dir, spec.Pcap, spec.Send.Count, spec.Send.Interval = dir, true, 2000, 200*time.Microsecond
	_, err := Run(context.Background(), spec)
	path := filepath.Join(dir, rundir.PcapFile)
	if err == nil || !strings.Contains(err.Error(), path+": ") || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("round on a full disk: %v\nlog:\n%s", err, log.String())
	}
	t.Logf("the round said: %v", err)
	if _, err := os.Stat(filepath.Join(dir, samples.FileName(samples.RoleCapture))); err != nil {
		t.Errorf("capture.samples, which fits: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), rundir.PcapFile) {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}
