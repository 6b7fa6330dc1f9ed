package nicctl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/nicfake"
	"github.com/rig-project/rig/internal/tstamp"
)

var (
	tsOff = tstamp.HWTstampConfig{TxType: tstamp.TxOff, RxFilter: tstamp.FilterNone}
	tsAll = tstamp.HWTstampConfig{TxType: tstamp.TxOn, RxFilter: tstamp.FilterAll}
	tsPTP = tstamp.HWTstampConfig{TxType: tstamp.TxOn, RxFilter: tstamp.FilterPTPv2Event}
)

func TestPrepareTimestamping(t *testing.T) {
	ctx := context.Background()
	probe := TSRequest{Mode: tstamp.Auto, Need: tstamp.NeedProbe}
	t.Run("already on: nothing written", func(t *testing.T) {
		env := newEnv(buildTree(t, "interrupts.mixed", mixedNICs), &fakeEthtool{})
		ts := &fakeTS{caps: tsCapsAll, cur: tsAll}
		env.TS = ts
		j, _ := openJournal(t, env)
		r, err := PrepareTimestamping(ctx, env, j, "ens1f0", probe)
		if err != nil || r.Changed || len(ts.sets) != 0 || r.Decision.Action != tstamp.ActKeep || !r.Hardware() {
			t.Fatalf("%+v %v (sets %v)", r, err, ts.sets)
		}
	})
	t.Run("off: written once, put back by the journal", func(t *testing.T) {
		env := newEnv(buildTree(t, "interrupts.mixed", mixedNICs), &fakeEthtool{})
		ts := &fakeTS{caps: tsCapsAll, cur: tsOff}
		env.TS = ts
		j, _ := openJournal(t, env)
		r, err := PrepareTimestamping(ctx, env, j, "ens1f0", probe)
		if err != nil || !r.Changed || r.Granted == nil || *r.Granted != tsAll || len(ts.sets) != 1 {
			t.Fatalf("%+v %v (sets %v)", r, err, ts.sets)
		}
		if !strings.Contains(r.String(), "granted tx_type=ON rx_filter=ALL (journaled, put back at the end)") {
			t.Fatalf("report %q", r)
		}
		// Asked again (a second arm, a second probe): already granted.
		if r, err := PrepareTimestamping(ctx, env, j, "ens1f0", probe); err != nil || r.Changed || len(ts.sets) != 1 {
			t.Fatalf("second prepare wrote again: %+v %v", r, err)
		}
		if _, err := j.Undo(ctx); err != nil || ts.cur != tsOff || len(ts.sets) != 2 {
			t.Fatalf("undo: %v, config %s, sets %v", err, ts.cur, ts.sets)
		}
	})
	t.Run("driver grants NONE: put back at once", func(t *testing.T) {
		env := newEnv(buildTree(t, "interrupts.mixed", mixedNICs), &fakeEthtool{})
		ts := &fakeTS{caps: tsCapsAll, cur: tsPTP, grant: func(c tstamp.HWTstampConfig) tstamp.HWTstampConfig {
			if c.RxFilter == tstamp.FilterAll {
				c.RxFilter = tstamp.FilterNone
			}
			return c
		}}
		env.TS = ts
		j, dir := openJournal(t, env)
		r, err := PrepareTimestamping(ctx, env, j, "ens1f0", probe)
		if err != nil || r.Changed || r.Decision.Action != tstamp.ActSoftware || ts.cur != tsPTP || !strings.Contains(r.Decision.Why, "the driver granted tx_type=ON rx_filter=NONE") {
			t.Fatalf("auto: %+v %v (config %s)", r, err, ts.cur)
		}
		hw := probe
		hw.Mode = tstamp.Hardware
		if _, err = PrepareTimestamping(ctx, env, j, "ens1f0", hw); !errors.Is(err, ErrTimestamping) || !errors.Is(err, errors.ErrUnsupported) || ts.cur != tsPTP {
			t.Fatalf("hardware: %v (config %s)", err, ts.cur)
		}
		if pending, _ := os.ReadFile(filepath.Join(dir, "journal.jsonl")); strings.Contains(string(pending), `"op":"apply"`) && !strings.Contains(string(pending), `"op":"undone"`) {
			t.Fatalf("journal left open:\n%s", pending)
		}
	})
	t.Run("ERANGE: refused, nothing changed", func(t *testing.T) {
		env := newEnv(buildTree(t, "interrupts.mixed", mixedNICs), &fakeEthtool{})
		ts := &fakeTS{caps: tsCapsAll, cur: tsOff, setErr: unix.ERANGE}
		env.TS = ts
		j, _ := openJournal(t, env)
		_, err := PrepareTimestamping(ctx, env, j, "ens1f0", TSRequest{Mode: tstamp.Hardware, Need: tstamp.NeedProbe})
		if !errors.Is(err, errors.ErrUnsupported) || !errors.Is(err, unix.ERANGE) || ts.cur != tsOff {
			t.Fatalf("%v (config %s)", err, ts.cur)
		}
	})
	t.Run("ptp4l owns it", func(t *testing.T) {
		fs := buildTree(t, "interrupts.mixed", mixedNICs)
		write(t, fs.Root, "/proc/812/comm", "ptp4l\n", 0o444)
		write(t, fs.Root, "/proc/812/cmdline", "ptp4l\x00-f\x00/etc/linuxptp/ptp4l.conf\x00", 0o444)
		write(t, fs.Root, "/etc/linuxptp/ptp4l.conf", "[global]\ntime_stamping hardware\n[ens1f0]\n", 0o444)
		env := newEnv(fs, &fakeEthtool{})
		ts := &fakeTS{caps: tsCapsAll, cur: tsPTP}
		env.TS = ts
		j, _ := openJournal(t, env)
		r, err := PrepareTimestamping(ctx, env, j, "ens1f0", probe)
		if err != nil || r.Decision.Action != tstamp.ActSoftware || len(ts.sets) != 0 || !strings.Contains(r.Decision.Why, "ptp4l (pid 812, [ens1f0] in /etc/linuxptp/ptp4l.conf) owns that config") {
			t.Fatalf("auto: %+v %v", r, err)
		}
		over := probe
		over.TakeOver = true
		if r, err := PrepareTimestamping(ctx, env, j, "ens1f0", over); err != nil || !r.Changed || ts.cur != tsAll {
			t.Fatalf("take-over: %+v %v", r, err)
		}
		if _, err := j.Undo(ctx); err != nil || ts.cur != tsPTP {
			t.Fatalf("ptp4l's config not put back: %v %s", err, ts.cur)
		}
	})
	t.Run("management interface", func(t *testing.T) {
		fs := buildTree(t, "interrupts.mixed", mixedNICs)
		write(t, fs.Root, "/proc/net/route", "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\nens5\t00000000\t0100A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n", 0o444)
		env := newEnv(fs, &fakeEthtool{})
		ts := &fakeTS{caps: tsCapsAll, cur: tsOff}
		env.TS = ts
		j, _ := openJournal(t, env)
		_, err := PrepareTimestamping(ctx, env, j, "ens5", TSRequest{Mode: tstamp.Hardware, Need: tstamp.NeedCapture})
		if !errors.Is(err, ErrTimestamping) || !strings.Contains(err.Error(), "carries the default route") || len(ts.sets) != 0 {
			t.Fatalf("%v (sets %v)", err, ts.sets)
		}
		if r, err := PrepareTimestamping(ctx, env, j, "ens5", TSRequest{Mode: tstamp.Auto, Need: tstamp.NeedCapture, AllowMgmt: true}); err != nil || !r.Changed {
			t.Fatalf("allowed: %+v %v", r, err)
		}
	})
	t.Run("a reset link is waited for", func(t *testing.T) {
		fs := buildTree(t, "interrupts.mixed", mixedNICs)
		dev := "/sys/devices/pci0000:00/0000:00:05.0/net/ens5/"
		write(t, fs.Root, dev+"carrier_changes", "4\n", 0o644)
		write(t, fs.Root, dev+"carrier", "1\n", 0o644)
		env := newEnv(fs, &fakeEthtool{})
		clk := nicfake.NewClock()
		env.LinkSettle, env.Clock = 30*time.Millisecond, clk
		// The user's IRQ placement before rig: each queue on CPU 1.
		for irq := 25; irq <= 28; irq++ {
			write(t, fs.Root, facts.IRQFile(irq, "smp_affinity_list"), "1\n", 0o644)
		}
		carrier := func(on bool) {
			n, _ := fs.ReadInt(dev + "carrier_changes")
			write(t, fs.Root, dev+"carrier_changes", strconv.FormatInt(n+1, 10)+"\n", 0o644)
			write(t, fs.Root, dev+"carrier", map[bool]string{true: "1\n", false: "0\n"}[on], 0o644)
		}
		ts := &fakeTS{caps: tsCapsAll, cur: tsOff, onSet: func() {
			// A driver that resets the port: the carrier drops (operstate
			// still up: linkwatch has not run) and comes back 100 ms
			// later; the queue IRQs are requested again with the default
			// affinity.
			carrier(false)
			for irq := 25; irq <= 28; irq++ {
				write(t, fs.Root, facts.IRQFile(irq, "smp_affinity_list"), "0-3\n", 0o644)
			}
			clk.AfterFunc(100*time.Millisecond, func() { carrier(true) })
		}}
		env.TS = ts
		j, _ := openJournal(t, env)
		start := clk.Now()
		r, err := PrepareTimestamping(ctx, env, j, "ens5", probe)
		if err != nil || !strings.Contains(r.Link, "link bounced (carrier_changes +2): up after 100ms, then settled 30ms") || clk.Now().Sub(start) != 130*time.Millisecond {
			t.Fatalf("%+v %v after %v", r, err, clk.Now().Sub(start))
		}
		affinity := func() string {
			var a []string
			for irq := 25; irq <= 28; irq++ {
				v, _ := fs.ReadString(facts.IRQFile(irq, "smp_affinity_list"))
				a = append(a, v)
			}
			return strings.Join(a, ",")
		}
		if !strings.Contains(r.Link, "the reset moved 4 queue IRQs, their affinity was put back") || affinity() != "1,1,1,1" {
			t.Fatalf("affinity after the reset: %s (%s)", affinity(), r.Link)
		}
		// Putting the config back resets the link again: the undo waits
		// for it and keeps the placement too.
		start = clk.Now()
		if _, err := j.Undo(ctx); err != nil || ts.cur != tsOff || affinity() != "1,1,1,1" || clk.Now().Sub(start) < 100*time.Millisecond {
			t.Fatalf("undo: %v, config %s, affinity %s, after %v", err, ts.cur, affinity(), clk.Now().Sub(start))
		}
	})
	t.Run("config unreadable: left alone", func(t *testing.T) {
		env := newEnv(buildTree(t, "interrupts.mixed", mixedNICs), &fakeEthtool{})
		ts := &fakeTS{caps: tsCapsAll, getErr: unix.EOPNOTSUPP}
		env.TS = ts
		j, _ := openJournal(t, env)
		r, err := PrepareTimestamping(ctx, env, j, "ens1f0", TSRequest{Mode: tstamp.Hardware, Need: tstamp.NeedProbe})
		if err != nil || r.Decision.Action != tstamp.ActUnknown || len(ts.sets) != 0 || !r.Hardware() || !strings.Contains(r.String(), "hwstamp_ctl -i ens1f0 -t 1 -r 1") {
			t.Fatalf("%+v %v", r, err)
		}
	})
}

// The link wait trusts the carrier, not operstate: linkwatch writes
// operstate later (a carrier-off is not urgent), so right after a reset
// it can still read up while the carrier is off and carrier_changes moved
// by one. Such a link that does not come back is an error naming what it
// shows, not a link "up after 0s".
func TestLinkWaitStaleOperstate(t *testing.T) {
	fs := buildTree(t, "interrupts.mixed", mixedNICs)
	dev := "/sys/devices/pci0000:00/0000:00:05.0/net/ens5/"
	write(t, fs.Root, dev+"carrier_changes", "4\n", 0o644)
	write(t, fs.Root, dev+"carrier", "1\n", 0o644)
	env := newEnv(fs, &fakeEthtool{})
	env.LinkTimeout, env.LinkSettle = 50*time.Millisecond, time.Millisecond
	env.TS = &fakeTS{caps: tsCapsAll, cur: tsOff, onSet: func() {
		write(t, fs.Root, dev+"carrier_changes", "5\n", 0o644)
		write(t, fs.Root, dev+"carrier", "0\n", 0o644)
	}}
	j, _ := openJournal(t, env)
	_, err := PrepareTimestamping(context.Background(), env, j, "ens5", TSRequest{Mode: tstamp.Auto, Need: tstamp.NeedProbe})
	if err == nil || !strings.Contains(err.Error(), "did not come back up within 50ms after the change (carrier 0, carrier_changes +1, operstate up)") {
		t.Fatalf("stale operstate: %v", err)
	}
}

// In auto mode a write the driver refuses although its capabilities list
// the mode (ERANGE, EOPNOTSUPP, EINVAL) settles for software stamps and
// says why; hardware mode still fails.
func TestAutoSettlesWhenTheWriteIsRefused(t *testing.T) {
	for _, e := range []unix.Errno{unix.ERANGE, unix.EOPNOTSUPP, unix.EINVAL} {
		env := newEnv(buildTree(t, "interrupts.mixed", mixedNICs), &fakeEthtool{})
		ts := &fakeTS{caps: tsCapsAll, cur: tsOff, setErr: e}
		env.TS = ts
		j, _ := openJournal(t, env)
		r, err := PrepareTimestamping(context.Background(), env, j, "ens1f0", TSRequest{Mode: tstamp.Auto, Need: tstamp.NeedProbe})
		if err != nil || r.Decision.Action != tstamp.ActSoftware || r.Hardware() || r.Changed || len(ts.sets) != 1 ||
			!strings.Contains(r.String(), "software: ens1f0's driver refused tx_type=ON rx_filter=ALL although its capabilities list it (tstamp: SIOCSHWTSTAMP") || !strings.HasSuffix(r.Decision.Why, ": software stamps") {
			t.Errorf("%v: %s, %v", e, r, err)
		}
		if _, err := PrepareTimestamping(context.Background(), env, j, "ens1f0", TSRequest{Mode: tstamp.Hardware, Need: tstamp.NeedProbe}); !errors.Is(err, e) {
			t.Errorf("%v in hardware mode: %v", e, err)
		}
	}
}

// A write the driver fails after resetting the interface (ENA asked for TX
// stamps it has not: EOPNOTSUPP, OFF/NONE stored, the config as it was)
// changed nothing the journal could see, yet the link bounced: the wait
// runs all the same and says so.
func TestFailedWriteStillWaitsForTheLink(t *testing.T) {
	n := nicfake.New(nicfake.ENA(), "ens6")
	h, err := nicfake.NewHost(t.TempDir(), n, "ens5")
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{NIC: facts.NIC{FS: h.FS, TS: n}, LinkSettle: time.Millisecond}
	j, _ := openJournal(t, env)
	chg, err := Set(context.Background(), env, j, "ens6", Settings{HWTstamp: "ptp"})
	if !errors.Is(err, unix.EOPNOTSUPP) || len(chg) != 1 || !strings.Contains(chg[0].Note, "link bounced (carrier_changes +2)") {
		t.Fatalf("%+v %v", chg, err)
	}
	if err := n.Wait(); err != nil || n.Config() != (tstamp.HWTstampConfig{}) {
		t.Fatalf("%v, config %s", err, n.Config())
	}
}

// mlx5 with RX CQE compression on reopens its channels when RX stamping is
// turned on or off (the carrier off and on inside the ioctl): rig waits for
// the link both ways and says what the flag means for its stamps. With the
// flag off (the default on a fast PCIe link) nothing bounces and nothing
// is said.
func TestMLX5CQECompressReopens(t *testing.T) {
	for _, compress := range []bool{true, false} {
		n := nicfake.New(nicfake.MLX5(), "ens1f0np0")
		n.SetPrivFlag(facts.PrivCQECompress, compress)
		h, err := nicfake.NewHost(t.TempDir(), n, "eno1")
		if err != nil {
			t.Fatal(err)
		}
		env := &Env{NIC: facts.NIC{FS: h.FS, TS: n}, LinkSettle: time.Millisecond}
		j, _ := openJournal(t, env)
		r, err := PrepareTimestamping(context.Background(), env, j, "ens1f0np0", TSRequest{Mode: tstamp.Auto, Need: tstamp.NeedProbe})
		if err != nil || !r.Hardware() {
			t.Fatalf("compress %v: %v %v", compress, r, err)
		}
		bounced := strings.Contains(r.Link, "link bounced (carrier_changes +2)")
		noted := strings.Contains(r.String(), "rx_cqe_compress is on: RX stamping on or off reopens ens1f0np0's channels")
		if bounced != compress || noted != compress {
			t.Fatalf("compress %v: bounced %v, noted %v: %s", compress, bounced, noted, r)
		}
		if _, err := j.Undo(context.Background()); err != nil || n.Config() != (tstamp.HWTstampConfig{}) {
			t.Fatalf("compress %v: undo %v, config %s", compress, err, n.Config())
		}
		calls := n.Sets()
		if len(calls) != 2 || calls[0].Bounced != compress || calls[1].Bounced != compress {
			t.Fatalf("compress %v: calls %+v", compress, calls)
		}
	}
}

// bnxt_en before 6.8 closes and reopens a running port when it sets the
// ALL filter, as rig's stamping asks: the link wait covers it. From 6.8
// the filter is set without a reset.
func TestBNXTResetBefore68(t *testing.T) {
	for _, p := range []*nicfake.Profile{nicfake.BNXTPre68(), nicfake.BNXT()} {
		n := nicfake.New(p, "ens2f0np0")
		h, err := nicfake.NewHost(t.TempDir(), n, "eno1")
		if err != nil {
			t.Fatal(err)
		}
		env := &Env{NIC: facts.NIC{FS: h.FS, TS: n}, LinkSettle: time.Millisecond}
		j, _ := openJournal(t, env)
		r, err := PrepareTimestamping(context.Background(), env, j, "ens2f0np0", TSRequest{Mode: tstamp.Auto, Need: tstamp.NeedProbe})
		if err != nil || !r.Hardware() || r.Granted == nil || r.Granted.RxFilter != tstamp.FilterAll {
			t.Fatalf("%s: %v %v", p.Name, r, err)
		}
		if bounced := strings.Contains(r.Link, "link bounced (carrier_changes +2)"); bounced != (p.Name == "bnxt-pre6.8") {
			t.Errorf("%s: bounced %v: %s", p.Name, bounced, r)
		}
		if _, err := j.Undo(context.Background()); err != nil || n.Config() != (tstamp.HWTstampConfig{}) {
			t.Fatalf("%s: undo %v, config %s", p.Name, err, n.Config())
		}
	}
}
