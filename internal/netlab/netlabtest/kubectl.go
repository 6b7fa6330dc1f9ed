package netlabtest

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/procfs"

	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/testbin"
)

// Pod is a pod as the kubectl test double emulates it: a network namespace
// of the emulated topology and the environment its container has.
type Pod struct {
	// Netns is the namespace the pod's commands run in.
	Netns string
	// Env is the container's whole environment (PATH, RIG_STATE_DIR, ...):
	// a command run by `kubectl exec` sees it, never kubectl's own.
	Env []string
	// Refuse, when set, makes exec into the pod fail as the API server
	// does (RBAC, admission): this text on stderr, exit 1.
	Refuse string
	// Cgroups are the pod's cgroup v1 directories (PodCgroups): its
	// commands join them, and see each, as runc mounts it, read-only at
	// /sys/fs/cgroup/<controllers>. Without any, the commands see this
	// host's cpu and cpuset hierarchies whole.
	Cgroups []string
	// Caps are the capabilities the container keeps (PodCaps), every
	// other one dropped; nil keeps root's (a privileged container).
	Caps []string
	// Privileged makes the container as the host agent's manifest does
	// (privileged, hostPID): in the host's PID namespace, with /sys and
	// /proc writable and the host's /dev; Cgroups and Caps must be
	// unset. The node's knobs then go to what RIG_HOST_ROOT in Env names.
	Privileged bool
}

// PodCaps are the capabilities the rig pods of deploy/kubernetes add
// after dropping all (its tests hold the manifests to this list).
var PodCaps = []string{"NET_RAW", "NET_ADMIN", "SYS_NICE"}

// Kubectl writes a kubectl test double into a new directory and returns
// the directory, to put first on PATH. It emulates what rig uses of
// kubectl — `kubectl exec [-i] [-c C] [-n NS] POD -- CMD...` — with the
// behaviour of a real cluster that rig depends on:
//   - argument handling: -i passes stdin (without it CMD reads /dev/null);
//     everything after -- is CMD, untouched; a missing pod, a missing --
//     or an unknown flag fail with kubectl's messages and exit 1;
//   - CMD runs in the pod's network namespace with only the pod's
//     environment, its stdin and stdout relayed as a byte stream;
//   - exit codes: kubectl exits with CMD's code and says "command
//     terminated with exit code N" on stderr when N ≠ 0 (137 for a
//     SIGKILL: an agent killed in its pod);
//   - CMD runs in a session of its own: killing kubectl does not kill it;
//     it sees its stdin close, as an exec'd process does when the stream
//     goes;
//   - CMD runs in a container, as runc makes one for the pod's manifest:
//     in the pod's cgroups (Cgroups, bind-mounted read-only at
//     /sys/fs/cgroup/<controllers>, so /proc/self/cgroup names a path
//     the mounts' roots hold), in a PID namespace of its own with its own
//     /proc, with /sys, /proc/irq, /proc/sys, /proc/bus, /proc/fs and
//     /proc/sysrq-trigger read-only, a /dev of its own with the usual
//     devices only (no /dev/cpu/*/msr, /dev/cpu_dma_latency, /dev/ptp*),
//     a temporary directory of its own (TMPDIR), and only the pod's
//     capabilities (Caps: bounding, effective and permitted; none
//     inheritable or ambient);
//   - a Privileged pod (the host agent) is not confined but to its network
//     namespace: the host's PIDs, /proc, /dev and capabilities, a writable
//     /sys.
//
// Unlike a pod, whose execs share one PID namespace under the image's
// init, each exec has a namespace of its own whose init is a shell: what
// CMD leaves running there ends with it.
//
// Pods not in pods are "not found"; a Pod with Refuse is refused.
func Kubectl(t testing.TB, pods map[string]Pod) string {
	t.Helper()
	dir := t.TempDir()
	names := make([]string, 0, len(pods))
	for n := range pods {
		names = append(names, n)
	}
	sort.Strings(names)
	var cases strings.Builder
	for _, n := range names {
		p := pods[n]
		if p.Refuse != "" {
			fmt.Fprintf(&cases, "  %s) echo %s >&2; exit 1 ;;\n", shq(n), shq(p.Refuse))
			continue
		}
		// A temporary directory of its own: a pod's /tmp is its image's,
		// not the node's (agents of other pods remove work directories
		// whose owner they cannot see).
		tmp := filepath.Join(dir, "tmp-"+n)
		if err := os.Mkdir(tmp, 0o1777); err != nil {
			t.Fatal(err)
		}
		env := []string{shq("TMPDIR=" + tmp)}
		for _, e := range p.Env {
			env = append(env, shq(e))
		}
		var join strings.Builder
		for _, d := range p.Cgroups {
			fmt.Fprintf(&join, " echo $$ > %s || { echo 'kubectl double: cannot join cgroup %s' >&2; exit 1; };", shq(d+"/cgroup.procs"), d)
		}
		// A container of its own: PID namespace, /proc, mounts.
		var err error
		ns, setup := "unshare --pid --fork --mount-proc --propagation private", ""
		if p.Privileged {
			if p.Caps != nil || p.Cgroups != nil {
				t.Fatalf("kubectl double: pod %s: a privileged pod keeps every capability and the host's cgroups", n)
			}
			ns, setup = "", ":;" // hostPID; ip netns exec's own /sys, writable
		} else if setup, err = container(p); err != nil {
			t.Fatalf("kubectl double: pod %s: %v", n, err)
		}
		fmt.Fprintf(&cases, "  %s)%s netns=%s; ns=%s; setup=%s; set -- %s env -i %s \"$@\" ;;\n", shq(n), join.String(), shq(p.Netns), shq(ns), shq(setup), privs(p.Caps), strings.Join(env, " "))
	}
	script := `#!/bin/sh
# kubectl test double (rig tests): emulates kubectl exec for pods that are
# network namespaces of an emulated topology. See netlabtest.Kubectl.
if [ "$1" != exec ]; then
  echo "error: unknown command \"$1\" for \"kubectl\" (this test double emulates exec only)" >&2
  exit 1
fi
shift
stdin=0
pod=
while [ $# -gt 0 ]; do
  case $1 in
    -i|--stdin) stdin=1 ;;
    -c|--container|-n|--namespace)
      if [ $# -lt 2 ]; then echo "error: flag needs an argument: $1" >&2; exit 1; fi
      shift ;;
    --container=*|--namespace=*) ;;
    --) shift; break ;;
    -*) echo "error: unknown flag: $1" >&2; echo "See 'kubectl exec --help' for usage." >&2; exit 1 ;;
    *)
      if [ -n "$pod" ]; then
        echo "error: exec [POD] [COMMAND] is not supported anymore. Use exec [POD] -- [COMMAND] instead" >&2
        exit 1
      fi
      pod=$1 ;;
  esac
  shift
done
if [ -z "$pod" ]; then echo "error: pod, type/name or --filename must be specified" >&2; exit 1; fi
if [ $# -eq 0 ]; then echo "error: you must specify at least one command for the container" >&2; exit 1; fi
pod=${pod#pod/}
case $pod in
` + cases.String() + `  *) echo "Error from server (NotFound): pods \"$pod\" not found" >&2; exit 1 ;;
esac
if [ "$stdin" = 0 ]; then exec </dev/null; fi
# The shell's own stderr goes nowhere (dash says "Killed" of a child killed
# by a signal; kubectl does not): the command's and kubectl's messages go
# to fd 3. In the background with wait, so that the shell's stderr is
# /dev/null while it waits; stdin is passed on explicitly (fd 4). The
# container's init is a shell that sets it up and waits for CMD (not
# exec: CMD is not PID 1, as it is not in a pod), its own stderr gone too
# (dash would say "Killed" on the stderr of a command redirected in place:
# hence the subshell).
exec 3>&2 4<&0 2>/dev/null
setsid ip netns exec "$netns" $ns \
  sh -c "$setup"' exec 5>&2 2>/dev/null; (exec "$@") 2>&5 5>&-' kubectl-exec "$@" <&4 4<&- 2>&3 3>&- &
wait $!
rc=$?
if [ "$rc" -ne 0 ]; then echo "command terminated with exit code $rc" >&3; fi
exit "$rc"
`
	if err := os.WriteFile(filepath.Join(dir, "kubectl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// privs is the command that keeps only caps (nil: all of root's).
func privs(caps []string) string {
	if caps == nil {
		return ""
	}
	l := "-all"
	for _, c := range caps {
		l += ",+" + strings.ToLower(c)
	}
	return "setpriv --bounding-set " + l + " --inh-caps -all --ambient-caps -all"
}

// PodEnv is the environment of a container that has rig: PATH with rig's
// directory first, a state directory of its own (a pod's filesystem is
// its own), the variables the kubelet sets in every container, and, as
// the manifests' downward API gives them, the container's requests and
// limits (PodResources; none: nil). The race runtime's options are the
// test's, as testbin.Rig set them for its rig.
func PodEnv(name, rigDir, stateDir string, res ...string) []string {
	return append([]string{
		"PATH=" + rigDir + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOSTNAME=" + name, "HOME=/root",
		"KUBERNETES_SERVICE_HOST=10.96.0.1", "KUBERNETES_SERVICE_PORT=443",
		"RIG_STATE_DIR=" + stateDir, testbin.EnvRace + "=" + os.Getenv(testbin.EnvRace),
	}, res...)
}

// PodResources are the downward API's variables of a container with
// these requests and limits (CPU in millicores, memory in bytes).
func PodResources(cpuReq, cpuLim, memReq, memLim int64) []string {
	return []string{
		hostinfo.EnvCPURequest + "=" + strconv.FormatInt(cpuReq, 10), hostinfo.EnvCPULimit + "=" + strconv.FormatInt(cpuLim, 10),
		hostinfo.EnvMemRequest + "=" + strconv.FormatInt(memReq, 10), hostinfo.EnvMemLimit + "=" + strconv.FormatInt(memLim, 10),
	}
}

const fail = ` || { echo "kubectl double: cannot set up the container" >&2; exit 1; };`

// container is the shell that makes the container's mounts, run as the
// init of its PID and mount namespaces (before the capabilities drop).
func container(p Pod) (string, error) {
	var b strings.Builder
	cg, err := cgroupMounts(p.Cgroups)
	if err != nil {
		return "", err
	}
	b.WriteString(cg)
	// A /dev of its own: the runtime's default devices, nothing else.
	b.WriteString(" mount -t tmpfs -o mode=755,nosuid dev /dev" + fail)
	for _, d := range [][3]string{{"null", "1", "3"}, {"zero", "1", "5"}, {"full", "1", "7"}, {"random", "1", "8"}, {"urandom", "1", "9"}, {"tty", "5", "0"}} {
		b.WriteString(" mknod -m 666 /dev/" + d[0] + " c " + d[1] + " " + d[2] + fail)
	}
	b.WriteString(" ln -s /proc/self/fd /dev/fd && ln -s /proc/self/fd/0 /dev/stdin && ln -s /proc/self/fd/1 /dev/stdout && ln -s /proc/self/fd/2 /dev/stderr" + fail)
	b.WriteString(" mkdir /dev/shm && mount -t tmpfs -o mode=1777,nosuid,nodev shm /dev/shm" + fail)
	// Read-only as the kubelet's defaults have them (a bind remount:
	// this mount only, never the file system). /sys is a mount already
	// (ip netns exec's); a bind of it would hide the cgroup mounts.
	b.WriteString(" mount -o remount,bind,ro /sys" + fail)
	for _, ro := range []string{"/proc/irq", "/proc/sys", "/proc/bus", "/proc/fs", "/proc/sysrq-trigger"} {
		fmt.Fprintf(&b, " if [ -e %[1]s ]; then mount --bind %[1]s %[1]s && mount -o remount,bind,ro %[1]s%s fi;", ro, fail)
	}
	return b.String(), nil
}

// cgroupMounts mounts a tmpfs at /sys/fs/cgroup (ip netns exec gives the
// command a fresh /sys without the hierarchies) and, for each of dirs, as
// runc does for a cgroup v1 container, the directory itself read-only at
// /sys/fs/cgroup/<its hierarchy's controllers> (with a link per
// controller of a comounted hierarchy): the mount's root is the
// directory. Without dirs, the host's cpu and cpuset hierarchies whole
// (or the unified one).
func cgroupMounts(dirs []string) (string, error) {
	const root = "/sys/fs/cgroup"
	ms, err := procfs.GetMounts()
	if err != nil {
		return "", err
	}
	if len(dirs) == 0 {
		if _, err := os.Stat(root + "/cgroup.controllers"); err == nil {
			return "mount -t cgroup2 cgroup2 " + root + fail, nil
		}
	}
	cmds := "mount -t tmpfs -o mode=755 cgroup_root " + root + fail + " mkdir " + root + "/.h" + fail
	var binds []string
	add := func(m *procfs.MountInfo, rel string) {
		var ctrls []string
		for k, v := range m.SuperOptions {
			if v == "" && k != "rw" && k != "ro" && k != "xattr" && !strings.HasPrefix(k, "no") {
				ctrls = append(ctrls, k)
			}
		}
		sort.Strings(ctrls)
		opts := strings.Join(ctrls, ",")
		mp := root + "/" + filepath.Base(m.MountPoint)
		cmds += fmt.Sprintf(" mount -t cgroup -o %s cgroup %s/.h && mkdir %s && mount --bind %s/.h%s %s && umount %s/.h%s", opts, root, mp, root, rel, mp, root, fail)
		for _, c := range ctrls {
			if c != filepath.Base(mp) && len(ctrls) > 1 {
				cmds += " ln -s " + filepath.Base(mp) + " " + root + "/" + c + fail
			}
		}
		binds = append(binds, mp)
	}
	for _, m := range ms {
		if m.FSType != "cgroup" || !strings.HasPrefix(m.MountPoint, root+"/") {
			continue
		}
		_, cpu := m.SuperOptions["cpu"]
		_, set := m.SuperOptions["cpuset"]
		if len(dirs) == 0 && (cpu || set) {
			add(m, "")
		}
		for _, d := range dirs {
			if d == m.MountPoint || strings.HasPrefix(d, m.MountPoint+"/") {
				add(m, strings.TrimPrefix(d, m.MountPoint))
			}
		}
	}
	if len(binds) < len(dirs) {
		return "", fmt.Errorf("cgroups %v: not all below a cgroup v1 hierarchy mounted here", dirs)
	}
	cmds += " rmdir " + root + "/.h" + fail
	for _, mp := range binds {
		cmds += " mount -o remount,bind,ro " + mp + fail
	}
	return cmds + " mount -o remount,ro " + root + fail, nil
}

// PodLimits are what the kubelet sets in a pod's cgroups.
type PodLimits struct {
	// CPUs is the cpuset: the exclusive CPUs a Guaranteed pod gets from
	// the static CPU manager, or the shared pool.
	CPUs string
	// QuotaUS is the CFS quota per 100 ms period (a CPU limit on a
	// kubelet before 1.33); 0: none.
	QuotaUS int64
}

// PodCgroups makes a pod's cgroup v1 directories — one in the cpuset
// hierarchy (CPUs) and one in the cpu hierarchy (QuotaUS) — and returns
// them for Pod.Cgroups. They are removed when the test ends (failing the
// test if a process is still in one). On a host without the v1 cpuset and
// cpu controllers the test is skipped.
func PodCgroups(t testing.TB, name string, l PodLimits) []string {
	t.Helper()
	const setRoot, cpuRoot = "/sys/fs/cgroup/cpuset", "/sys/fs/cgroup/cpu"
	for _, f := range []string{setRoot + "/cpuset.cpus", cpuRoot + "/cpu.cfs_quota_us"} {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("no cgroup v1 cpuset and cpu controllers here for a pod (%v)", err)
		}
	}
	base := fmt.Sprintf("rig-test-pod-%s-%d", name, os.Getpid())
	dirs := []string{filepath.Join(setRoot, base), filepath.Join(cpuRoot, base)}
	for _, d := range dirs {
		t.Cleanup(func() {
			if err := os.Remove(d); err != nil && !os.IsNotExist(err) {
				b, _ := os.ReadFile(d + "/cgroup.procs")
				t.Errorf("removing pod cgroup %s: %v (processes still in it: %q)", d, err, strings.Fields(string(b)))
			}
		})
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mems, err := os.ReadFile(setRoot + "/cpuset.mems")
	if err != nil {
		t.Fatal(err)
	}
	quota := "-1"
	if l.QuotaUS > 0 {
		quota = strconv.FormatInt(l.QuotaUS, 10)
	}
	for _, kv := range [][3]string{{dirs[0], "cpuset.cpus", l.CPUs}, {dirs[0], "cpuset.mems", strings.TrimSpace(string(mems))},
		{dirs[1], "cpu.cfs_period_us", "100000"}, {dirs[1], "cpu.cfs_quota_us", quota}} {
		if err := os.WriteFile(filepath.Join(kv[0], kv[1]), []byte(kv[2]), 0o644); err != nil {
			t.Fatalf("pod cgroup %s: %s = %s: %v", kv[0], kv[1], kv[2], err)
		}
	}
	return dirs
}

// shq quotes s for sh.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
