package envsnap

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostfs/hostfstest"
	"github.com/rig-project/rig/internal/power"
	"github.com/rig-project/rig/internal/power/powertest"
	"github.com/rig-project/rig/internal/rundir"
)

// fx is a fixture host tree, read in place.
var fx = hostfstest.Fixture

func noenv(string) string { return "" }

func TestIsolatedHost(t *testing.T) {
	s := Take(context.Background(), fx("isolated"), Options{Getenv: noenv})
	if len(s.Errors) != 0 {
		t.Fatalf("errors: %v", s.Errors)
	}
	if s.CPU.Cores != 4 || !s.CPU.SMT || len(s.CPU.Online) != 8 || !reflect.DeepEqual(s.CPU.Isolated, []int{2, 6}) ||
		!reflect.DeepEqual(s.CPU.NohzFull, []int{2, 6}) || !s.CPU.RcuNocbs.Contains(6) || !reflect.DeepEqual(s.CPU.NUMA, []int{0}) {
		t.Fatalf("cpu %+v", s.CPU)
	}
	if s.Power.IdleDriver != "intel_idle" || len(s.Power.Idle) != 8 || !s.Power.Idle[2].States[3].Disabled ||
		len(s.Power.Freq) != 8 || s.Power.Turbo == nil || s.Power.Turbo.Enabled {
		t.Fatalf("power %+v", s.Power)
	}
	if s.Clocksource != "tsc" || s.THP.Enabled != "madvise" || s.Kernel != "6.8.0-rig-fixture" {
		t.Fatalf("%+v", s)
	}
	if s.SchedRT == nil || !s.SchedRT.Unlimited() || s.SchedRT.PeriodUS != 1_000_000 {
		t.Fatalf("sched_rt %+v", s.SchedRT)
	}
	if s.IRQBalance.Running || !reflect.DeepEqual(s.IRQBalance.BannedCPUs, []int{2, 6}) {
		t.Fatalf("irqbalance %+v", s.IRQBalance)
	}
	var found bool
	for _, q := range s.IRQs {
		if q.IRQ == 121 {
			found = q.Name == "mlx5_comp0@pci:0000:3b:00.0" && reflect.DeepEqual(q.Effective, []int{2})
		}
	}
	if !found {
		t.Fatalf("irq 121 missing or wrong: %+v", s.IRQs)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back rundir.Snapshot
	if err := json.Unmarshal(b, &back); err != nil || back.CPU.Cores != 4 {
		t.Fatal(err)
	}
	var txt strings.Builder
	if err := s.WriteText(&txt); err != nil || !strings.Contains(txt.String(), "C6(exit 133us DISABLED)") {
		t.Fatalf("%v\n%s", err, txt.String())
	}
}

func TestIRQBalanceAndPodHosts(t *testing.T) {
	s := Take(context.Background(), fx("irqbalance"), Options{Getenv: noenv})
	if !s.IRQBalance.Running || s.IRQBalance.PIDs[0] != 812 || len(s.IRQBalance.BannedCPUs) != 0 {
		t.Fatalf("%+v", s.IRQBalance)
	}
	if len(s.PTP) != 1 || s.PTP[0].Comm != "ptp4l" || s.Power.Turbo == nil || !s.Power.Turbo.Enabled || s.THP.Enabled != "always" {
		t.Fatalf("%+v %+v", s.PTP, s.Power.Turbo)
	}
	p := Take(context.Background(), fx("k8spod"), Options{Getenv: func(k string) string {
		if k == "KUBERNETES_SERVICE_HOST" {
			return "10.0.0.1"
		}
		return ""
	}})
	if !p.InKubernetes || p.Cgroup == nil || p.Cgroup.Stat.NrThrottled != 17 || len(p.Power.Freq) != 0 {
		t.Fatalf("%+v", p)
	}
	// The pod has a PID namespace of its own: the node's irqbalance is
	// not among the processes it sees, and the snapshot says so.
	if s.IRQBalance.CannotTell != "" || !strings.Contains(p.IRQBalance.CannotTell, "PID namespace of its own") {
		t.Fatalf("irqbalance host %+v, pod %+v", s.IRQBalance, p.IRQBalance)
	}
	var b strings.Builder
	if err := p.WriteText(&b); err != nil || !strings.Contains(b.String(), "cannot tell: rig is in a PID namespace") || strings.Contains(b.String(), "not running") {
		t.Fatalf("%v\n%s", err, b.String())
	}
	// A cgroup v1 container (EKS AL2): the quota and throttling of the
	// container's own cgroup, where runc mounts it.
	v1 := Take(context.Background(), fx("eks-al2-pinned"), Options{Getenv: noenv})
	if v1.Cgroup == nil || v1.Cgroup.CPUMax.QuotaUS != 200000 || v1.Cgroup.Stat.NrThrottled != 37 || len(v1.Cgroup.CPUSet) != 2 {
		t.Fatalf("%+v", v1.Cgroup)
	}
}

func TestRealVMAndNICHook(t *testing.T) {
	s := Take(context.Background(), fx("vm"), Options{Getenv: noenv, Ifaces: []string{"eth0"}})
	if len(s.CPU.Online) != 2 || s.Power.IdleDriver != "haltpoll" || s.Clocksource != "tsc" {
		t.Fatalf("%+v", s)
	}
	// The default hook asks facts.Show, which finds no eth0 in the fixture's
	// /sys/class/net: the snapshot says so instead of omitting it.
	if len(s.Errors) != 1 || !strings.Contains(s.Errors[0], "nic eth0: interface eth0: no such network interface") || s.NIC["eth0"] != nil {
		t.Fatalf("a NIC facts.Show cannot read must be reported: %v", s.Errors)
	}
	defer func(f func(context.Context, hostfs.FS, string) (any, error)) { NICFacts = f }(NICFacts)
	NICFacts = func(ctx context.Context, fs hostfs.FS, iface string) (any, error) {
		if iface == "bad0" {
			return nil, errors.New("no such device")
		}
		return map[string]string{"driver": "virtio_net"}, nil
	}
	s = Take(context.Background(), fx("vm"), Options{Getenv: noenv, Ifaces: []string{"eth0", "bad0"}})
	if s.NIC["eth0"] == nil || len(s.Errors) != 1 || !strings.Contains(s.Errors[0], "bad0") {
		t.Fatalf("%+v %v", s.NIC, s.Errors)
	}
}

// TestPowerEnvironment: governor, driver, limits and energy-performance
// preference per CPU, turbo with intel_pstate's min/max perf, and the tuned
// profile, in the JSON and the text.
func TestPowerEnvironment(t *testing.T) {
	fs := powertest.Build(t, powertest.IntelActive, 4)
	tu := power.TunedAdm{Path: filepath.Join(powertest.FakeTuned(t, "network-latency", true, ""), "tuned-adm")}
	s := Take(context.Background(), fs, Options{Getenv: noenv, Tuned: tu})
	if len(s.Errors) != 0 {
		t.Fatalf("errors: %v", s.Errors)
	}
	if len(s.Power.Freq) != 4 {
		t.Fatalf("freq %+v", s.Power.Freq)
	}
	f := s.Power.Freq[3]
	if f.Driver != "intel_pstate" || f.Governor != "powersave" || f.EPP != "balance_performance" || f.BaseKHz != 3100000 || f.HWMaxKHz != 3600000 {
		t.Fatalf("cpu3 %+v", f)
	}
	tb := s.Power.Turbo
	if tb == nil || !tb.Enabled || tb.MinPerfPct != 22 || tb.MaxPerfPct != 100 || tb.PstateMode != "active" {
		t.Fatalf("turbo %+v", tb)
	}
	if s.Power.Tuned == nil || s.Power.Tuned.Active != "network-latency" || !s.Power.Tuned.Running {
		t.Fatalf("tuned %+v", s.Power.Tuned)
	}
	b, _ := json.Marshal(s.Power)
	for _, key := range []string{`"epp":"balance_performance"`, `"governor":"powersave"`, `"intel_pstate_min_perf_pct":22`, `"tuned":{"active":"network-latency"`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("env JSON lacks %s:\n%s", key, b)
		}
	}
	var txt strings.Builder
	s.WriteText(&txt)
	for _, want := range []string{"cpu3 freq:       intel_pstate/powersave 1200000 kHz (limits 800000-3600000, hardware 800000-3600000) epp balance_performance",
		"turbo:           on (/sys/devices/system/cpu/intel_pstate/no_turbo)", "intel_pstate:    active, min_perf_pct 22, max_perf_pct 100", "tuned:           profile network-latency"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, txt.String())
		}
	}
	// Without tuned-adm: absent, not an error.
	vm := Take(context.Background(), powertest.Build(t, powertest.VMNone, 2), Options{Getenv: noenv})
	if vm.Power.Tuned != nil || !strings.Contains(strings.Join(vm.Absent, "; "), "tuned (no tuned-adm)") {
		t.Fatalf("tuned on a fake root without $RIG_TUNED_ADM: %+v %v", vm.Power.Tuned, vm.Absent)
	}
}

// env/<host>.json of a two-node host records each CPU's node and the
// responder NIC's, -1 where the platform gives none.
func TestNUMAHost(t *testing.T) {
	old := NICFacts
	NICFacts = func(context.Context, hostfs.FS, string) (any, error) { return nil, nil }
	defer func() { NICFacts = old }()
	s := Take(context.Background(), fx("numa2"), Options{Getenv: noenv, Ifaces: []string{"ens1", "ens2"}})
	if !reflect.DeepEqual(s.CPU.NUMA, []int{0, 1}) || s.CPU.Topology[5].Node != 1 || s.CPU.Topology[0].Node != 0 {
		t.Fatalf("cpu %+v", s.CPU)
	}
	if !reflect.DeepEqual(s.NICNode, map[string]int{"ens1": 1, "ens2": -1}) {
		t.Fatalf("nic numa nodes %v", s.NICNode)
	}
	var b strings.Builder
	if err := s.WriteText(&b); err != nil || !strings.Contains(b.String(), "nic ens1:        NUMA node 1\n") || !strings.Contains(b.String(), "NUMA node none given by the platform") {
		t.Errorf("text: %v\n%s", err, b.String())
	}
}
