package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/cpurank"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/load"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/scenario"
	"github.com/rig-project/rig/internal/testbin"
)

// kubectlLab builds an emulated topology whose namespaces stand for pods,
// and a kubectl test double on PATH that reaches them: rig-sender,
// rig-capture, and every name in responders for the responder namespace.
// Each pod has a state directory of its own under dir; cgroups gives a
// pod the cgroup directories its processes join.
func kubectlLab(t *testing.T, dir string, cgroups map[string][]string, responders ...string) (*netlab.Topology, map[string]string) {
	t.Helper()
	topo := netlabtest.New(t, netlab.Options{})
	rigDir := filepath.Dir(testbin.Rig(t))
	state := map[string]string{}
	pods := map[string]netlabtest.Pod{}
	add := func(name, ns string) {
		state[name] = filepath.Join(dir, "pods", name, "state")
		pods[name] = netlabtest.Pod{Netns: ns, Env: netlabtest.PodEnv(name, rigDir, state[name]), Cgroups: cgroups[name]}
	}
	add("rig-sender", topo.Sender.Netns)
	add("rig-capture", topo.Capture.Netns)
	for _, r := range responders {
		add(r, topo.Responder.Netns)
	}
	t.Setenv("PATH", netlabtest.Kubectl(t, pods)+":"+os.Getenv("PATH"))
	return topo, state
}

// TestRunOverKubectl runs a whole scenario whose three hosts are reached by
// `kubectl exec -i POD --` (the kubectl test double: each pod is a
// namespace of the emulated topology, with the container's environment
// only), with require-check and a quietest arm, and checks every round,
// the pods' environment snapshots and that every pod's journal is closed.
func TestRunOverKubectl(t *testing.T) {
	testbin.Integration(t)
	testbin.StressNG(t)
	dir := t.TempDir()
	topo, state := kubectlLab(t, dir, nil, "rig-responder")
	yaml := `name: kubectl
hosts:
  snd: {via: kubectl exec -i rig-sender --, roles: [sender], iface: ` + topo.Sender.Interface + `}
  rsp: {via: kubectl exec -i rig-responder --, roles: [responder], iface: ` + topo.Responder.Interface + `}
  cap: {via: kubectl exec -i -c rig rig-capture --, roles: [capture], iface: ` + topo.Capture.Interface + `}
traffic: {group: 239.56.0.1:7560, interval: 1ms, count: 400}
timestamps: software
rounds: 2
require-check: true
arms:
  - name: cpu0
    responder: {cpu: 0, poll: block}
  - name: quietest
    responder: {cpu: {quietest: allowed, window: 300ms}, poll: busy}
    load: {stress-ng: --cpu 1, cpus: 0}
`
	path := filepath.Join(dir, "kubectl.yaml")
	os.WriteFile(path, []byte(yaml), 0o644)
	s, err := scenario.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	res, err := Run(context.Background(), Options{Scenario: s, ResultsDir: filepath.Join(dir, "results"),
		Rig: testbin.Rig(t), StateDir: filepath.Join(dir, "controller-state"), FS: hostfs.Default(), Log: &log})
	if err != nil {
		t.Fatalf("run over kubectl: %v\n%s", err, log.String())
	}
	for _, arm := range []string{"cpu0", "quietest"} {
		for r := 0; r < 2; r++ {
			j, err := samples.JoinDir(rundir.RoundDir(res.Dir, arm, r))
			if err != nil {
				t.Fatalf("arm %s round %d: %v", arm, r, err)
			}
			for _, role := range []samples.Role{samples.RoleSender, samples.RoleResponder, samples.RoleCapture} {
				if _, ok := j.Counters[role]; !ok {
					t.Errorf("arm %s round %d: no %s file", arm, r, role)
				}
			}
			if c := j.Counters[samples.RoleResponder]; c.Received != 400 {
				t.Errorf("arm %s round %d: the responder pod answered %d of 400", arm, r, c.Received)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(rundir.RoundDir(res.Dir, "quietest", 1), rundir.CPURank)); err != nil {
		t.Errorf("quietest arm: %v", err)
	}
	for _, h := range []string{"snd", "rsp", "cap"} {
		if !strings.Contains(log.String(), "host "+h+": agent pid") {
			t.Errorf("no agent on %s in the log", h)
		}
		env, err := os.ReadFile(filepath.Join(res.Dir, rundir.EnvDir, h+".json"))
		if err != nil || !bytes.Contains(env, []byte("kernel")) {
			t.Errorf("env of pod host %s: %v %.200s", h, err, env)
		}
	}
	// rig check ran in the responder pod, saw Kubernetes (the kubelet's
	// variables) and, in the pod's cgroup, a cpuset of every CPU.
	if !strings.Contains(log.String(), "this pod shares the pool with other pods") {
		t.Errorf("require-check in the pod did not see Kubernetes:\n%s", log.String())
	}
	for pod, st := range state {
		if err := journal.CheckPending(st); err != nil {
			t.Errorf("pod %s: journal: %v", pod, err)
		}
	}
	if err := journal.CheckPending(filepath.Join(dir, "controller-state")); err != nil {
		t.Errorf("controller journal: %v", err)
	}
	if load.Alive() {
		t.Error("stress-ng left running in the responder pod")
	}
}

// TestShippedKubernetesScenarios runs both halves of the shipped
// pinned-vs-shared scenario through the kubectl test double, as shipped
// except for what names the test machine: the NIC of each pod, a shorter
// round, one round. The pinned pod lives in a cpuset cgroup of one CPU (its
// exclusive CPU), the shared one in the whole machine's: the ranking, rig
// check and the responder see each pod's own CPUs.
func TestShippedKubernetesScenarios(t *testing.T) {
	testbin.Integration(t)
	dir := t.TempDir()
	pinnedCPU := 1
	cg := map[string][]string{"rig-responder-pinned": {netlabtest.PodCgroup(t, "pinned", strconv.Itoa(pinnedCPU))}}
	topo, state := kubectlLab(t, dir, cg, "rig-responder-pinned", "rig-responder-shared")
	for _, half := range []string{"pinned", "shared"} {
		t.Run(half, func(t *testing.T) {
			s, err := scenario.Load("../../scenarios/k8s-pinned-vs-shared." + half + ".yaml")
			if err != nil {
				t.Fatal(err)
			}
			for i := range s.Hosts {
				switch {
				case s.Hosts[i].Has(scenario.RoleSender):
					s.Hosts[i].Iface = topo.Sender.Interface
				case s.Hosts[i].Has(scenario.RoleResponder):
					s.Hosts[i].Iface = topo.Responder.Interface
				}
			}
			s.Traffic.Count, s.Rounds = 300, 1
			var log bytes.Buffer
			res, err := Run(context.Background(), Options{Scenario: s, ResultsDir: filepath.Join(dir, "results"),
				Rig: testbin.Rig(t), StateDir: filepath.Join(dir, "controller-state"), FS: hostfs.Default(), Log: &log})
			if err != nil {
				t.Fatalf("%s: %v\n%s", half, err, log.String())
			}
			if !strings.Contains(log.String(), "host rsp: agent pid") || !strings.Contains(log.String(), "quietest CPU") {
				t.Errorf("log:\n%s", log.String())
			}
			// What the pod's cgroup allows: the pinned pod ranks its one
			// CPU and rig check finds its cpuset narrower than the node;
			// the shared pod ranks every CPU and shares the pool.
			wantCands, wantCheck := "[0 1]", "this pod shares the pool with other pods"
			if half == "pinned" {
				wantCands, wantCheck = fmt.Sprintf("[%d]", pinnedCPU), fmt.Sprintf("cpuset %d is narrower than the node", pinnedCPU)
			}
			if !strings.Contains(log.String(), wantCheck) {
				t.Errorf("%s pod: rig check lacks %q:\n%s", half, wantCheck, log.String())
			}
			for _, arm := range []string{"block", "busy"} {
				b, err := os.ReadFile(filepath.Join(rundir.RoundDir(res.Dir, arm, 0), rundir.CPURank))
				var rk cpurank.Ranking
				if err == nil {
					err = json.Unmarshal(b, &rk)
				}
				if err != nil || fmt.Sprint(rk.Candidates) != wantCands {
					t.Errorf("%s pod, arm %s: ranked %v, want %s (%v)", half, arm, rk.Candidates, wantCands, err)
				}
			}
			for _, arm := range []string{"block", "busy"} {
				j, err := samples.JoinDir(rundir.RoundDir(res.Dir, arm, 0))
				if err != nil {
					t.Fatalf("arm %s: %v", arm, err)
				}
				if c := j.Counters[samples.RoleResponder]; c.Received != 300 {
					t.Errorf("arm %s: answered %d of 300", arm, c.Received)
				}
			}
		})
	}
	for pod, st := range state {
		if err := journal.CheckPending(st); err != nil {
			t.Errorf("pod %s: journal: %v", pod, err)
		}
	}
}
