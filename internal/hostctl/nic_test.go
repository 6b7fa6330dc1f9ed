package hostctl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rig-project/rig/internal/ethtoolnl"
	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/scenario"
	"github.com/rig-project/rig/nicctl"
)

// moderation is a driver's interrupt moderation, every field reported.
type moderation struct{ cur ethtoolnl.Coalesce }

func (m *moderation) Coalesce(context.Context, string) (ethtoolnl.Coalesce, error) { return m.cur, nil }
func (m *moderation) SetCoalesce(_ context.Context, _ string, c ethtoolnl.Coalesce) error {
	for _, f := range []struct{ dst, v **uint32 }{
		{&m.cur.RxUsecs, &c.RxUsecs}, {&m.cur.TxUsecs, &c.TxUsecs}, {&m.cur.RxFrames, &c.RxFrames}, {&m.cur.TxFrames, &c.TxFrames},
	} {
		if *f.v != nil {
			*f.dst = ptr(**f.v)
		}
	}
	return nil
}
func (m *moderation) Rings(context.Context, string) (ethtoolnl.Rings, error) {
	return ethtoolnl.Rings{}, errors.ErrUnsupported
}
func (m *moderation) SetRings(context.Context, string, ethtoolnl.Rings) error {
	return errors.ErrUnsupported
}
func (m *moderation) Channels(context.Context, string) (ethtoolnl.Channels, error) {
	return ethtoolnl.Channels{}, errors.ErrUnsupported
}
func (m *moderation) SetChannels(context.Context, string, ethtoolnl.Channels) error {
	return errors.ErrUnsupported
}
func (m *moderation) Close() error { return nil }

// TestNICKnobsPassThrough: an arm's nic.coalesce reaches the driver as
// the scenario holds it, tx-frames included (`rig nicctl set
// --tx-frames`'s knob), and the undo puts every field back.
func TestNICKnobsPassThrough(t *testing.T) {
	root := t.TempDir()
	for p, v := range map[string]string{"sys/class/net/eth9/operstate": "up\n", "proc/net/route": "Iface\tDestination\tGateway\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs := hostfs.FS{Root: root}
	m := &moderation{cur: ethtoolnl.Coalesce{RxUsecs: ptr[uint32](50), TxUsecs: ptr[uint32](50), RxFrames: ptr[uint32](32), TxFrames: ptr[uint32](32)}}
	env := &nicctl.Env{NIC: facts.NIC{FS: fs, DialEthtool: func() (ethtoolnl.Client, error) { return m, nil }}}
	j, err := journal.Open(t.TempDir(), Handlers(env))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	k := scenario.Knobs{NIC: scenario.NIC{Coalesce: ethtoolnl.Coalesce{RxUsecs: ptr[uint32](0), TxFrames: ptr[uint32](8)}}}
	ap, err := Apply(context.Background(), &Host{FS: fs, NIC: env, Journal: j, Iface: "eth9"}, Arm{Name: "c", Knobs: k})
	if err != nil {
		t.Fatal(err)
	}
	if *m.cur.RxUsecs != 0 || *m.cur.TxFrames != 8 || *m.cur.TxUsecs != 50 || *m.cur.RxFrames != 32 {
		t.Fatalf("applied %+v, report %q", m.cur, ap.Report)
	}
	if err := ap.Undo(context.Background()); err != nil {
		t.Fatal(err)
	}
	if *m.cur.RxUsecs != 50 || *m.cur.TxFrames != 32 {
		t.Fatalf("undone %+v", m.cur)
	}
}

// TestNAPIKnobsPassThrough: an arm's nic napi-defer-hard-irqs and
// gro-flush-timeout reach the device's sysfs files through nicctl's
// journal, and the undo puts the files back byte for byte.
func TestNAPIKnobsPassThrough(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{"sys/class/net/eth9/operstate": "up\n", "proc/net/route": "Iface\tDestination\tGateway\n",
		"sys/class/net/eth9/napi_defer_hard_irqs": "0\n", "sys/class/net/eth9/gro_flush_timeout": "0\n"}
	for p, v := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs := hostfs.FS{Root: root}
	env := &nicctl.Env{NIC: facts.NIC{FS: fs}}
	j, err := journal.Open(t.TempDir(), Handlers(env))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	k := scenario.Knobs{NIC: scenario.NIC{NAPI: facts.NAPIKnobs{DeferHardIRQs: ptr[uint32](2), GROFlushTimeout: ptr[uint64](200000)}}}
	ap, err := Apply(context.Background(), &Host{FS: fs, NIC: env, Journal: j, Iface: "eth9"}, Arm{Name: "n", Knobs: k})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := facts.ReadNAPIKnobs(fs, "eth9"); err != nil || *got.DeferHardIRQs != 2 || *got.GROFlushTimeout != 200000 {
		t.Fatalf("applied %+v %v, report %q", got, err, ap.Report)
	}
	if err := ap.Undo(context.Background()); err != nil {
		t.Fatal(err)
	}
	for p, v := range files {
		if b, _ := os.ReadFile(filepath.Join(root, p)); string(b) != v {
			t.Errorf("%s after undo: %q, was %q", p, b, v)
		}
	}
}
