package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/testbin"
)

// kubectlScenario is a scenario whose hosts are pods reached by kubectl.
func kubectlScenario(t *testing.T, dir, snd, rsp, sndIf, rspIf string, rounds, count int) string {
	t.Helper()
	p := filepath.Join(dir, "pods.yaml")
	err := os.WriteFile(p, []byte(fmt.Sprintf(`name: pods
hosts:
  snd: {via: kubectl exec -i %s --, roles: [sender], iface: %s}
  rsp: {via: kubectl exec -i %s --, roles: [responder], iface: %s}
traffic: {group: 239.57.0.1:7570, interval: 1ms, count: %d}
timestamps: software
rounds: %d
arms:
  - name: a
    responder: {cpu: 0}
  - name: b
    responder: {cpu: 1}
`, snd, sndIf, rsp, rspIf, count, rounds)), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runRigEnv runs the rig binary with env and returns its exit code and stderr.
func runRigEnv(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(testbin.Rig(t), args...)
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

func withPath(env []string, path string) []string {
	out := []string{"PATH=" + path}
	for _, e := range env {
		if !strings.HasPrefix(e, "PATH=") {
			out = append(out, e)
		}
	}
	return out
}

// TestKubectlFailures: `rig run` on pods reached by kubectl when kubectl
// is not installed, when the pod does not exist and when exec is refused
// exits 1 (a host failure, not bad input), shows kubectl's own words, and
// changes nothing.
func TestKubectlFailures(t *testing.T) {
	testbin.Integration(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	forbidden := `Error from server (Forbidden): pods "rig-locked" is forbidden: User "alice" cannot create resource "pods/exec" in API group "" in the namespace "default"`
	kdir := netlabtest.Kubectl(t, map[string]netlabtest.Pod{
		"rig-locked": {Refuse: forbidden},
		"rig-sender": {Netns: "never-reached"},
	})
	env := append(os.Environ(), journal.EnvDir+"="+state)
	for _, c := range []struct {
		name, path, rsp string
		want            []string
	}{
		{"kubectl missing", t.TempDir(), "rig-sender", // a PATH with no kubectl at all
			[]string{`host rsp: start agent (kubectl exec -i rig-sender -- rig agent --stdio --lane rsp --run `, `"kubectl" is not on PATH`, "install kubectl on this machine"}},
		{"pod missing", kdir + ":" + os.Getenv("PATH"), "rig-nope",
			[]string{"host rsp", `Error from server (NotFound): pods "rig-nope" not found`}},
		{"exec refused", kdir + ":" + os.Getenv("PATH"), "rig-locked",
			[]string{"host rsp", forbidden}},
	} {
		t.Run(c.name, func(t *testing.T) {
			scen := kubectlScenario(t, dir, "rig-sender", c.rsp, "eth0", "eth0", 1, 100)
			code, stderr := runRigEnv(t, withPath(env, c.path), "run", "--results", filepath.Join(dir, "results"), scen)
			t.Logf("exit %d\n%s", code, stderr)
			if code != 1 {
				t.Errorf("exit %d, want 1\n%s", code, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "results")); len(ents) != 0 {
		t.Errorf("a run directory was made for runs that reached no host: %v", ents)
	}
	if err := journal.CheckPending(state); err != nil {
		t.Errorf("journal: %v", err)
	}
}

// TestKubectlAgentKilled: the agent in the sender pod is killed (-9, as an
// OOM kill does) during a round. rig run stops, takes the responder pod's
// arm back, exits 1 naming the host and showing kubectl's "command
// terminated with exit code 137", and leaves no rig process, stress-ng or
// open journal behind, in any pod.
func TestKubectlAgentKilled(t *testing.T) {
	testbin.Integration(t)
	testbin.StressNG(t)
	dir := t.TempDir()
	topo := netlabtest.New(t, netlab.Options{})
	rig := testbin.Rig(t)
	states := map[string]string{"rig-sender": filepath.Join(dir, "snd-state"), "rig-responder": filepath.Join(dir, "rsp-state")}
	kdir := netlabtest.Kubectl(t, map[string]netlabtest.Pod{
		"rig-sender":    {Netns: topo.Sender.Netns, Env: netlabtest.PodEnv("rig-sender", filepath.Dir(rig), states["rig-sender"])},
		"rig-responder": {Netns: topo.Responder.Netns, Env: netlabtest.PodEnv("rig-responder", filepath.Dir(rig), states["rig-responder"])},
	})
	scen := filepath.Join(dir, "kill.yaml")
	os.WriteFile(scen, []byte(fmt.Sprintf(`name: kill
hosts:
  snd: {via: kubectl exec -i rig-sender --, roles: [sender], iface: %s}
  rsp: {via: kubectl exec -i rig-responder --, roles: [responder], iface: %s}
traffic: {group: 239.58.0.1:7580, interval: 1ms, count: 2500}
timestamps: software
rounds: 3
arms:
  - name: loaded
    responder: {cpu: 1}
    load: {stress-ng: --cpu 1, cpus: 0}
`, topo.Sender.Interface, topo.Responder.Interface)), 0o644)
	results := filepath.Join(dir, "results")
	cmd := exec.Command(rig, "run", "--results", results, scen)
	cmd.Env = withPath(append(os.Environ(), journal.EnvDir+"="+filepath.Join(dir, "ctl-state")), kdir+":"+os.Getenv("PATH"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Once round 0 is on disk and round 1 has sent 200 requests, kill the
	// sender pod's agent.
	waitSending(t, filepath.Join(results, "kill-*", "arms", "loaded", "round-0", "sender.samples"), "239.58.0.1:7580", 200, &stderr)
	pid := agentPID(rig, "snd")
	if pid == 0 {
		t.Fatalf("no agent of host snd:\n%s", stderr.String())
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	t.Logf("rig run: %v\n%s", err, stderr.String())
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("rig run after its sender pod's agent was killed: %v, want exit 1\n%s", err, stderr.String())
	}
	for _, w := range []string{"host snd", "agent stderr: command terminated with exit code 137"} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
		}
	}
	if strings.Contains(stderr.String(), "agent stderr: Killed") {
		t.Errorf("the double's shell spoke (kubectl says only its exit code):\n%s", stderr.String())
	}
	// The orphaned sender dies on its next progress line (SIGPIPE): wait.
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		left := rigProcesses(rig)
		if len(left) == 0 && !testbin.StressNGRuns() {
			break
		}
		if time.Now().After(end) {
			t.Errorf("left behind: rig %v, stress-ng running %v", left, testbin.StressNGRuns())
			break
		}
	}
	for pod, st := range states {
		if err := journal.CheckPending(st); err != nil {
			t.Errorf("pod %s: journal: %v", pod, err)
		}
	}
	m, _ := filepath.Glob(filepath.Join(results, "kill-*", "arms", "loaded", "round-0", "responder.samples"))
	if len(m) != 1 {
		t.Errorf("the finished round 0 is not kept: %v", m)
	}
}

// agentPID finds the pid of `rig agent --stdio --lane LANE`.
func agentPID(rig, lane string) int {
	for _, p := range rigProcesses(rig) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
		if strings.Contains(string(b), "agent\x00--stdio\x00--lane\x00"+lane+"\x00") {
			return p
		}
	}
	return 0
}

// rigProcesses lists the pids running the rig binary at path.
func rigProcesses(path string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		exe, err := os.Readlink("/proc/" + e.Name() + "/exe")
		if err == nil && exe == path {
			out = append(out, pid)
		}
	}
	return out
}
