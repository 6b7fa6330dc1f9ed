package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
)

const singleENI = `name: single-eni
hosts:
  h: {via: local, roles: [sender, responder], iface: eth0%s}
traffic:
  group: 239.1.1.1:5000
arms:
  - name: base
  - name: irq-local
    responder: {cpu: 1}
    irq: {cpus: [1]}
  - name: no-moderation
    nic: {coalesce: {rx-usecs: 0}}
`

// An arm that changes the interface carrying the default route is refused
// up front (dry-run) unless the host says allow-mgmt: true.
func TestMgmtInterfaceRefused(t *testing.T) {
	f := smallHost()
	f.Mgmt = []string{"eth0"}
	s := load(t, strings.Replace(singleENI, "%s", "", 1))
	var list ErrorList
	if err := Validate(s, factsFor(s, f)); !errors.As(err, &list) || len(list) != 2 {
		t.Fatalf("want two errors (irq and nic arms), got %v", err)
	}
	for i, where := range []string{"t.yaml:10:10", "t.yaml:12:10"} {
		msg := list[i].Error()
		for _, want := range []string{where, "eth0 on host h carries the default route", "allow-mgmt: true to hosts.h", "second interface"} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %d lacks %q:\n%s", i, want, msg)
			}
		}
	}
	// A host that has the second interface already: the fix names it
	// instead of asking for one.
	two := smallHost()
	two.Ifaces, two.Mgmt = []string{"eth0", "eth1", "lo"}, []string{"eth0"}
	if err := Validate(s, factsFor(s, two)); err == nil || !strings.Contains(err.Error(), "measure on eth1 (hosts.h.iface), which is not a management interface") ||
		strings.Contains(err.Error(), "attach a second ENI") {
		t.Errorf("two interfaces: %v", err)
	}
	s = load(t, strings.Replace(singleENI, "%s", ", allow-mgmt: true", 1))
	if !s.Hosts[0].AllowMgmt {
		t.Fatal("allow-mgmt not loaded")
	}
	if err := Validate(s, factsFor(s, f)); err != nil {
		t.Fatalf("allow-mgmt: true: %v", err)
	}
	// Another interface, or no irq/nic knob: nothing to refuse.
	f.Mgmt = []string{"eth1"}
	s = load(t, strings.Replace(singleENI, "%s", "", 1))
	if err := Validate(s, factsFor(s, f)); err != nil {
		t.Fatalf("eth0 is not the management interface: %v", err)
	}
	if _, err := Parse("t.yaml", []byte(strings.Replace(singleENI, "%s", ", allow-mgmt: yes please", 1))); err == nil || !strings.Contains(err.Error(), "allow-mgmt") {
		t.Fatalf("a non-bool allow-mgmt: %v", err)
	}
}

// arm64Idle is an arm64 host with a cpuidle driver (cpuidle-psci): WFI and
// one deeper state on 4 CPUs, one thread per core.
func arm64Idle(t *testing.T) hostfs.FS {
	root := t.TempDir()
	w := func(p, v string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w("sys/devices/system/cpu/online", "0-3")
	w("sys/devices/system/cpu/cpuidle/current_driver", "psci_idle")
	for c := 0; c < 4; c++ {
		d := fmt.Sprintf("sys/devices/system/cpu/cpu%d/", c)
		w(d+"topology/thread_siblings_list", fmt.Sprint(c))
		for k, st := range [][2]string{{"WFI", "1"}, {"cpu-sleep-0", "150"}} {
			for f, v := range map[string]string{"name": st[0], "latency": st[1], "residency": st[1], "disable": "0", "usage": "0", "time": "0"} {
				w(fmt.Sprintf("%scpuidle/state%d/%s", d, k, f), v)
			}
		}
	}
	return hostfs.FS{Root: root}
}

func emulated(t *testing.T, arms string) *Scenario {
	return load(t, "name: t\nemulate: netns\ntraffic:\n  group: 239.1.1.1:5000\narms:\n"+arms)
}

// Idle-state arms on arm64: poll is refused where no POLL state exists,
// max-latency-us 0 is relabelled "shallowest state (WFI)", and without a
// cpuidle driver (AWS Graviton) any cstate arm is refused.
func TestCStateArm64(t *testing.T) {
	c8g := tree(t, hostfs.FS{Root: "../hostinfo/testdata/c8g"})
	c7i := tree(t, hostfs.FS{Root: "../hostinfo/testdata/c7i"})
	psci := tree(t, arm64Idle(t))
	both := func(f *facts.Facts) map[string]*facts.Facts {
		return map[string]*facts.Facts{EmulatedSender: f, EmulatedResponder: f}
	}
	poll := "  - name: poll\n    responder: {cpu: 1}\n    cstate: {poll: true}\n"
	qos := "  - name: qos0\n    cstate: {max-latency-us: 0}\n"
	for _, c := range []struct {
		name  string
		f     *facts.Facts
		arms  string
		err   []string // all in the first error; none: valid
		notes []string
	}{
		{"c7i poll", c7i, poll, nil, nil},
		{"c7i qos0", c7i, qos, nil, nil},
		{"psci poll", psci, poll, []string{"t.yaml:8:20", "no POLL idle state (states: WFI, cpu-sleep-0", "still idle in WFI", "disable: [cpu-sleep-0]", "idle=poll"}, nil},
		{"psci qos0", psci, qos, nil, []string{"cstate max-latency-us 0 on host responder: shallowest state only (WFI): the CPU has no POLL state"}},
		{"c8g poll", c8g, poll, []string{"t.yaml:8:5", "CPU 1 on host responder has no cpuidle states", "WFI on arm64", "leave cstate out"}, nil},
		{"c8g qos0", c8g, qos, []string{"CPU 0 on host responder has no cpuidle states"}, nil},
	} {
		s := emulated(t, c.arms)
		err := Validate(s, both(c.f))
		if c.err == nil {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
		} else {
			var list ErrorList
			if !errors.As(err, &list) {
				t.Errorf("%s: want an error, got %v", c.name, err)
				continue
			}
			for _, w := range c.err {
				if !strings.Contains(list[0].Error(), w) {
					t.Errorf("%s: error lacks %q:\n%s", c.name, w, list[0].Error())
				}
			}
		}
		if !slices.Equal(s.Arms[0].Notes, c.notes) {
			t.Errorf("%s: notes %q, want %q", c.name, s.Arms[0].Notes, c.notes)
		}
	}
	// The dry run prints the relabelled effect under the arm.
	s := emulated(t, qos)
	if err := Validate(s, both(psci)); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteDryRun(&b, s, s.Plan(), DryRunOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "note: cstate max-latency-us 0 on host responder: shallowest state only (WFI)") {
		t.Fatalf("dry run:\n%s", b.String())
	}
}

// smt-sibling arms are skipped, with the reason, on a host without SMT
// (c8g: one thread per core) and run where the CPU has a sibling (c7i).
func TestSMTSiblingSkippedWithoutSMT(t *testing.T) {
	arms := "  - name: base\n    responder: {cpu: 1}\n  - name: sibling-busy\n    responder: {cpu: 1}\n    smt-sibling: {load: --cpu 1}\n" +
		"  - name: needs-smt\n    responder: {cpu: 1}\n    requires: [smt]\n"
	for tree, skip := range map[string]string{
		"c8g": "CPU 1 has no SMT sibling (thread_siblings_list 1: one thread per core) for the smt-sibling load",
		"c7i": "",
	} {
		f := treeWithStressNG(t, hostfs.FS{Root: "../hostinfo/testdata/" + tree})
		s := emulated(t, arms)
		if err := Validate(s, map[string]*facts.Facts{EmulatedSender: f, EmulatedResponder: f}); err != nil {
			t.Fatalf("%s: %v", tree, err)
		}
		if s.Arms[0].Skip != "" || s.Arms[1].Skip != skip {
			t.Errorf("%s: skips %q, %q; want %q", tree, s.Arms[0].Skip, s.Arms[1].Skip, skip)
		}
		if (s.Arms[2].Skip == "") != (skip == "") {
			t.Errorf("%s: requires smt: skip %q", tree, s.Arms[2].Skip)
		}
	}
}
