package nicctl

import (
	"golang.org/x/sys/unix"

	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/ethtoolnl"
	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/nicfake"
	"github.com/rig-project/rig/internal/tstamp"
)

type wantIRQ struct {
	n     int
	kind  string
	queue int
}

func TestDiscoverIRQsPerDriver(t *testing.T) {
	fs := buildTree(t, "mixed", mixedNICs)
	in, err := hostinfo.ReadInterrupts(fs)
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		driver, bdf string
		want        []wantIRQ
	}{
		"ens5": {"ena", "0000:00:05.0", []wantIRQ{{25, facts.IRQTxRx, 0}, {26, facts.IRQTxRx, 1}, {27, facts.IRQTxRx, 2}, {28, facts.IRQTxRx, 3}, {24, facts.IRQMisc, -1}}},
		"ens3f0np0": {"mlx5_core", "0000:3b:00.0", []wantIRQ{{61, facts.IRQTxRx, 0}, {62, facts.IRQTxRx, 1}, {63, facts.IRQTxRx, 2}, {64, facts.IRQTxRx, 3}, {60, facts.IRQMisc, -1},
			{65, facts.IRQNone, -1}}}, // in msi_irqs, no rule: still listed
		"ens1f0": {"ice", "0000:5e:00.0", []wantIRQ{{91, facts.IRQTxRx, 0}, {92, facts.IRQTxRx, 1}, {93, facts.IRQTxRx, 2}, {94, facts.IRQTxRx, 3}, {90, facts.IRQMisc, -1}}},
		"eth1":   {"virtio_net", "0000:00:03.0", []wantIRQ{{121, facts.IRQRx, 0}, {122, facts.IRQTx, 0}, {123, facts.IRQRx, 1}, {124, facts.IRQTx, 1}, {120, facts.IRQMisc, -1}}},
	}
	for iface, c := range cases {
		t.Run(iface, func(t *testing.T) {
			d, err := facts.FindDevice(fs, iface)
			if err != nil {
				t.Fatal(err)
			}
			if d.Driver != c.driver || d.BDF != c.bdf {
				t.Fatalf("device %+v", d)
			}
			irqs, err := facts.DiscoverIRQs(fs, d, in)
			if err != nil {
				t.Fatal(err)
			}
			var got []wantIRQ
			for _, q := range irqs {
				got = append(got, wantIRQ{q.Number, q.Kind, q.Queue})
				if q.Affinity != "0-3" || len(q.Counts) != 4 {
					t.Errorf("IRQ %d affinity %q counts %v", q.Number, q.Affinity, q.Counts)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("got %v\nwant %v", got, c.want)
			}
		})
	}
	if _, err := facts.FindDevice(fs, "nope0"); !errors.Is(err, facts.ErrNoDevice) {
		t.Fatalf("unknown iface: %v", err)
	}
	if _, err := facts.FindDevice(fs, "../etc"); err == nil {
		t.Fatal("path in interface name accepted")
	}
}

// managedFS makes writes to some /proc/irq files fail with an errno, the
// way the kernel refuses a managed IRQ. File permissions cannot simulate
// that: tests run as root in CI and root writes read-only files.
type managedFS struct {
	hostfs.FS
	refuse map[string]error
}

func (m managedFS) WriteFile(p, v string) error {
	if e := m.refuse[p]; e != nil {
		return &os.PathError{Op: "write", Path: p, Err: e}
	}
	return m.FS.WriteFile(p, v)
}

func newEnv(fs hostfs.FS, et ethtoolnl.Client) *Env {
	return &Env{NIC: facts.NIC{FS: fs, Ioctl: &fakeIoctl{}, Link: func(string) (facts.Link, error) { return facts.Link{Up: true, SpeedMbps: 100000, Duplex: "full"}, nil }, DialEthtool: func() (ethtoolnl.Client, error) { return et, nil }}, IRQBalance: HostIRQBalance{FS: fs, Run: func(context.Context, string, ...string) error { return errors.New("no systemctl in tests") }}}
}

func openJournal(t *testing.T, env *Env) (*journal.Journal, string) {
	dir := t.TempDir()
	j, err := journal.Open(dir, Handlers(env))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j, dir
}

func TestSetIRQAffinityManagedAndRestore(t *testing.T) {
	fs := buildTree(t, "mixed", mixedNICs)
	before := snapshot(t, fs.Root)
	// IRQ 93 refuses with EIO (older kernels); IRQ 94 has a read-only file (newer kernels).
	write(t, fs.Root, "/proc/irq/94/smp_affinity_list", "0-3\n", 0o444)
	before["proc/irq/94/smp_affinity_list"] = "-r--r--r-- 0-3\n"
	env := newEnv(fs, &fakeEthtool{})
	env.Files = managedFS{fs, map[string]error{"/proc/irq/93/smp_affinity_list": syscall.EIO}}
	j, dir := openJournal(t, env)
	ctx := context.Background()
	chg, err := Set(ctx, env, j, "ens1f0", Settings{IRQCPUPerQueue: []int{2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range chg {
		got[c.What] = c.Effective + "|" + c.Note
	}
	if !strings.HasPrefix(got["irq 91 (ice-ens1f0-TxRx-0)"], "2|") || !strings.HasPrefix(got["irq 92 (ice-ens1f0-TxRx-1)"], "3|") {
		t.Fatalf("per-queue affinity: %v", got)
	}
	if !strings.Contains(got["irq 93 (ice-ens1f0-TxRx-2)"], "EIO") || !strings.Contains(got["irq 94 (ice-ens1f0-TxRx-3)"], "read-only") {
		t.Fatalf("managed IRQs not reported: %v", got)
	}
	if v, _ := fs.ReadString("/proc/irq/90/smp_affinity_list"); v != "0-3" {
		t.Fatalf("misc IRQ moved: %q", v)
	}
	// Another rig must refuse while this journal is open/pending.
	if _, err := journal.Open(dir, Handlers(env)); !errors.Is(err, journal.ErrLocked) {
		t.Fatalf("second journal: %v", err)
	}
	rs, err := j.Undo(ctx)
	if err != nil || len(rs) != 2 {
		t.Fatalf("undo: %v %v", rs, err)
	}
	if d := diffSnap(before, snapshot(t, fs.Root)); len(d) > 0 {
		t.Fatalf("tree differs after undo:\n%s", strings.Join(d, "\n"))
	}
	// The same request with --require-irq-affinity fails, after doing the rest.
	_, err = Set(ctx, env, j, "ens1f0", Settings{IRQCPUs: []int{1}, RequireIRQAffinity: true})
	if err == nil || !strings.Contains(err.Error(), "IRQ 93 (EIO)") || !strings.Contains(err.Error(), "IRQ 94") {
		t.Fatalf("required affinity: %v", err)
	}
	if _, err := j.Undo(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestSetEthtoolJournaledAndRestored(t *testing.T) {
	fs := buildTree(t, "mixed", mixedNICs)
	et := &fakeEthtool{
		ch:        &ethtoolnl.Channels{CombinedMax: new(uint32(8)), Combined: new(uint32(8))},
		rings:     &ethtoolnl.Rings{RxMax: new(uint32(16384)), TxMax: new(uint32(1024)), Rx: new(uint32(1024)), Tx: new(uint32(512))},
		coal:      &ethtoolnl.Coalesce{RxUsecs: new(uint32(20)), TxUsecs: new(uint32(64)), AdaptiveRx: new(true)},
		ringRound: func(v uint32) uint32 { return 1 << (31 - uint32(countLeadingZeros(v))) }, // ENA: round down to a power of two
	}
	env := newEnv(fs, et)
	j, _ := openJournal(t, env)
	ctx := context.Background()
	chg, err := Set(ctx, env, j, "ens5", Settings{Channels: new(uint32(2)), RxRing: new(uint32(3000)), Coalesce: ethtoolnl.Coalesce{RxUsecs: new(uint32(0)), AdaptiveRx: new(false)}, IRQCPUs: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(et.sets, []string{"channels", "rings", "coalesce"}) {
		t.Fatalf("order %v (want channels, rings, coalesce, then IRQs)", et.sets)
	}
	byWhat := map[string]Change{}
	for _, c := range chg {
		byWhat[c.What] = c
	}
	if c := byWhat["rings"]; c.Requested != `{"rx":3000}` || c.Effective != `{"rx":2048}` || c.Previous != `{"rx":1024}` {
		t.Fatalf("rings change %+v (driver rounding must show in effective)", c)
	}
	if c := byWhat["coalesce"]; c.Previous != `{"rx_usecs":20,"adaptive_rx":true}` {
		t.Fatalf("coalesce %+v", c)
	}
	if _, err := j.Undo(ctx); err != nil {
		t.Fatal(err)
	}
	if *et.ch.Combined != 8 || *et.rings.Rx != 1024 || *et.rings.Tx != 512 || *et.coal.RxUsecs != 20 || !*et.coal.AdaptiveRx || *et.coal.TxUsecs != 64 {
		t.Fatalf("not restored: %+v %+v %+v", *et.ch, *et.rings, *et.coal)
	}
}

func countLeadingZeros(v uint32) int {
	n := 0
	for i := 31; i >= 0 && v&(1<<i) == 0; i-- {
		n++
	}
	return n
}

func TestSetRefusals(t *testing.T) {
	fs := buildTree(t, "mixed", mixedNICs)
	et := &fakeEthtool{ch: &ethtoolnl.Channels{CombinedMax: new(uint32(8)), Combined: new(uint32(8))}, rings: &ethtoolnl.Rings{RxMax: new(uint32(4096)), TxMax: new(uint32(1024)), Rx: new(uint32(1024)), Tx: new(uint32(1024))}}
	env := newEnv(fs, et)
	j, dir := openJournal(t, env)
	ctx := context.Background()
	for _, c := range []struct {
		iface string
		s     Settings
		want  string
		usage bool
	}{
		{"eth0", Settings{IRQCPUs: []int{1}}, "carries the default route", true},
		{"nope0", Settings{IRQCPUs: []int{1}}, "no such network interface", true},
		{"ens5", Settings{IRQCPUs: []int{7}}, "CPU 7 is not online (online CPUs: 0-3)", true},
		{"ens5", Settings{Channels: new(uint32(9))}, "combined channels 1..8", true},
		{"ens5", Settings{RxRing: new(uint32(0))}, "--rx-ring 0 out of range: 1..4096", true},
		{"ens5", Settings{Coalesce: ethtoolnl.Coalesce{RxUsecs: new(uint32(0))}}, "COALESCE_GET ens5: not supported by this driver", false},
		{"ens5", Settings{IRQCPUs: []int{1}, IRQCPUPerQueue: []int{2}}, "exclude each other", true},
	} {
		_, err := Set(ctx, env, j, c.iface, c.s)
		if err == nil || !strings.Contains(err.Error(), c.want) || errors.Is(err, cli.ErrUsage) != c.usage {
			t.Errorf("%s %+v: got %v, want %q (usage %v)", c.iface, c.s, err, c.want, c.usage)
		}
	}
	if c, _ := fs.ReadString("/proc/irq/25/smp_affinity_list"); c != "0-3" || len(et.sets) != 0 {
		t.Fatal("a refused request changed the host")
	}
	if err := journal.CheckPending(dir); err != nil {
		t.Fatalf("refusals left a pending journal: %v", err)
	}
	// --allow-mgmt lifts the guard (eth0 has no IRQs in this tree, so the
	// error is now about IRQs, not the route).
	_, err := Set(ctx, env, j, "eth0", Settings{IRQCPUs: []int{1}, AllowMgmt: true})
	if err == nil || !strings.Contains(err.Error(), "no queue IRQs") {
		t.Fatalf("allow-mgmt: %v", err)
	}
}

func TestShowFakeTree(t *testing.T) {
	fs := buildTree(t, "mixed", mixedNICs)
	write(t, fs.Root, "/proc/4242/comm", "irqbalance\n", 0o444)
	write(t, fs.Root, "/proc/4242/cgroup", "0::/system.slice/irqbalance.service\n", 0o444)
	write(t, fs.Root, "/proc/4242/environ", "PATH=/bin\x00IRQBALANCE_BANNED_CPUS=0000000c\x00", 0o444)
	write(t, fs.Root, "/proc/1/comm", "systemd\n", 0o444)
	env := newEnv(fs, &fakeEthtool{ch: &ethtoolnl.Channels{CombinedMax: new(uint32(4)), Combined: new(uint32(4))}})
	in, err := facts.Show(context.Background(), &env.NIC, "ens3f0np0")
	if err != nil {
		t.Fatal(err)
	}
	if in.Driver != "mlx5_core" || len(in.IRQs) != 6 || in.IRQBalance == nil || !in.IRQBalance.Systemd || in.IRQBalance.BannedCPUs != "2-3" || in.IRQBalance.PID != 4242 {
		t.Fatalf("show: %+v %+v", in, in.IRQBalance)
	}
	if !strings.Contains(in.Errors["coalesce"], "not supported by this driver") || in.Mgmt != "" {
		t.Fatalf("errors %v mgmt %v", in.Errors, in.Mgmt)
	}
	var sb strings.Builder
	in.WriteText(&sb)
	for _, w := range []string{"mlx5_comp3@pci:0000:3b:00.0", "combined 4/4", "banned CPUs 2-3", "unattributed"} {
		if !strings.Contains(sb.String(), w) {
			t.Errorf("text output lacks %q:\n%s", w, sb.String())
		}
	}
}

// recIRQBalance records Stop/Start, standing in for systemctl.
type recIRQBalance struct {
	running bool
	calls   []string
}

func (r *recIRQBalance) State(context.Context) (facts.IRQBalanceState, error) {
	return facts.IRQBalanceState{Running: r.running, Systemd: true}, nil
}
func (r *recIRQBalance) Stop(context.Context) error {
	r.calls = append(r.calls, "stop")
	r.running = false
	return nil
}
func (r *recIRQBalance) Start(context.Context) error {
	r.calls = append(r.calls, "start")
	r.running = true
	return nil
}

func TestHoldIRQBalance(t *testing.T) {
	fs := buildTree(t, "mixed", mixedNICs)
	for _, running := range []bool{true, false} {
		t.Run(fmt.Sprint("running=", running), func(t *testing.T) {
			rb := &recIRQBalance{running: running}
			env := newEnv(fs, &fakeEthtool{})
			env.IRQBalance = rb
			j, _ := openJournal(t, env)
			if _, err := Set(context.Background(), env, j, "ens5", Settings{HoldIRQBalance: true, IRQCPUs: []int{0}}); err != nil {
				t.Fatal(err)
			}
			if _, err := j.Undo(context.Background()); err != nil {
				t.Fatal(err)
			}
			want := []string{"stop", "start"}
			if !running {
				want = nil // restart it only if nicctl stopped it
			}
			if !slices.Equal(rb.calls, want) {
				t.Fatalf("calls %v, want %v", rb.calls, want)
			}
		})
	}
}

func TestIRQBalanceWarning(t *testing.T) {
	fs := buildTree(t, "mixed", mixedNICs)
	write(t, fs.Root, "/proc/4242/comm", "irqbalance\n", 0o444)
	write(t, fs.Root, "/proc/4242/environ", "IRQBALANCE_BANNED_CPULIST=2\x00", 0o444)
	env := newEnv(fs, &fakeEthtool{})
	j, _ := openJournal(t, env)
	chg, err := Set(context.Background(), env, j, "ens5", Settings{IRQCPUPerQueue: []int{2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if chg[0].What != "irqbalance" || !strings.Contains(chg[0].Note, "does not ban CPU 3") {
		t.Fatalf("no irqbalance warning: %+v", chg[0])
	}
	j.Undo(context.Background())
}

func TestHostIRQBalanceStop(t *testing.T) {
	fs := buildTree(t, "mixed", nil)
	write(t, fs.Root, "/proc/77/comm", "irqbalance\n", 0o444)
	write(t, fs.Root, "/proc/77/cgroup", "0::/user.slice\n", 0o444)
	var ran []string
	h := HostIRQBalance{FS: fs, Run: func(_ context.Context, n string, a ...string) error {
		ran = append(ran, n+" "+strings.Join(a, " "))
		return nil
	}}
	if err := h.Stop(context.Background()); !errors.Is(err, ErrNotSystemd) || len(ran) != 0 {
		t.Fatalf("non-systemd irqbalance: %v %v", err, ran)
	}
	write(t, fs.Root, "/proc/77/cgroup", "0::/system.slice/irqbalance.service\n", 0o444)
	if err := h.Stop(context.Background()); err != nil || !slices.Equal(ran, []string{"systemctl stop irqbalance.service"}) {
		t.Fatalf("systemd irqbalance: %v %v", err, ran)
	}
}

func TestSetHWTstampFirstAndRestored(t *testing.T) {
	fs := buildTree(t, "mixed", mixedNICs)
	et := &fakeEthtool{ch: &ethtoolnl.Channels{CombinedMax: new(uint32(8)), Combined: new(uint32(8))}}
	env := newEnv(fs, et)
	ts := &fakeTS{caps: tsCapsAll, grant: func(c tstamp.HWTstampConfig) tstamp.HWTstampConfig {
		if c.RxFilter == tstamp.FilterPTPv2Event {
			c.RxFilter = tstamp.FilterAll // upscaling driver (ENA, sfc)
		}
		return c
	}}
	env.TS = ts
	j, _ := openJournal(t, env)
	chg, err := Set(context.Background(), env, j, "ens5", Settings{HWTstamp: "ptp", Channels: new(uint32(4))})
	if err != nil {
		t.Fatal(err)
	}
	if chg[0].What != "hwtstamp" || chg[0].Effective != "tx_type=ON rx_filter=ALL" || chg[0].Requested != "tx_type=ON rx_filter=PTP_V2_EVENT" {
		t.Fatalf("hwtstamp must come first and show the upscaled filter: %+v", chg)
	}
	if _, err := j.Undo(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ts.cur != (tstamp.HWTstampConfig{}) || *et.ch.Combined != 8 {
		t.Fatalf("not restored: %+v %+v", ts.cur, *et.ch)
	}
	// "all" on a NIC already stamping everything: nothing written.
	ts.cur, ts.sets = tstamp.HWTstampConfig{TxType: tstamp.TxOn, RxFilter: tstamp.FilterAll}, nil
	chg, err = Set(context.Background(), env, j, "ens5", Settings{HWTstamp: "all"})
	if err != nil || len(ts.sets) != 0 || !strings.Contains(chg[0].Note, "no change") {
		t.Fatalf("all on a NIC already on: %+v %v (sets %v)", chg, err, ts.sets)
	}
	// A bond (its config carries HWTSTAMP_FLAG_BONDED_PHC_INDEX) takes a
	// change only with that flag; "all" is refused, naming the slave fix.
	bond := tstamp.HWTstampConfig{Flags: tstamp.FlagBondedPHC, TxType: tstamp.TxOn, RxFilter: tstamp.FilterAll}
	ts.cur, ts.sets, ts.grant = bond, nil, nil
	if _, err := Set(context.Background(), env, j, "ens5", Settings{HWTstamp: "off"}); err != nil || len(ts.sets) != 1 || ts.sets[0].Flags != tstamp.FlagBondedPHC {
		t.Fatalf("off on a bond: %v (sets %v)", err, ts.sets)
	}
	if _, err := j.Undo(context.Background()); err != nil || ts.cur != bond {
		t.Fatalf("bond not restored: %v %+v", err, ts.cur)
	}
	if _, err := Set(context.Background(), env, j, "ens5", Settings{HWTstamp: "all"}); !errors.Is(err, ErrTimestamping) || !strings.Contains(err.Error(), "measure on the active slave") {
		t.Fatalf("all on a bond: %v", err)
	}
	// A driver that cannot report its config: refused before anything changes.
	env.TS = &fakeTS{caps: tsCapsAll, getErr: unix.EOPNOTSUPP}
	_, err = Set(context.Background(), env, j, "ens5", Settings{HWTstamp: "ptp", Channels: new(uint32(4))})
	if !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "could not be put back") || len(et.sets) != 2 {
		t.Fatalf("unreadable hwtstamp config: %v (sets %v)", err, et.sets)
	}
}

// `--hwtstamp rx` enables what a capture needs and keeps tx_type, so an
// RX-only NIC (ENA, whose profile refuses TX ON) is enabled; "all" is
// refused there before anything changes, naming the missing TX stamps.
func TestSetHWTstampRX(t *testing.T) {
	n := nicfake.New(nicfake.ENA(), "ens6")
	h, err := nicfake.NewHost(t.TempDir(), n, "ens5")
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{NIC: facts.NIC{FS: h.FS, TS: n}, LinkSettle: time.Millisecond, Clock: nicfake.NewClock()}
	j, _ := openJournal(t, env)
	ctx := context.Background()
	if _, err := Set(ctx, env, j, "ens6", Settings{HWTstamp: "all"}); !errors.Is(err, ErrTimestamping) || !strings.Contains(err.Error(), "TX: no hardware TX stamps") || len(n.Sets()) != 0 {
		t.Fatalf("all on an RX-only NIC: %v (sets %+v)", err, n.Sets())
	}
	chg, err := Set(ctx, env, j, "ens6", Settings{HWTstamp: "rx"})
	if err != nil || len(chg) != 1 || chg[0].Requested != "RX ALL" || chg[0].Effective != "tx_type=OFF rx_filter=ALL" || n.Config() != (tstamp.HWTstampConfig{RxFilter: tstamp.FilterAll}) {
		t.Fatalf("rx: %+v %v (config %s)", chg, err, n.Config())
	}
	if _, err := j.Undo(ctx); err != nil || n.Config() != (tstamp.HWTstampConfig{}) {
		t.Fatalf("undo: %v, config %s", err, n.Config())
	}
}
