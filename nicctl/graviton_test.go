package nicctl

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/ethtoolnl"
	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
)

// gravitonTrees are /proc/interrupts of an AWS Graviton (arm64) host: the
// Edge/Level column of GENERIC_IRQ_SHOW_LEVEL sits between the hwirq and
// the ENA's action names. ens5's IRQs: the management vector, then queues.
var gravitonTrees = []struct {
	file string
	irqs []int // msi_irqs of ens5, ena-mgmnt first
}{
	{"../internal/hostinfo/testdata/c8g/proc/interrupts", []int{18, 19, 20, 21, 22, 23, 24, 25, 26}},
	{"c8g-al2023-6.1", []int{17, 18, 19, 20, 21, 22, 23, 24, 25}},
}

func TestDiscoverIRQsGraviton(t *testing.T) {
	for _, g := range gravitonTrees {
		t.Run(g.file, func(t *testing.T) {
			fs := buildTree(t, g.file, []fakeNIC{{iface: "ens5", bdf: "0000:00:05.0", driver: "ena", irqs: g.irqs}})
			in, err := hostinfo.ReadInterrupts(fs)
			if err != nil {
				t.Fatal(err)
			}
			d, err := facts.FindDevice(fs, "ens5")
			if err != nil {
				t.Fatal(err)
			}
			irqs, err := facts.DiscoverIRQs(fs, d, in)
			if err != nil {
				t.Fatal(err)
			}
			var got []wantIRQ
			for _, q := range irqs {
				got = append(got, wantIRQ{q.Number, q.Kind, q.Queue})
			}
			var want []wantIRQ
			for q, n := range g.irqs[1:] {
				want = append(want, wantIRQ{n, facts.IRQTxRx, q})
			}
			want = append(want, wantIRQ{g.irqs[0], facts.IRQMisc, -1})
			if !slices.Equal(got, want) {
				t.Fatalf("got %v\nwant %v", got, want)
			}
			if irqs[0].Name != "ens5-Tx-Rx-0" || len(irqs[0].Counts) != 8 {
				t.Fatalf("queue 0: %+v", irqs[0])
			}
		})
	}
}

// TestSetGraviton places ENA queue IRQs on a Graviton tree and takes them
// back; with ens5 carrying the default route (a single-ENI host) it needs
// AllowMgmt.
func TestSetGraviton(t *testing.T) {
	g := gravitonTrees[0]
	fs := buildTree(t, g.file, []fakeNIC{{iface: "ens5", bdf: "0000:00:05.0", driver: "ena", irqs: g.irqs}})
	before := snapshot(t, fs.Root)
	env := newEnv(fs, &fakeEthtool{})
	j, _ := openJournal(t, env)
	ctx := context.Background()
	chg, err := Set(ctx, env, j, "ens5", Settings{IRQCPUPerQueue: []int{2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if len(chg) != 8 {
		t.Fatalf("changes: %+v", chg)
	}
	for q, n := range g.irqs[1:] {
		if v, _ := fs.ReadString(fmt.Sprintf("/proc/irq/%d/smp_affinity_list", n)); v != fmt.Sprint(2+q%2) {
			t.Errorf("queue %d IRQ %d affinity %q", q, n, v)
		}
	}
	if v, _ := fs.ReadString(fmt.Sprintf("/proc/irq/%d/smp_affinity_list", g.irqs[0])); v != "0-7" {
		t.Fatalf("ena-mgmnt moved: %q", v)
	}
	if _, err := j.Undo(ctx); err != nil {
		t.Fatal(err)
	}
	if d := diffSnap(before, snapshot(t, fs.Root)); len(d) > 0 {
		t.Fatalf("tree differs after undo:\n%s", strings.Join(d, "\n"))
	}

	// Single ENI: ens5 carries the default route.
	write(t, fs.Root, "/proc/net/route", "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"+
		"ens5\t00000000\t0100200A\t0003\t0\t0\t512\t00000000\t0\t0\t0\n", 0o444)
	if _, err := Set(ctx, env, j, "ens5", Settings{IRQCPUs: []int{1}}); err == nil || !strings.Contains(err.Error(), "carries the default route") {
		t.Fatalf("management interface changed without AllowMgmt: %v", err)
	}
	if _, err := Set(ctx, env, j, "ens5", Settings{IRQCPUs: []int{1}, AllowMgmt: true}); err != nil {
		t.Fatalf("AllowMgmt: %v", err)
	}
	if _, err := j.Undo(ctx); err != nil {
		t.Fatal(err)
	}
}

// Show records the ENA driver's own facts: out-of-tree version, packet
// timestamping state, LLQ and ENA Express (fake c7i: amzn-drivers 2.15.0g).
func TestShowENA(t *testing.T) {
	fs := hostfs.FS{Root: "../internal/hostinfo/testdata/c7i"}
	yes, hdr := true, uint32(224)
	env := newEnv(fs, &fakeEthtool{rings: &ethtoolnl.Rings{TxPush: &yes, TxPushBufLen: &hdr}})
	env.Stats = func(string) (map[string]uint64, error) {
		return map[string]uint64{"ena_srd_mode": 1, "ena_srd_tx_pkts": 7, "rx_drops": 0}, nil
	}
	in, err := facts.Show(context.Background(), &env.NIC, "ens5")
	if err != nil {
		t.Fatal(err)
	}
	e := in.ENA
	if e == nil || !e.OutOfTree || e.Version != "2.15.0g" || !e.AtLeast(2, 15, 0) || e.AtLeast(2, 16, 0) || e.SrcVersion == "" ||
		e.PHCEnable == nil || *e.PHCEnable || e.PHCErrorBoundNS != nil || e.LargeLLQ == nil || !*e.LargeLLQ ||
		e.HWTimestamping == nil || *e.HWTimestamping != (facts.ENATimestamping{RXSupported: true}) ||
		e.LLQ != "on" || *e.LLQHeaderBytes != 224 || !e.ExpressOn() || e.UDPOverSRD() || e.SRD["ena_srd_tx_pkts"] != 7 || len(e.SRD) != 1 || e.Errors != nil {
		t.Fatalf("ENA facts: %+v", e)
	}
	if len(in.IRQs) != 9 || in.IRQs[0].Name != "ens5-Tx-Rx-0" || in.Mgmt == "" {
		t.Fatalf("IRQs %+v mgmt %v", in.IRQs, in.Mgmt)
	}
	// Not an ENA: no ENA section.
	if in, err := facts.Show(context.Background(), &newEnv(buildTree(t, "mixed", mixedNICs), &fakeEthtool{}).NIC, "ens3f0np0"); err != nil || in.ENA != nil {
		t.Fatalf("mlx5: %v %+v", err, in.ENA)
	}
}
