package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostfs/hostfstest"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/testbin"
)

// copyFixture copies a fixture host tree (symlinks kept) to a temporary
// directory and writes the files in extra over it.
func copyFixture(t *testing.T, tree string, extra map[string]string) string {
	t.Helper()
	dst := hostfstest.CopyTree(t, filepath.Join("../../internal/hostinfo/testdata", tree))
	for p, v := range extra {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, p), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// rigOut runs the rig binary with env added and returns its exit code and
// combined output.
func rigOut(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(testbin.Rig(t), args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatalf("rig %v: %v", args, err)
	}
	return 0, string(out)
}

// TestAWSRunbookCommands runs the commands of docs/aws.md that can run
// here, against the c7i and c8g fixture trees: the sender's dry run of each
// AWS scenario (the responder is remote: checked by its agent when the run
// starts), rig check on the responder as the runbook boots it, and the
// AWS-style mirror lab (rig lab up --mirror vxlan).
func TestAWSRunbookCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the rig binary")
	}
	doc, err := os.ReadFile("../../docs/aws.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"sudo rig run --dry-run scenarios/aws-c7i.yaml", "sudo rig check --cpu 3 --iface ens6",
		"sudo rig respond --iface ens6 --listen 10.32.16.20:9000 --run-id $RUN", "sudo rig send --iface ens6 --to 10.32.16.20:9000 --run-id $RUN",
		"sudo rig capture --iface ens6 --to 10.32.16.20:9000 --vxlan --vni 4242 --run-id $RUN", "rig check --iface ens6 --multicast"} {
		if !strings.Contains(string(doc), cmd) {
			t.Errorf("docs/aws.md no longer shows %q: update this test with it", cmd)
		}
	}
	// The c8g pair as the runbook wires it: a second ENI, ens6.
	c8g := copyFixture(t, "c8g", map[string]string{"sys/devices/pci0000:00/0000:00:06.0/net/ens6/operstate": "up\n"})
	if err := os.Symlink("../../devices/pci0000:00/0000:00:06.0/net/ens6", filepath.Join(c8g, "sys/class/net/ens6")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, root string }{
		{"aws-c7i.yaml", "../../internal/hostinfo/testdata/c7i"},
		{"aws-c8g.yaml", c8g},
	} {
		code, out := rigOut(t, []string{"RIG_HOST_ROOT=" + c.root}, "run", "--dry-run", "../../scenarios/"+c.file)
		for _, w := range []string{"traffic: requests unicast to the responder's address on ens6, port 9000 (not checked here",
			"note: facts of host rsp were not checked", "rsp          via ssh rsp sudo", "coalescing: ethtool -C ens6 adaptive-rx off rx-usecs 0"} {
			if code != 0 || !strings.Contains(out, w) {
				t.Errorf("rig run --dry-run %s: exit %d, lacks %q:\n%s", c.file, code, w, out)
			}
		}
	}
	// rig check on the responder booted as the runbook says (its NIC lines
	// ask this machine's kernel, which has no ens6: they fail here).
	c7i := copyFixture(t, "c7i", map[string]string{
		"proc/cmdline":                     "BOOT_IMAGE=/boot/vmlinuz root=UUID=0c1a2b3c ro isolcpus=domain,managed_irq,3,7 nohz_full=3,7 rcu_nocbs=3,7 irqaffinity=0-2,4-6\n",
		"sys/devices/system/cpu/isolated":  "3,7\n",
		"sys/devices/system/cpu/nohz_full": "3,7\n",
	})
	code, out := rigOut(t, nil, "check", "--host-root", c7i, "--cpu", "3", "--iface", "ens6", "--multicast", "--window", "10ms")
	for _, w := range []string{"ok    isolcpus             CPU 3 is isolated", "ok    nohz_full", "ok    rcu_nocbs",
		"warn  net.igmp             Amazon EC2 c7i.2xlarge, multicast requests on ens6: IGMPv3 in force", "FAIL  nic.hwts             interface ens6 does not exist"} {
		if code != 4 || !strings.Contains(out, w) {
			t.Errorf("rig check: exit %d, lacks %q:\n%s", code, w, out)
		}
	}
	// The AWS-style mirror lab, by its CLI.
	testbin.Integration(t)
	name := netlab.UniqueName("aws")
	t.Cleanup(func() { _ = netlab.Down(name) })
	if err := runLab(context.Background(), []string{"up", "--mirror", "vxlan", "--name", name}); err != nil {
		t.Fatalf("rig lab up --mirror vxlan: %v", err)
	}
	topo, err := netlab.Load(name)
	if err != nil || topo.VXLAN == nil || topo.VXLAN.VNI != netlab.MirrorVNI || topo.Check() != nil {
		t.Fatalf("vxlan lab: %+v %v", topo, err)
	}
	if err := runLab(context.Background(), []string{"up", "--name", name}); err == nil || !strings.Contains(err.Error(), "vxlan mirror true") {
		t.Errorf("a plain lab over a vxlan one: %v", err)
	}
	if err := runLab(context.Background(), []string{"down", "--name", name}); err != nil {
		t.Fatal(err)
	}
}
