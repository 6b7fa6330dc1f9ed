package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rig-project/rig/analysis"
	"github.com/rig-project/rig/internal/check"
	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostfs/hostfstest"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/power/powertest"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/scenario"
	"github.com/rig-project/rig/internal/testbin"
)

// labPod is what the kubelet gives a pod of a kubectlLab: its cgroups'
// cpuset and quota, and its requests and limits (the downward API's
// variables, netlabtest.PodResources).
type labPod struct {
	limits    netlabtest.PodLimits
	resources []string
	// hostAgent makes it the host agent of the first responder's node
	// (privileged, hostPID, in that node's network namespace) with env
	// added to its environment.
	hostAgent bool
	env       []string
}

// burstable is a pod of the shared pool on this machine: a 500m request,
// no CPU limit (the downward API then gives the node's CPUs, here 2).
var burstable = labPod{resources: netlabtest.PodResources(500, 2000, 256<<20, 512<<20)}

// kubectlLab builds an emulated topology whose namespaces stand for pods,
// and a kubectl test double on PATH that reaches them: rig-sender,
// rig-capture, and responders[i] for responder namespace i (one
// namespace per name: a fan-out lab when there are several). Each pod is
// a container as the manifests make it (netlabtest.Kubectl): a state
// directory of its own under dir, the manifests' capabilities, and
// cgroups of its own with what pods gives it (by default burstable's,
// with every CPU).
func kubectlLab(t *testing.T, dir string, given map[string]labPod, responders ...string) (*netlab.Topology, map[string]string) {
	t.Helper()
	topo := netlabtest.New(t, netlab.Options{Responders: len(responders)})
	rigDir := filepath.Dir(testbin.Rig(t))
	online, err := hostinfo.OnlineCPUs(hostfs.Default())
	if err != nil {
		t.Fatal(err)
	}
	state := map[string]string{}
	pods := map[string]netlabtest.Pod{}
	add := func(name, ns string) {
		p, ok := given[name]
		if !ok {
			p = burstable
		}
		if p.limits.CPUs == "" {
			p.limits.CPUs = cpulist.Format(online)
		}
		state[name] = filepath.Join(dir, "pods", name, "state")
		pods[name] = netlabtest.Pod{Netns: ns, Env: netlabtest.PodEnv(name, rigDir, state[name], p.resources...),
			Cgroups: netlabtest.PodCgroups(t, strings.TrimPrefix(name, "rig-"), p.limits), Caps: netlabtest.PodCaps}
	}
	add("rig-sender", topo.Sender.Netns)
	add("rig-capture", topo.Capture.Netns)
	for i, h := range topo.ResponderHosts() {
		add(responders[i], h.Netns)
	}
	for name, p := range given {
		if p.hostAgent {
			state[name] = filepath.Join(dir, "pods", name, "state")
			pods[name] = netlabtest.Pod{Netns: topo.Responder.Netns, Env: append(netlabtest.PodEnv(name, rigDir, state[name]), p.env...), Privileged: true}
		}
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
	res, log, err := runYAML(t, dir, "kubectl.yaml", yaml)
	if err != nil {
		t.Fatalf("run over kubectl: %v\n%s", err, log)
	}
	for _, arm := range []string{"cpu0", "quietest"} {
		for r := 0; r < 2; r++ {
			j, err := samples.JoinDir(rundir.RoundDir(res.Dir, arm, r), 0)
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
		if !strings.Contains(log, "host "+h+": agent pid") {
			t.Errorf("no agent on %s in the log", h)
		}
		env, err := os.ReadFile(filepath.Join(res.Dir, rundir.EnvDir, h+".json"))
		if err != nil || !bytes.Contains(env, []byte("kernel")) {
			t.Errorf("env of pod host %s: %v %.200s", h, err, env)
		}
	}
	// rig check ran in the responder pod, saw Kubernetes (the kubelet's
	// variables) and, in the pod's cgroup, a cpuset of every CPU.
	if !strings.Contains(log, "this pod shares the pool with other pods") {
		t.Errorf("require-check in the pod did not see Kubernetes:\n%s", log)
	}
	for pod, st := range state {
		if err := journal.CheckPending(st); err != nil {
			t.Errorf("pod %s: journal: %v", pod, err)
		}
	}
	if err := journal.CheckPending(filepath.Join(dir, "state")); err != nil {
		t.Errorf("controller journal: %v", err)
	}
	if testbin.StressNGRuns() {
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
			topo, state := kubectlLab(t, dir, map[string]labPod{
				// Guaranteed with 1 CPU (the manifest's 2 on a 2-CPU
				// machine): the static CPU manager's exclusive CPU.
				"rig-responder-pinned": {limits: netlabtest.PodLimits{CPUs: strconv.Itoa(pinnedCPU)}, resources: netlabtest.PodResources(1000, 1000, 512<<20, 512<<20)},
				// The shared pool: every CPU the pinned pod does not own.
				"rig-responder-shared": {limits: netlabtest.PodLimits{CPUs: strconv.Itoa(1 - pinnedCPU)}, resources: burstable.resources},
			}, "rig-responder-pinned", "rig-responder-shared")
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
			s := loadYAML(t, dir, "k8s-pinned-vs-shared.yaml", text)
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
			res, err := Run(context.Background(), runOptions(t, dir, s, &logb))
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
			// Each pod's own cgroup v1 directory, where runc mounts it: no
			// quota, its cpuset; the pinned pod's CPU is its own, the
			// shared pod's cpuset is the shared pool, never "pinned".
			// rig sees only the pod's processes.
			cgv1 := "no CFS quota (cpu.max max 100000, cgroup v1 /rig-test-pod-"
			wantPinned := []string{fmt.Sprintf("pinned (exclusive): cpuset %d is the pod's 1 CPU of the node's 0-1", pinnedCPU),
				fmt.Sprintf("rig may run on CPU %d (allowed: %d)", pinnedCPU, pinnedCPU), cgv1 + "responder-pinned-", "cannot tell whether irqbalance runs"}
			if variant == "as-shipped" {
				wantPinned = append(wantPinned, fmt.Sprintf("last CPU rig may use (%d)", pinnedCPU))
			}
			for _, w := range wantPinned {
				if !strings.Contains(log[ip:is], w) {
					t.Errorf("rig check in the pinned pod lacks %q:\n%s", w, log[ip:is])
				}
			}
			for _, w := range []string{fmt.Sprintf("shared pool (narrower than the node because other pods own CPUs): cpuset %d of 0-1", 1-pinnedCPU),
				cgv1 + "responder-shared-", "cannot tell whether irqbalance runs"} {
				if !strings.Contains(log[is:ir], w) {
					t.Errorf("rig check in the shared pod lacks %q:\n%s", w, log[is:ir])
				}
			}
			if strings.Contains(log[is:ir], "pinned (exclusive)") {
				t.Errorf("the shared pod is called pinned:\n%s", log[is:ir])
			}
			// The neighbour's stress-ng ran in the shared pod, in the
			// -neighbour arms only.
			if n := strings.Count(log, "  [shared] load: stress-ng"); n != 2 || strings.Contains(log, "[pinned] load:") {
				t.Errorf("%d loads in the shared pod (want 2, none in the pinned pod):\n%s", n, log)
			}
			for _, arm := range arms {
				rd := rundir.RoundDir(res.Dir, arm, 0)
				for id := range 2 {
					j, err := samples.JoinDir(rd, uint32(id))
					if err != nil {
						t.Fatalf("arm %s: %v", arm, err)
					}
					if j.Responders != 2 {
						t.Fatalf("arm %s: %d responders", arm, j.Responders)
					}
					snd, rsp := j.Counters[samples.RoleSender], j.Counters[samples.RoleResponder]
					if snd.Sent != 300 || snd.Received != 300 || rsp.Received != 300 {
						t.Errorf("arm %s, %s: sender %+v, responder %+v: want every request answered", arm, s.Responders[id], snd, rsp)
					}
				}
				// Each pod's telemetry watched its own CPUs: unpinned, the
				// pod's cpuset; pinned, its CPU (no sibling here).
				for id, cpu := range []int{pinnedCPU, 1 - pinnedCPU} {
					b, err := os.ReadFile(filepath.Join(rd, rundir.TelemetryFile(uint32(id))))
					var tel rundir.TelemetryResult
					if err == nil {
						err = json.Unmarshal(b, &tel)
					}
					if err != nil || !slices.Equal(tel.CPUs, []int{cpu}) || tel.Samples < 2 || tel.PinCPU != -1 {
						t.Errorf("arm %s: telemetry of %s: %v: CPUs %v, %d samples, sampler CPU %d (want CPU %d, unpinned: the pod has no other)\n%.300s",
							arm, s.Responders[id], err, tel.CPUs, tel.Samples, tel.PinCPU, cpu, b)
					}
				}
			}
			md, err := os.ReadFile(filepath.Join(res.Dir, analysis.ReportMD))
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
			if testbin.StressNGRuns() {
				t.Error("stress-ng left running in the shared pod")
			}
			for pod, st := range state {
				if err := journal.CheckPending(st); err != nil {
					t.Errorf("pod %s: journal: %v", pod, err)
				}
			}
			if err := journal.CheckPending(filepath.Join(dir, "state")); err != nil {
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
	topo, state := kubectlLab(t, dir, map[string]labPod{"rig-b": {limits: netlabtest.PodLimits{CPUs: "1"}, resources: burstable.resources}}, "rig-a", "rig-b")
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
	res, log, err := runYAML(t, dir, "fanout-check.yaml", yaml)
	var cf *CheckFailedError
	if !errors.As(err, &cf) || cf.Host != "b" || cf.Report.CPU != 0 || cf.Report.Get("cpu.allowed") == nil || cf.Report.Get("cpu.allowed").Severity != check.Fail {
		t.Fatalf("want rig check to FAIL on host b, CPU 0: %v\n%s", err, log)
	}
	if !strings.Contains(log, "rig run: rig check on responder host a") || res != nil {
		t.Errorf("host a unchecked, or a run directory made (%v):\n%s", res, log)
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

// A pod whose CFS quota really throttles (a busy loop in its cgroup, until
// the kernel's nr_throttled moves) is reported by rig check in the pod as
// it is — a quota and throttling, read from the pod's cgroup v1 directory
// where runc mounts it — and require-check stops the run before anything
// changes, with the kubelet's fix and the node's path, never the pod's
// read-only one.
func TestKubectlQuotaThrottledPod(t *testing.T) {
	testbin.Integration(t)
	dir := t.TempDir()
	topo, state := kubectlLab(t, dir, map[string]labPod{
		"rig-quota": {limits: netlabtest.PodLimits{CPUs: "1", QuotaUS: 20000}, resources: netlabtest.PodResources(1000, 1000, 512<<20, 512<<20)},
	}, "rig-quota")
	setDir, cpuDir := "", ""
	for _, d := range []string{"/sys/fs/cgroup/cpuset", "/sys/fs/cgroup/cpu"} {
		m, _ := filepath.Glob(fmt.Sprintf("%s/rig-test-pod-quota-%d", d, os.Getpid()))
		if len(m) != 1 {
			t.Fatalf("the pod's cgroup in %s: %v", d, m)
		}
		if strings.HasSuffix(d, "cpuset") {
			setDir = m[0]
		} else {
			cpuDir = m[0]
		}
	}
	// A busy loop in the pod's cgroups, until the quota has throttled it.
	stop := filepath.Join(dir, "stop")
	busy := exec.Command("sh", "-c", `echo $$ > "$1/cgroup.procs" && echo $$ > "$2/cgroup.procs" || exit 1; while [ ! -e "$3" ]; do :; done`, "busy", setDir, cpuDir, stop)
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		os.WriteFile(stop, nil, 0o644)
		busy.Wait()
	})
	var throttled uint64
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(30 * time.Second); throttled == 0; <-tick.C {
		b, err := os.ReadFile(cpuDir + "/cpu.stat")
		if err != nil {
			t.Fatal(err)
		}
		st, err := hostinfo.ParseCPUStat(b)
		if err != nil {
			t.Fatal(err)
		}
		if throttled = st.NrThrottled; throttled == 0 && time.Now().After(deadline) {
			t.Fatalf("a busy loop under a 20 %% quota was never throttled: %s", b)
		}
	}
	_, log, err := runYAML(t, dir, "pods.yaml", `name: quota
hosts:
  snd: {via: kubectl exec -i rig-sender --, roles: [sender], iface: `+topo.Sender.Interface+`}
  rsp: {via: kubectl exec -i rig-quota --, roles: [responder], iface: `+topo.Responder.Interface+`}
traffic: {group: 239.56.0.3:7562, interval: 1ms, count: 100}
timestamps: software
require-check: true
arms:
  - name: block
`)
	var cf *CheckFailedError
	if !errors.As(err, &cf) || cf.Host != "rsp" {
		t.Fatalf("want require-check to stop on host rsp: %v\n%s", err, log)
	}
	base := filepath.Base(cpuDir)
	cm, th, cs := cf.Report.Get("cgroup.cpu_max"), cf.Report.Get("cgroup.throttled"), cf.Report.Get("cgroup.cpuset")
	if cm.Severity != check.Fail || !strings.Contains(cm.Observed, "CFS quota 20000 100000 (cgroup v1 /"+base+")") ||
		!strings.Contains(cm.Fix, "DisableCPUQuotaWithExclusiveCPUs") || !strings.Contains(cm.Fix, "echo -1 > /sys/fs/cgroup/cpu/"+base+"/cpu.cfs_quota_us, which the kubelet may set again") {
		t.Errorf("cgroup.cpu_max: %+v", cm)
	}
	var n uint64
	if th.Severity != check.Warn || !strings.HasPrefix(th.Observed, "throttled ") {
		t.Errorf("cgroup.throttled after the pod was throttled %d times: %+v", throttled, th)
	} else if _, err := fmt.Sscanf(th.Observed, "throttled %d times", &n); err != nil || n < throttled {
		t.Errorf("cgroup.throttled says %q, the kernel said %d before: %v", th.Observed, throttled, err)
	}
	if cs.Severity != check.OK || !strings.Contains(cs.Observed, "pinned (exclusive): cpuset 1 is the pod's 1 CPU") {
		t.Errorf("cgroup.cpuset: %+v", cs)
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

// A check that can FAIL and could not read what it needs stops
// require-check as a FAIL does: a container whose runtime does not mount
// the cpu controller cannot tell whether a quota throttles it. And a pod
// (read-only /sys and /proc/irq, no /dev/cpu_dma_latency, as its agent's
// facts say) refuses the knobs that change the node at their
// file:line:col, before anything runs.
func TestKubectlPodCannotTellOrChange(t *testing.T) {
	testbin.Integration(t)
	dir := t.TempDir()
	topo, state := kubectlLab(t, dir, nil, "rig-responder")
	hosts := `hosts:
  snd: {via: kubectl exec -i rig-sender --, roles: [sender], iface: ` + topo.Sender.Interface + `}
  rsp: {via: kubectl exec -i rig-responder --, roles: [responder], iface: ` + topo.Responder.Interface + `}
traffic: {group: 239.56.0.4:7563, interval: 1ms, count: 100}
timestamps: software
`
	_, log, err := runYAML(t, dir, "pods.yaml", "name: knobs\n"+hosts+`defaults:
  responder: {cpu: 1}
arms:
  - name: base
  - name: irq
    irq: {cpus: [0]}
  - name: qos
    cstate: {max-latency-us: 0}
  - name: perf
    power: {governor: performance}
`)
	var list scenario.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("want the node knobs refused: %v\n%s", err, log)
	}
	for _, w := range []string{"pods.yaml:12:5: in a pod: on host rsp /proc/irq is read-only", "pods.yaml:14:5: in a pod: on host rsp there is no /dev/cpu_dma_latency",
		"pods.yaml:16:5: in a pod: on host rsp /sys is mounted read-only", "use the host agent"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("refusal lacks %q:\n%v", w, err)
		}
	}
	// The responder pod without its cpu controller (only its cpuset).
	rigDir := filepath.Dir(testbin.Rig(t))
	cg := netlabtest.PodCgroups(t, "nocpu", netlabtest.PodLimits{CPUs: "1"})
	pods := map[string]netlabtest.Pod{
		"rig-sender":    {Netns: topo.Sender.Netns, Env: netlabtest.PodEnv("rig-sender", rigDir, state["rig-sender"]), Caps: netlabtest.PodCaps},
		"rig-responder": {Netns: topo.Responder.Netns, Env: netlabtest.PodEnv("rig-responder", rigDir, state["rig-responder"], burstable.resources...), Cgroups: cg[:1], Caps: netlabtest.PodCaps},
	}
	t.Setenv("PATH", netlabtest.Kubectl(t, pods)+":"+os.Getenv("PATH"))
	_, log, err = runYAML(t, dir, "pods.yaml", "name: untold\n"+hosts+"require-check: true\narms:\n  - name: block\n")
	var cf *CheckFailedError
	if !errors.As(err, &cf) || cf.Report.Worst == check.Fail || !strings.Contains(err.Error(), "could not tell what a check that can FAIL needs") {
		t.Fatalf("want require-check to stop on a check that could not tell: %v\n%s", err, log)
	}
	if cm := cf.Report.Get("cgroup.cpu_max"); cm.Untold != check.Fail || !strings.Contains(cm.Observed, "the cgroup v1 cpu hierarchy is not mounted here") {
		t.Errorf("cgroup.cpu_max: %+v", cm)
	}
	for pod, st := range state {
		if err := journal.CheckPending(st); err != nil {
			t.Errorf("pod %s: journal: %v", pod, err)
		}
	}
}

// A pod cannot change its node's idle states or frequency (read-only
// /sys): with host option node, the arm's cstate or power knob goes to the
// host agent on the pod's node (privileged, hostPID; its node is a host
// root: hostfstest.IdleRoot's cpuidle states, powertest's intel_pstate
// tree), which journals it on the node, while the responder runs and
// answers in its pod. The knob is in force while the arm runs (read at the
// progress of its round), not during the baseline, and put back after it;
// every journal is closed. When the node agent is killed (-9) in the
// middle of the apply, the run fails naming the node's `rig restore`,
// which puts the node back.
func TestKubectlNodeKnobsThroughTheHostAgent(t *testing.T) {
	testbin.Integration(t)
	idle := func(root string) string {
		var out []string
		for k := range hostfstest.IdleStates {
			b, _ := os.ReadFile(filepath.Join(root, fmt.Sprintf("sys/devices/system/cpu/cpu1/cpuidle/state%d/disable", k)))
			out = append(out, strings.TrimSpace(string(b)))
		}
		return strings.Join(out, ",")
	}
	governor := func(root string) string {
		b, _ := os.ReadFile(filepath.Join(root, "sys/devices/system/cpu/cpufreq/policy1/scaling_governor"))
		return strings.TrimSpace(string(b))
	}
	for _, c := range []struct {
		name, knob string
		root       func(t testing.TB) string
		state      func(root string) string
		off, on    string // the state without and with the knob
		kill       bool
	}{
		{"cstate", "cstate: {poll: true}", hostfstest.IdleRoot, idle, "0,0,0", "0,1,1", false},
		{"power", "power: {governor: performance}", func(t testing.TB) string { return powertest.Build(t, powertest.IntelActive, 2).Root }, governor, "powersave", "performance", false},
		{"kill-9", "cstate: {poll: true}", hostfstest.IdleRoot, idle, "0,0,0", "0,1,0", true}, // paused after C1
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			root := c.root(t)
			agentEnv := []string{hostfs.EnvRoot + "=" + root}
			arms := "  - name: base\n    responder: {cpu: 1}\n"
			if c.kill {
				agentEnv, arms = append(agentEnv, journal.EnvTestPause+"=1"), ""
			}
			topo, state := kubectlLab(t, dir, map[string]labPod{"rig-host-agent": {hostAgent: true, env: agentEnv}}, "rig-responder")
			yaml := `name: node
hosts:
  snd: {via: kubectl exec -i rig-sender --, roles: [sender], iface: ` + topo.Sender.Interface + `}
  rsp: {via: kubectl exec -i rig-responder --, roles: [responder], iface: ` + topo.Responder.Interface + `, node: kubectl exec -i -n rig rig-host-agent --}
traffic: {group: 239.56.0.6:7565, interval: 1ms, count: 1500}
timestamps: software
rounds: 1
arms:
` + arms + `  - name: tuned
    responder: {cpu: 1}
    ` + c.knob + `
`
			s := loadYAML(t, dir, "node.yaml", yaml)
			// arm → the node's state during its round (the sender's
			// progress, once a second: 1500 requests at 1ms have one)
			seen := map[string]string{}
			var logb bytes.Buffer
			o := runOptions(t, dir, s, &logb)
			o.Progress = func(p Progress) {
				if p.Sent > 0 {
					seen[p.Arm] = c.state(root)
				}
			}
			if c.kill {
				done := make(chan error, 1)
				go func() { _, err := Run(context.Background(), o); done <- err }()
				// The node agent paused after its first change to the node.
				for c.state(root) == c.off {
					select {
					case err := <-done:
						t.Fatalf("the run ended before the node changed: %v\n%s", err, logb.String())
					case <-time.After(50 * time.Millisecond):
					}
				}
				pid := laneAgent(testbin.Rig(t), scenario.NodeName("rsp"))
				if pid == 0 {
					t.Fatalf("no node agent running")
				}
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				err := <-done
				restore := "kubectl exec -i -n rig rig-host-agent -- rig restore"
				if err == nil || !strings.Contains(err.Error(), "applying knobs on host rsp-node") || !strings.Contains(err.Error(), "run `"+restore+"`") {
					t.Fatalf("want the run to fail naming the node's restore: %v\n%s", err, logb.String())
				}
				if got := c.state(root); got != c.on {
					t.Errorf("at the kill the node's state is %s, want %s", got, c.on)
				}
				if journal.CheckPending(state["rig-host-agent"]) == nil {
					t.Errorf("the killed node agent left no journal on the node")
				}
				out, err := exec.Command("sh", "-c", restore).CombinedOutput()
				t.Logf("%s:\n%s", restore, out)
				if err != nil {
					t.Fatal(err)
				}
			} else {
				res, err := Run(context.Background(), o)
				if err != nil {
					t.Fatalf("run: %v\n%s", err, logb.String())
				}
				log := logb.String()
				if !strings.Contains(log, "host rsp-node: agent pid") || !strings.Contains(log, "[rsp-node] "+strings.SplitN(c.knob, ":", 2)[0]) {
					t.Errorf("the %s knob did not go through the node agent:\n%s", c.name, log)
				}
				if seen["base"] != c.off || seen["tuned"] != c.on {
					t.Errorf("the node's state during each arm: %v, want base %s, tuned %s", seen, c.off, c.on)
				}
				j, err := samples.JoinDir(rundir.RoundDir(res.Dir, "tuned", 0), 0)
				if err != nil || j.Counters[samples.RoleResponder].Received != 1500 {
					t.Errorf("the responder pod under the tuned arm: %v %+v", err, j)
				}
				var m rundir.Manifest
				b, _ := os.ReadFile(filepath.Join(res.Dir, rundir.ManifestFile))
				if err := json.Unmarshal(b, &m); err != nil || m.Hosts["rsp"].Node != "kubectl exec -i -n rig rig-host-agent --" {
					t.Errorf("manifest hosts.rsp: %+v %v", m.Hosts["rsp"], err)
				}
				report, _ := os.ReadFile(filepath.Join(res.Dir, analysis.ReportMD))
				if !strings.Contains(string(report), "| rsp (responder; kubectl exec -i rig-responder --; node knobs through kubectl exec -i -n rig rig-host-agent --) |") {
					t.Errorf("the report's hosts table does not name the node agent:\n%s", report)
				}
			}
			if got := c.state(root); got != c.off {
				t.Errorf("after the run the node's state is %s, want %s", got, c.off)
			}
			for pod, st := range state {
				if err := journal.CheckPending(st); err != nil {
					t.Errorf("pod %s: journal: %v", pod, err)
				}
			}
		})
	}
}

// laneAgent finds the pid of the running `rig agent --stdio --lane LANE`.
func laneAgent(rig, lane string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if exe, _ := os.Readlink("/proc/" + e.Name() + "/exe"); exe != rig {
			continue
		}
		b, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if strings.Contains(string(b), "agent\x00--stdio\x00--lane\x00"+lane+"\x00") {
			pid, _ := strconv.Atoi(e.Name())
			return pid
		}
	}
	return 0
}
