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
		env := newEnv(fs, &fakeEthtool{})
		env.LinkSettle = 30 * time.Millisecond
		// The user's IRQ placement before rig: each queue on CPU 1.
		for irq := 25; irq <= 28; irq++ {
			write(t, fs.Root, irqFile(irq, "smp_affinity_list"), "1\n", 0o644)
		}
		ts := &fakeTS{caps: tsCapsAll, cur: tsOff, onSet: func() {
			// ENA: ena_close, ena_up: the carrier drops and comes back,
			// and the queue IRQs are requested again with the default
			// affinity.
			write(t, fs.Root, dev+"operstate", "down\n", 0o644)
			n, _ := fs.ReadInt(dev + "carrier_changes")
			write(t, fs.Root, dev+"carrier_changes", strconv.FormatInt(n+2, 10)+"\n", 0o644)
			for irq := 25; irq <= 28; irq++ {
				write(t, fs.Root, irqFile(irq, "smp_affinity_list"), "0-3\n", 0o644)
			}
			go func() {
				time.Sleep(100 * time.Millisecond) // the link's time down under test (≥ 130 ms with the settle)
				os.WriteFile(filepath.Join(fs.Root, dev+"operstate"), []byte("up\n"), 0o644)
			}()
		}}
		env.TS = ts
		j, _ := openJournal(t, env)
		start := time.Now()
		r, err := PrepareTimestamping(ctx, env, j, "ens5", probe)
		if err != nil || !strings.Contains(r.Link, "link bounced (carrier_changes +2): up after") || time.Since(start) < 130*time.Millisecond {
			t.Fatalf("%+v %v after %v", r, err, time.Since(start))
		}
		affinity := func() string {
			var a []string
			for irq := 25; irq <= 28; irq++ {
				v, _ := fs.ReadString(irqFile(irq, "smp_affinity_list"))
				a = append(a, v)
			}
			return strings.Join(a, ",")
		}
		if !strings.Contains(r.Link, "the reset moved 4 queue IRQs, their affinity was put back") || affinity() != "1,1,1,1" {
			t.Fatalf("affinity after the reset: %s (%s)", affinity(), r.Link)
		}
		// Putting the config back resets the link again: the undo waits
		// for it and keeps the placement too.
		if _, err := j.Undo(ctx); err != nil || ts.cur != tsOff || affinity() != "1,1,1,1" {
			t.Fatalf("undo: %v, config %s, affinity %s", err, ts.cur, affinity())
		}
		// A link that never comes back: an error naming it.
		env.LinkTimeout = 50 * time.Millisecond
		ts.cur, ts.onSet = tsOff, func() { write(t, fs.Root, dev+"operstate", "down\n", 0o644) }
		write(t, fs.Root, dev+"operstate", "up\n", 0o644)
		j2, _ := openJournal(t, env)
		if _, err := PrepareTimestamping(ctx, env, j2, "ens5", probe); err == nil || !strings.Contains(err.Error(), "did not come back up within 50ms") {
			t.Fatalf("dead link: %v", err)
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
