package netlabtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/netlab"
)

// What a command run through the kubectl double sees is a container's
// view, as runc makes it for the rig pods' manifests: its cgroup v1
// directories mounted read-only at /sys/fs/cgroup/<controllers> (the
// mount's root is the pod's cgroup, which /proc/self/cgroup names), a PID
// namespace and /proc of its own, /sys and /proc/irq read-only, a /dev
// without cpu_dma_latency, and only the pod's capabilities.
func TestKubectlIsAContainer(t *testing.T) {
	topo := New(t, netlab.Options{})
	cg := PodCgroups(t, "view", PodLimits{CPUs: "0", QuotaUS: 30000})
	kdir := Kubectl(t, map[string]Pod{"rig-pod": {Netns: topo.Responder.Netns, Env: PodEnv("rig-pod", "/nonexistent", t.TempDir()), Cgroups: cg, Caps: PodCaps}})
	base := filepath.Base(cg[0])
	script := `set -e
readlink /proc/self/ns/pid
grep -E '^(CapEff|CapBnd|CapInh|CapAmb|Cpus_allowed_list):' /proc/self/status
grep ' cgroup ' /proc/self/mountinfo
grep -E ':(cpu|cpuset):' /proc/self/cgroup
cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpuset/cpuset.effective_cpus
for f in /sys/kernel/mm/transparent_hugepage/enabled /proc/irq/default_smp_affinity /sys/fs/cgroup/cpu/cpu.cfs_quota_us; do
  if (echo x > $f) 2>/dev/null; then echo "writable $f"; else echo "read-only $f"; fi
done
[ -e /dev/cpu_dma_latency ] && echo "has cpu_dma_latency" || echo "no cpu_dma_latency"
[ -c /dev/null ] && echo "has /dev/null"
echo "$(ls /proc | grep -c '^[0-9]') processes"
`
	out, err := exec.Command(filepath.Join(kdir, "kubectl"), "exec", "rig-pod", "--", "sh", "-c", script).CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatal(err)
	}
	o := string(out)
	// 0x3000 = CAP_NET_ADMIN (12) | CAP_NET_RAW (13); 1<<23 = CAP_SYS_NICE.
	caps := fmt.Sprintf("%016x", 1<<12|1<<13|1<<23)
	for _, want := range []string{
		"CapEff:\t" + caps, "CapBnd:\t" + caps, "CapInh:\t0000000000000000", "CapAmb:\t0000000000000000", "Cpus_allowed_list:\t0\n",
		"/" + base + " /sys/fs/cgroup/cpu ro,", "/" + base + " /sys/fs/cgroup/cpuset ro,",
		":cpu:/" + base + "\n", ":cpuset:/" + base + "\n", "30000\n0\n",
		"read-only /sys/kernel/mm/transparent_hugepage/enabled", "read-only /proc/irq/default_smp_affinity", "read-only /sys/fs/cgroup/cpu/cpu.cfs_quota_us",
		"no cpu_dma_latency", "has /dev/null",
	} {
		if !strings.Contains(o, want) {
			t.Errorf("the container's view lacks %q", want)
		}
	}
	var procs int
	if _, err := fmt.Sscanf(o[strings.LastIndex(o, "has /dev/null\n")+len("has /dev/null\n"):], "%d processes", &procs); err != nil || procs > 6 || strings.Contains(o, "pid:[4026531836]") {
		t.Errorf("the command does not run in a PID namespace of its own (%d processes in its /proc: %v)", procs, err)
	}
	// Nothing leaked out of the container's mount namespace.
	if b, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(b), base) {
		t.Errorf("the pod's cgroup mounts are on the host:\n%s", b)
	}
}

// The host agent's pod (privileged, hostPID) is confined only to its
// network namespace: the host's PID namespace, every capability, /sys
// mounted writable, the host's /dev. Nothing is written to find out.
func TestKubectlPrivilegedHostAgent(t *testing.T) {
	topo := New(t, netlab.Options{})
	kdir := Kubectl(t, map[string]Pod{"rig-host-agent": {Netns: topo.Responder.Netns, Env: PodEnv("rig-host-agent", "/nonexistent", t.TempDir()), Privileged: true}})
	script := `readlink /proc/self/ns/pid /proc/self/ns/net
grep -E '^CapEff:' /proc/self/status
awk '$5 == "/sys" { print "/sys " $6 }' /proc/self/mountinfo
[ -e /dev/cpu_dma_latency ] && echo "has cpu_dma_latency" || echo "no cpu_dma_latency"
`
	out, err := exec.Command(filepath.Join(kdir, "kubectl"), "exec", "-i", "rig-host-agent", "--", "sh", "-c", script).CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatal(err)
	}
	own := func(ns string) string { l, _ := os.Readlink("/proc/self/ns/" + ns); return l }
	all, _ := os.ReadFile("/proc/self/status")
	var capEff string
	for _, l := range strings.Split(string(all), "\n") {
		if strings.HasPrefix(l, "CapEff:") {
			capEff = l
		}
	}
	_, dma := os.Stat("/dev/cpu_dma_latency")
	wantDMA := map[bool]string{true: "has cpu_dma_latency", false: "no cpu_dma_latency"}[dma == nil]
	o := string(out)
	for _, want := range []string{own("pid") + "\n", capEff + "\n", "/sys rw", wantDMA} {
		if !strings.Contains(o, want) {
			t.Errorf("the host agent's view lacks %q", want)
		}
	}
	if strings.Contains(o, own("net")) {
		t.Errorf("the host agent runs in this network namespace, not the pod's")
	}
}
