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
			if !strings.HasPrefix(mine[i], w) || !strings.Contains(mine[i], "use the host agent") {
				t.Errorf("%s: error %d:\n%s\nwant %q and the host agent", c.name, i, mine[i], w)
			}
		}
	}
}
