package runner

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/scenario"
)

// everyKnob sets every knob the scenario format has, so the manifest test
// sees every JSON name the knobs can take.
const everyKnob = `name: keys
hosts:
  snd: {via: local, roles: [sender], iface: eth1}
  rsp: {via: ssh rsp, roles: [responder], iface: eth2}
traffic: {group: 239.1.1.1:5000, reply-timeout: 100ms}
defaults:
  responder: {sched: "fifo:50", poll: "busy-poll:50"}
arms:
  - name: a
    responder: {cpu: 1}
    irq: {cpus: 1}
    nic: {coalesce: {rx-usecs: 0, tx-usecs: 0, rx-frames: 1, adaptive-rx: false, adaptive-tx: false}, ring: {rx: 1024, tx: 1024}, channels: 2}
    cstate: {disable: [C6]}
    load: {stress-ng: --cpu 1, cpus: 0}
    smt-sibling: {load: --cpu 1}
    power: {governor: performance, turbo: off, min-perf-pct: 100, max-perf-pct: 100, min-freq: 2GHz, max-freq: 3GHz, cpus: 1}
    tuned: network-latency
    requires: [isolated]
  - name: b
    responder: {cpu: {quietest: "0-1", window: 2s}}
    cstate: {max-latency-us: 0}
`

// TestManifestKeysOneCasing: every key manifest.json carries, the knobs'
// included, is snake_case like the rest of the file.
func TestManifestKeysOneCasing(t *testing.T) {
	s, err := scenario.Parse("keys.yaml", []byte(everyKnob))
	if err != nil {
		t.Fatal(err)
	}
	m := (&run{s: s, plan: s.Plan(), start: time.Unix(0, 0)}).manifest()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	snake := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	n := 0
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				n++
				if !snake.MatchString(k) {
					t.Errorf("manifest key %s.%s is not snake_case", path, k)
				}
				walk(path+"."+k, x)
			}
		case []any:
			for _, x := range v {
				walk(path+"[]", x)
			}
		}
	}
	walk("", doc)
	// The knobs of both arms are there, under their snake_case names.
	for _, want := range []string{`"adaptive_rx":false`, `"poll":"busy-poll:50"`, `"sched":"fifo:50"`, `"smt_sibling":{`, `"max_latency_us":0`,
		`"min_freq_khz":2000000`, `"quietest":{"cpus":[0,1],"window_ns":2000000000}`, `"stress_ng":["--cpu","1"]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("manifest lacks %s:\n%s", want, b)
		}
	}
	if n < 50 {
		t.Errorf("only %d keys walked: the manifest is not what this test thinks", n)
	}
}

// TestRestoreCommand: the command a run prints to put a host back after its
// agent died runs rig restore where that host's journal is, for every via:
// this machine, ssh, a network namespace (only there can a namespace's NIC
// be put back), kubectl exec, and ssh from a namespace.
func TestRestoreCommand(t *testing.T) {
	s, err := scenario.Parse("via.yaml", []byte(`name: via
hosts:
  a: {via: local, roles: [sender], iface: eth1}
  b: {via: ssh -p 2222 root@rsp, roles: [responder], iface: eth2}
  c: {via: ip netns exec lab-cap, roles: [capture], iface: cap0}
  d: {via: kubectl exec -i -n rig rig-responder --, roles: [responder], iface: eth0}
  e: {via: ip netns exec lab-snd ssh root@10.0.0.2, roles: [responder], iface: eth3}
traffic: {group: 239.1.1.1:5000}
arms:
  - name: a
`))
	if err != nil {
		t.Fatal(err)
	}
	r := &run{o: Options{Rig: "/opt/rig/bin/rig", RemoteRig: "/usr/local/bin/rig"}}
	want := map[string]string{
		"a": "/opt/rig/bin/rig restore",
		"b": "ssh -p 2222 root@rsp /usr/local/bin/rig restore",
		"c": "ip netns exec lab-cap /opt/rig/bin/rig restore",
		"d": "kubectl exec -i -n rig rig-responder -- /usr/local/bin/rig restore",
		"e": "ip netns exec lab-snd ssh root@10.0.0.2 /usr/local/bin/rig restore",
	}
	for _, h := range s.Hosts {
		if got := restoreCommand(h.Command, r.agentRig(h)); got != want[h.Name] {
			t.Errorf("host %s (via %s): %q, want %q", h.Name, h.Via, got, want[h.Name])
		}
	}
}
