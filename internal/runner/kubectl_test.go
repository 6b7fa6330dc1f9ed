package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rig-project/rig/analysis"
	"github.com/rig-project/rig/internal/check"
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
// rig-capture, and responders[i] for responder namespace i (one
// namespace per name: a fan-out lab when there are several). Each pod has
// a state directory of its own under dir; cgroups gives a pod the cgroup
// directories its processes join.
func kubectlLab(t *testing.T, dir string, cgroups map[string][]string, responders ...string) (*netlab.Topology, map[string]string) {
	t.Helper()
	topo := netlabtest.New(t, netlab.Options{Responders: len(responders)})
	rigDir := filepath.Dir(testbin.Rig(t))
	state := map[string]string{}
	pods := map[string]netlabtest.Pod{}
	add := func(name, ns string) {
		state[name] = filepath.Join(dir, "pods", name, "state")
		pods[name] = netlabtest.Pod{Netns: ns, Env: netlabtest.PodEnv(name, rigDir, state[name]), Cgroups: cgroups[name]}
	}
	add("rig-sender", topo.Sender.Netns)
	add("rig-capture", topo.Capture.Netns)
	for i, h := range topo.ResponderHosts() {
		add(responders[i], h.Netns)
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

// TestShippedKubernetesScenario runs the shipped pinned-vs-shared scenario
// through the kubectl test double, as shipped except for what names the
// test machine (each pod's NIC), 300 requests and one round: a fan-out lab
// with one responder namespace per pod, the pinned pod in a cpuset cgroup
// of one CPU (its exclusive CPU), the shared one in the whole machine's.
// Both pods answer every request of every arm; rig check ran in each pod
// and saw its own cpuset; the tables have each arm's row per pod and the
// paired comparison; the neighbour's stress-ng ran in the shared pod only
// and is gone; every journal is closed. With the header's pinning (a CPU
// per pod under defaults.responders) the responders run there and the
// telemetry watches the pinned pod's CPU.
func TestShippedKubernetesScenario(t *testing.T) {
	testbin.StressNG(t)
	const pinnedCPU = 1
	src, err := os.ReadFile("../../scenarios/k8s-pinned-vs-shared.yaml")
	if err != nil {
		t.Fatal(err)
	}
	arms := []string{"block", "busy", "block-neighbour", "busy-neighbour"}
	for _, variant := range []string{"as-shipped", "pinned-cpus"} {
		t.Run(variant, func(t *testing.T) {
			dir := t.TempDir()
			cg := map[string][]string{"rig-responder-pinned": {netlabtest.PodCgroup(t, "pinned", strconv.Itoa(pinnedCPU))}}
			topo, state := kubectlLab(t, dir, cg, "rig-responder-pinned", "rig-responder-shared")
			text := string(src)
			if variant == "pinned-cpus" {
				// What the header tells the user to add, with the CPUs
				// rig check names in each pod.
				const def = "defaults:\n  responder:\n    sched: other\n"
				if !strings.Contains(text, def) {
					t.Fatalf("the scenario's defaults changed: adapt this test")
				}
				text = strings.Replace(text, def, def+"  responders:\n    pinned: {responder: {cpu: "+strconv.Itoa(pinnedCPU)+"}}\n    shared: {responder: {cpu: 0}}\n", 1)
			}
			path := filepath.Join(dir, "k8s-pinned-vs-shared.yaml")
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := scenario.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(s.Responders, []string{"pinned", "shared"}) || !s.RequireCheck {
				t.Fatalf("responders %v, require-check %v", s.Responders, s.RequireCheck)
			}
			rh := topo.ResponderHosts()
			for i := range s.Hosts {
				switch h := &s.Hosts[i]; h.Name {
				case "snd":
					h.Iface = topo.Sender.Interface
				case "pinned":
					h.Iface = rh[0].Interface
				case "shared":
					h.Iface = rh[1].Interface
				}
			}
			s.Traffic.Count, s.Rounds = 300, 1
			var logb bytes.Buffer
			res, err := Run(context.Background(), Options{Scenario: s, ResultsDir: filepath.Join(dir, "results"),
				Rig: testbin.Rig(t), StateDir: filepath.Join(dir, "controller-state"), FS: hostfs.Default(), Log: &logb})
			log := logb.String()
			if err != nil {
				t.Fatalf("run: %v\n%s", err, log)
			}
			for _, h := range []string{"snd", "pinned", "shared"} {
				if !strings.Contains(log, "host "+h+": agent pid") {
					t.Errorf("no agent on %s in the log", h)
				}
			}
			// require-check ran in each responder pod, on a CPU the pod may
			// use: the pinned pod's cpuset is narrower than the node, the
			// shared pod shares the pool.
			ip := strings.Index(log, "rig run: rig check on responder host pinned")
			is := strings.Index(log, "rig run: rig check on responder host shared")
			ir := strings.Index(log, "rig run: round 0")
			if ip < 0 || is < ip || ir < is {
				t.Fatalf("rig check in each responder pod before the first round:\n%s", log)
			}
			wantPinned := []string{fmt.Sprintf("cpuset %d is narrower than the node", pinnedCPU), fmt.Sprintf("rig may run on CPU %d (allowed: %d)", pinnedCPU, pinnedCPU)}
			if variant == "as-shipped" {
				wantPinned = append(wantPinned, fmt.Sprintf("last CPU rig may use (%d)", pinnedCPU))
			}
			for _, w := range wantPinned {
				if !strings.Contains(log[ip:is], w) {
					t.Errorf("rig check in the pinned pod lacks %q:\n%s", w, log[ip:is])
				}
			}
			if w := "this pod shares the pool with other pods"; !strings.Contains(log[is:ir], w) || strings.Contains(log[ip:is], w) {
				t.Errorf("rig check: %q belongs to the shared pod only:\n%s", w, log[ip:ir])
			}
			// The neighbour's stress-ng ran in the shared pod, in the
			// -neighbour arms only.
			if n := strings.Count(log, "  [shared] load: stress-ng"); n != 2 || strings.Contains(log, "[pinned] load:") {
				t.Errorf("%d loads in the shared pod (want 2, none in the pinned pod):\n%s", n, log)
			}
			for _, arm := range arms {
				rd := rundir.RoundDir(res.Dir, arm, 0)
				js, err := samples.JoinDirAll(rd)
				if err != nil || len(js) != 2 {
					t.Fatalf("arm %s: %v, %d responders", arm, err, len(js))
				}
				for id, j := range js {
					snd, rsp := j.Counters[samples.RoleSender], j.Counters[samples.RoleResponder]
					if snd.Sent != 300 || snd.Received != 300 || rsp.Received != 300 {
						t.Errorf("arm %s, %s: sender %+v, responder %+v: want every request answered", arm, s.Responders[id], snd, rsp)
					}
				}
				_, terr := os.Stat(filepath.Join(rd, rundir.Telemetry))
				if pinned := variant == "pinned-cpus"; (terr == nil) != pinned {
					t.Errorf("arm %s: telemetry of the pinned pod's CPU: %v (want one only when it is pinned)", arm, terr)
				}
			}
			md, err := os.ReadFile(filepath.Join(res.Dir, analysis.TablesMD))
			if err != nil {
				t.Fatal(err)
			}
			for _, arm := range arms {
				for _, want := range []string{"| " + arm + "@pinned |", "| " + arm + "@shared |"} {
					if !bytes.Contains(md, []byte(want)) {
						t.Errorf("tables.md lacks %q", want)
					}
				}
			}
			if !bytes.Contains(md, []byte("Paired comparison of responders")) {
				t.Error("tables.md has no paired comparison")
			}
			rep := res.Report
			if rep == nil || len(rep.Paired) != len(arms) {
				t.Fatalf("report: %+v", rep)
			}
			for _, p := range rep.Paired {
				if p.A != "pinned" || p.B != "shared" || p.Stats.N < 290 || p.Source == "" {
					t.Errorf("paired %s: %s−%s n %d source %q verdict %s", p.Arm, p.B, p.A, p.Stats.N, p.Source, p.Verdict)
				}
			}
			for _, h := range []string{"pinned", "shared"} {
				if env, err := os.ReadFile(filepath.Join(res.Dir, rundir.EnvDir, h+".json")); err != nil || !bytes.Contains(env, []byte("kernel")) {
					t.Errorf("env of pod host %s: %v %.200s", h, err, env)
				}
			}
			if load.Alive() {
				t.Error("stress-ng left running in the shared pod")
			}
			for pod, st := range state {
				if err := journal.CheckPending(st); err != nil {
					t.Errorf("pod %s: journal: %v", pod, err)
				}
			}
			if err := journal.CheckPending(filepath.Join(dir, "controller-state")); err != nil {
				t.Errorf("controller journal: %v", err)
			}
		})
	}
}

// With several responders require-check checks each responder host on
// the CPU its own knobs give it: the second responder's pod (cpuset of CPU
// 1) pinned to CPU 0 under responders: FAILs cpu.allowed there, and the
// run stops before anything changes, naming that host.
func TestKubectlFanoutCheckEveryResponder(t *testing.T) {
	testbin.Integration(t)
	dir := t.TempDir()
	cg := map[string][]string{"rig-b": {netlabtest.PodCgroup(t, "b", "1")}}
	topo, state := kubectlLab(t, dir, cg, "rig-a", "rig-b")
	rh := topo.ResponderHosts()
	yaml := `name: kubectl-fanout-check
hosts:
  snd: {via: kubectl exec -i rig-sender --, roles: [sender], iface: ` + topo.Sender.Interface + `}
  a: {via: kubectl exec -i rig-a --, roles: [responder], iface: ` + rh[0].Interface + `}
  b: {via: kubectl exec -i rig-b --, roles: [responder], iface: ` + rh[1].Interface + `}
traffic: {group: 239.56.0.2:7561, interval: 1ms, count: 100}
timestamps: software
require-check: true
defaults:
  responders:
    a: {responder: {cpu: 1}}
    b: {responder: {cpu: 0}}
arms:
  - name: block
`
	path := filepath.Join(dir, "fanout-check.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := scenario.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	res, err := Run(context.Background(), Options{Scenario: s, ResultsDir: filepath.Join(dir, "results"),
		Rig: testbin.Rig(t), StateDir: filepath.Join(dir, "controller-state"), FS: hostfs.Default(), Log: &log})
	var cf *CheckFailedError
	if !errors.As(err, &cf) || cf.Host != "b" || cf.Report.CPU != 0 || cf.Report.Get("cpu.allowed") == nil || cf.Report.Get("cpu.allowed").Severity != check.Fail {
		t.Fatalf("want rig check to FAIL on host b, CPU 0: %v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "rig run: rig check on responder host a") || res != nil {
		t.Errorf("host a unchecked, or a run directory made (%v):\n%s", res, log.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "results")); !os.IsNotExist(err) {
		t.Errorf("results made before the check passed: %v", err)
	}
	for pod, st := range state {
		if err := journal.CheckPending(st); err != nil {
			t.Errorf("pod %s: journal: %v", pod, err)
		}
	}
}
