package scenario

import (
	"errors"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
)

// In a pod /sys and /proc/irq are read-only and /dev has no
// cpu_dma_latency: the knobs that change the node (irq, cstate, power,
// tuned) are refused at their file:line:col before anything runs,
// instead of failing with EROFS mid-run. Where the host can write them,
// or the facts do not say (an older agent), they pass.
func TestNodeKnobsRefusedInAPod(t *testing.T) {
	src := `name: t
hosts:
  snd: {via: local, roles: [sender]}
  rsp: {via: kubectl exec -i -n rig rig-responder-pinned --, roles: [responder], iface: ens5}
traffic: {group: "239.1.1.1:5000"}
defaults:
  responder: {cpu: 2}
arms:
  - name: base
  - name: irq
    irq: {cpus: [0]}
  - name: c6
    cstate: {disable: [C6]}
  - name: qos
    cstate: {max-latency-us: 0}
  - name: perf
    power: {governor: performance}
  - name: tuned
    tuned: network-latency
`
	no, yes := false, true
	for _, c := range []struct {
		name            string
		sysfs, irq, dma *bool
		want            []string
	}{
		{"pod", &no, &no, &no, []string{
			"t.yaml:11:5: in a pod: on host rsp /proc/irq is read-only, so irq cannot change the node",
			"t.yaml:13:5: in a pod: on host rsp /sys is mounted read-only, so cstate cannot",
			"t.yaml:15:5: in a pod: on host rsp there is no /dev/cpu_dma_latency, so cstate cannot",
			"t.yaml:17:5: in a pod: on host rsp /sys is mounted read-only, so power cannot",
			"t.yaml:19:5: in a pod: on host rsp /sys is mounted read-only, so tuned cannot",
		}},
		{"node", &yes, &yes, &yes, nil},
		{"older agent", nil, nil, nil, nil},
	} {
		s := load(t, src)
		f := treeWithStressNG(t, hostfs.FS{Root: "../hostinfo/testdata/isolated"})
		f.SysfsWritable, f.ProcIRQWritable, f.CPUDMALatency = c.sysfs, c.irq, c.dma
		f.Ifaces = []string{"ens5"}
		err := Validate(s, map[string]*facts.Facts{"snd": f, "rsp": f})
		var list ErrorList
		errors.As(err, &list)
		var mine []string
		for _, e := range list {
			if strings.Contains(e.Error(), "in a pod:") {
				mine = append(mine, e.Error())
			}
		}
		if len(mine) != len(c.want) {
			t.Errorf("%s: %d node-knob errors, want %d:\n%v", c.name, len(mine), len(c.want), err)
			continue
		}
		for i, w := range c.want {
			if !strings.HasPrefix(mine[i], w) || !strings.Contains(mine[i], "use the host agent") || !strings.Contains(mine[i], "give hosts.rsp the privileged host agent on its node, node:") {
				t.Errorf("%s: error %d:\n%s\nwant %q and the host agent", c.name, i, mine[i], w)
			}
		}
	}
}

// A pod host with node: (the host agent on its node) takes the node knobs:
// they are checked against the node agent's facts, not the pod's. A node
// agent that cannot write them (not privileged) is refused as a pod is,
// naming it; unread node facts (rig run --dry-run) are not checked.
func TestNodeKnobsThroughTheNodeAgent(t *testing.T) {
	src := `name: t
hosts:
  snd: {via: local, roles: [sender]}
  rsp: {via: kubectl exec -i -n rig rig-responder-pinned --, roles: [responder], iface: ens5, node: kubectl exec -i -n rig rig-host-agent-x7k2p --}
traffic: {group: "239.1.1.1:5000"}
defaults:
  responder: {cpu: 2}
arms:
  - name: base
  - name: irq
    irq: {cpus: [0]}
  - name: c6
    cstate: {disable: [C6]}
  - name: qos
    cstate: {max-latency-us: 0}
`
	no, yes := false, true
	fs := hostfs.FS{Root: "../hostinfo/testdata/isolated"}
	pod := treeWithStressNG(t, fs)
	pod.SysfsWritable, pod.ProcIRQWritable, pod.CPUDMALatency = &no, &no, &no
	pod.Ifaces, pod.IdleStates = []string{"ens5"}, nil // a pod's /sys may hide cpuidle: the node's counts
	pod.Missing = append(pod.Missing, "cpuidle")
	node := treeWithStressNG(t, fs)
	node.SysfsWritable, node.ProcIRQWritable, node.CPUDMALatency = &yes, &yes, &yes
	s := load(t, src)
	if h := s.HostWith(RoleResponder); h.Node == nil || h.Node.Name != "rsp-node" || h.Node.Command[len(h.Node.Command)-2] != "rig-host-agent-x7k2p" {
		t.Fatalf("node of rsp: %+v", h.Node)
	}
	if err := Validate(s, map[string]*facts.Facts{"snd": node, "rsp": pod, "rsp-node": node}); err != nil {
		t.Errorf("node knobs through a writable node agent: %v", err)
	}
	if err := Validate(s, map[string]*facts.Facts{"snd": node, "rsp": pod}); err != nil {
		t.Errorf("node facts not read: %v", err)
	}
	if got := s.Unchecked(map[string]*facts.Facts{"snd": node, "rsp": pod}); len(got) != 1 || got[0] != "rsp-node" {
		t.Errorf("unchecked: %v", got)
	}
	var plan strings.Builder
	if err := WriteDryRun(&plan, s, s.Plan(), DryRunOptions{}); err != nil || !strings.Contains(plan.String(), "  rsp-node     via kubectl exec -i -n rig rig-host-agent-x7k2p -- applies the node knobs (irq, cstate, power, tuned) of rsp\n") {
		t.Errorf("the plan does not name the node agent: %v\n%s", err, plan.String())
	}
	// The node agent's facts decide: a state the node lacks is refused there.
	c7 := strings.Replace(src, "disable: [C6]", "disable: [C7]", 1)
	err := Validate(load(t, c7), map[string]*facts.Facts{"snd": node, "rsp": pod, "rsp-node": node})
	if err == nil || !strings.Contains(err.Error(), "t.yaml:13:24: idle state C7 does not exist on CPU 2 of host rsp-node") {
		t.Errorf("C7 on the node: %v", err)
	}
	ro := *node
	ro.SysfsWritable, ro.ProcIRQWritable = &no, &no
	err = Validate(load(t, src), map[string]*facts.Facts{"snd": node, "rsp": pod, "rsp-node": &ro})
	for _, w := range []string{"t.yaml:11:5: in a pod: on host rsp-node /proc/irq is read-only", "t.yaml:13:5: in a pod: on host rsp-node /sys is mounted read-only", "give hosts.rsp the privileged host agent"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("node agent without writable /sys: want %q in\n%v", w, err)
		}
	}
	for _, c := range []struct{ hosts, want string }{
		{"  snd: {via: local, roles: [sender], node: ssh n1}\n  rsp: {via: local, roles: [responder]}\n", "t.yaml:3:38: node: reaches the agent that applies a responder's node knobs, and host snd is not a responder"},
		{"  snd: {via: local, roles: [sender]}\n  rsp: {via: local, roles: [responder], node: kubectl exec -n rig agent --}\n", "t.yaml:4:47: via \"kubectl exec -n rig agent --\" lacks -i"},
		{"  snd: {via: local, roles: [sender]}\n  rsp: {via: local, roles: [responder], node: ssh n1}\n  rsp-node: {via: local, roles: [capture]}\n", "t.yaml:4:47: the node agent of host rsp is named rsp-node, which is another host's name"},
		{"  snd: {via: local, roles: [sender]}\n  r1: {via: local, roles: [responder], node: ssh n1}\n  r2: {via: local, roles: [responder], node: ssh n1}\n", "t.yaml:5:46: hosts r1 and r2 name one node agent (ssh n1)"},
	} {
		_, err := Parse("t.yaml", []byte("name: t\nhosts:\n"+c.hosts+"traffic: {group: \"239.1.1.1:5000\"}\narms:\n  - name: a\n"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want %q, got %v", c.want, err)
		}
	}
}

// With several responders the arms' own knobs act on each: a node knob
// there is refused when one responder pod has no node agent, and taken
// when it is written under the responder that has one.
func TestNodeKnobsFanout(t *testing.T) {
	src := `name: t
hosts:
  snd: {via: local, roles: [sender]}
  pinned: {via: kubectl exec -i rig-responder-pinned --, roles: [responder], node: kubectl exec -i rig-host-agent-x7k2p --}
  shared: {via: kubectl exec -i rig-responder-shared --, roles: [responder]}
traffic: {group: "239.1.1.1:5000"}
defaults:
  responders:
    pinned: {responder: {cpu: 2}}
    shared: {responder: {cpu: 3}}
arms:
  - name: base
  - name: c6
`
	no, yes := false, true
	fs := hostfs.FS{Root: "../hostinfo/testdata/isolated"}
	pod := treeWithStressNG(t, fs)
	pod.SysfsWritable, pod.ProcIRQWritable, pod.CPUDMALatency = &no, &no, &no
	node := treeWithStressNG(t, fs)
	node.SysfsWritable, node.ProcIRQWritable, node.CPUDMALatency = &yes, &yes, &yes
	byHost := map[string]*facts.Facts{"snd": node, "pinned": pod, "pinned-node": node, "shared": pod}
	err := Validate(load(t, src+"    cstate: {disable: [C6]}\n"), byHost)
	if err == nil || !strings.Contains(err.Error(), "t.yaml:14:5: in a pod: on host shared /sys is mounted read-only") || strings.Contains(err.Error(), "host pinned") {
		t.Errorf("arm-level cstate with one node agent: %v", err)
	}
	if err := Validate(load(t, src+"    responders: {pinned: {cstate: {disable: [C6]}}}\n"), byHost); err != nil {
		t.Errorf("cstate under the responder with the node agent: %v", err)
	}
}
