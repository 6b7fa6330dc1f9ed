package netlabtest

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
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
	// Cgroups are cgroup directories (PodCgroup) the pod's commands join,
	// as a container's processes live in its cgroup: its cpuset is what
	// they may run on.
	Cgroups []string
}

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
//   - CMD sees its cgroup: the pod's Cgroups are joined first, and the
//     host's cpu and cpuset hierarchies are mounted again inside the
//     namespace's own mount namespace (ip netns exec gives it a fresh
//     /sys without them), as a container sees /sys/fs/cgroup.
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
		env := make([]string, len(p.Env))
		for i, e := range p.Env {
			env[i] = shq(e)
		}
		var join strings.Builder
		for _, d := range p.Cgroups {
			fmt.Fprintf(&join, " echo $$ > %s || { echo 'kubectl double: cannot join cgroup %s' >&2; exit 1; };", shq(d+"/cgroup.procs"), d)
		}
		fmt.Fprintf(&cases, "  %s)%s netns=%s; set -- env -i %s \"$@\" ;;\n", shq(n), join.String(), shq(p.Netns), strings.Join(env, " "))
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
# /dev/null while it waits; stdin is passed on explicitly (fd 4).
exec 3>&2 4<&0 2>/dev/null
setsid ip netns exec "$netns" sh -c '` + cgroupMounts() + ` exec "$@"' kubectl-exec "$@" <&4 4<&- 2>&3 3>&- &
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

// PodEnv is the environment of a container that has rig: PATH with rig's
// directory first, a state directory of its own (a pod's filesystem is
// its own), and the variables the kubelet sets in every container.
func PodEnv(name, rigDir, stateDir string) []string {
	return []string{
		"PATH=" + rigDir + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOSTNAME=" + name, "HOME=/root",
		"KUBERNETES_SERVICE_HOST=10.96.0.1", "KUBERNETES_SERVICE_PORT=443",
		"RIG_STATE_DIR=" + stateDir,
	}
}

// cgroupMounts are the commands that mount this host's cgroup hierarchies
// under /sys/fs/cgroup again (the unified one, or the v1 cpu and cpuset
// ones), each failure fatal, in the double's private mount namespace.
func cgroupMounts() string {
	const root = "/sys/fs/cgroup"
	fail := ` || { echo "kubectl double: cannot mount cgroups" >&2; exit 1; };`
	if _, err := os.Stat(root + "/cgroup.controllers"); err == nil {
		return "mount -t cgroup2 cgroup2 " + root + fail
	}
	cmds := "mount -t tmpfs cgroup_root " + root + fail
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		n := e.Name()
		if !strings.Contains(","+n+",", ",cpu,") && !strings.Contains(","+n+",", ",cpuset,") {
			continue
		}
		if l, err := os.Readlink(filepath.Join(root, n)); err == nil {
			cmds += " ln -s " + l + " " + root + "/" + n + fail
			continue
		}
		cmds += " mkdir " + root + "/" + n + " && mount -t cgroup -o " + n + " cgroup " + root + "/" + n + fail
	}
	return cmds
}

// PodCgroup makes a cgroup v1 cpuset of cpus for a pod — the exclusive
// CPUs a Guaranteed pod gets from the static CPU manager — and returns its
// directory for Pod.Cgroups. It is removed when the test ends (failing the
// test if a process is still in it). On a host without the v1 cpuset
// controller the test is skipped.
func PodCgroup(t testing.TB, name, cpus string) string {
	t.Helper()
	const root = "/sys/fs/cgroup/cpuset"
	if _, err := os.Stat(root + "/cpuset.cpus"); err != nil {
		t.Skipf("no cgroup v1 cpuset controller here for a pinned pod (%v)", err)
	}
	d := filepath.Join(root, fmt.Sprintf("rig-test-pod-%s-%d", name, os.Getpid()))
	t.Cleanup(func() {
		if err := os.Remove(d); err != nil && !os.IsNotExist(err) {
			b, _ := os.ReadFile(d + "/cgroup.procs")
			t.Errorf("removing pod cgroup %s: %v (processes still in it: %q)", d, err, strings.Fields(string(b)))
		}
	})
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	mems, err := os.ReadFile(root + "/cpuset.mems")
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{{"cpuset.cpus", cpus}, {"cpuset.mems", strings.TrimSpace(string(mems))}} {
		if err := os.WriteFile(filepath.Join(d, kv[0]), []byte(kv[1]), 0o644); err != nil {
			t.Fatalf("pod cgroup %s: %s = %s: %v", d, kv[0], kv[1], err)
		}
	}
	return d
}

// shq quotes s for sh.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
