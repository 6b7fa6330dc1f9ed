package envsnap

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
)

func fx(name string) hostfs.FS { return hostfs.FS{Root: "../hostinfo/testdata/" + name} }

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
	var back Snapshot
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
}

func TestRealVMAndNICHook(t *testing.T) {
	s := Take(context.Background(), fx("vm"), Options{Getenv: noenv, Ifaces: []string{"eth0"}})
	if len(s.CPU.Online) != 2 || s.Power.IdleDriver != "haltpoll" || s.Clocksource != "tsc" {
		t.Fatalf("%+v", s)
	}
	if len(s.Errors) != 1 || !strings.Contains(s.Errors[0], "NICFacts is nil") {
		t.Fatalf("unwired NIC hook must be reported: %v", s.Errors)
	}
	defer func() { NICFacts = nil }()
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
