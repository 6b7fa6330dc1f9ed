package nicctl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/journal"
)

// fakeNAPI models netdev netlink napi-get/napi-set (net/core/netdev-genl.c
// netdev_nl_napi_get_dumpit, netdev_nl_napi_set_doit): a kernel from 6.13
// reports irq-suspend-timeout of every instance (noSuspend: one before
// it), and getErr is what napi-get fails with.
type fakeNAPI struct {
	ids       []uint32
	suspend   map[uint32]uint64
	noSuspend bool
	getErr    error
}

func (f *fakeNAPI) NAPIs(string) ([]facts.NAPI, error) {
	if f.getErr != nil {
		return nil, f.getErr
	}
	var out []facts.NAPI
	for _, id := range f.ids {
		n := facts.NAPI{ID: id}
		if !f.noSuspend {
			v := f.suspend[id]
			n.IRQSuspendTimeout = &v
		}
		out = append(out, n)
	}
	return out, nil
}

func (f *fakeNAPI) SetIRQSuspend(id uint32, ns uint64) error {
	if !slices.Contains(f.ids, id) {
		return fmt.Errorf("netdev napi-set of NAPI %d: %w", id, syscall.ENOENT)
	}
	f.suspend[id] = ns
	return nil
}

// napiTree is the fake tree with eth1's NAPI files at their kernel
// defaults (net/core/net-sysfs.c prints "%lu\n" and "%u\n").
func napiTree(t *testing.T) hostfs.FS {
	fs := buildTree(t, "mixed", mixedNICs)
	write(t, fs.Root, "/sys/devices/pci0000:00/0000:00:03.0/virtio2/net/eth1/napi_defer_hard_irqs", "0\n", 0o644)
	write(t, fs.Root, "/sys/devices/pci0000:00/0000:00:03.0/virtio2/net/eth1/gro_flush_timeout", "0\n", 0o644)
	return fs
}

func u32p(v uint32) *uint32 { return &v }
func u64p(v uint64) *uint64 { return &v }

// TestSetNAPIKnobsAndRestore sets the three knobs through the journal and
// undoes them: the files come back byte for byte and every NAPI instance
// gets its own previous timeout.
func TestSetNAPIKnobsAndRestore(t *testing.T) {
	fs := napiTree(t)
	before := snapshot(t, fs.Root)
	env := newEnv(fs, &fakeEthtool{})
	fn := &fakeNAPI{ids: []uint32{8193, 8194}, suspend: map[uint32]uint64{8193: 0, 8194: 5}}
	env.NAPI = fn
	j, _ := openJournal(t, env)
	chg, err := Set(context.Background(), env, j, "eth1", Settings{NAPI: facts.NAPIKnobs{DeferHardIRQs: u32p(2), GROFlushTimeout: u64p(200000), IRQSuspendTimeout: u64p(20000000)}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range chg {
		got[c.What] = c.Previous + "→" + c.Effective
	}
	want := map[string]string{"napi_defer_hard_irqs": "0→2", "gro_flush_timeout": "0→200000", "irq_suspend_timeout": "8193=0 8194=5→8193=20000000 8194=20000000"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("changes %v, want %v", got, want)
	}
	k, err := facts.ReadNAPIKnobs(fs, "eth1")
	if err != nil || *k.DeferHardIRQs != 2 || *k.GROFlushTimeout != 200000 {
		t.Fatalf("read back %+v %v", k, err)
	}
	if _, err := j.Undo(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := diffSnap(before, snapshot(t, fs.Root)); len(d) > 0 {
		t.Fatalf("tree differs after undo:\n%s", strings.Join(d, "\n"))
	}
	if fn.suspend[8193] != 0 || fn.suspend[8194] != 5 {
		t.Fatalf("irq_suspend_timeout not put back: %v", fn.suspend)
	}
}

// TestNAPIRefusedByProbing: what the device or kernel lacks is refused
// before anything changes, with the reason found by looking.
func TestNAPIRefusedByProbing(t *testing.T) {
	for _, c := range []struct {
		name  string
		files bool
		napi  *fakeNAPI
		k     facts.NAPIKnobs
		want  string
	}{
		{"no sysfs file", false, nil, facts.NAPIKnobs{DeferHardIRQs: u32p(2)}, "this kernel has no napi_defer_hard_irqs (/sys/class/net/eth1/napi_defer_hard_irqs is missing"},
		{"no gro_flush_timeout", false, nil, facts.NAPIKnobs{GROFlushTimeout: u64p(1)}, "this kernel has no gro_flush_timeout"},
		{"defer out of range", true, nil, facts.NAPIKnobs{DeferHardIRQs: u32p(1 << 31)}, "--napi-defer-hard-irqs 2147483648 out of range: 0..2147483647"},
		{"no napi-get", true, &fakeNAPI{getErr: fmt.Errorf("netdev netlink without napi-get (kernel < 6.8): %w", errors.ErrUnsupported)}, facts.NAPIKnobs{IRQSuspendTimeout: u64p(1)}, "this kernel has no irq_suspend_timeout (Linux 6.13+)"},
		{"napi-get without the attribute", true, &fakeNAPI{ids: []uint32{9}, noSuspend: true}, facts.NAPIKnobs{IRQSuspendTimeout: u64p(1)}, "this kernel has no irq_suspend_timeout (Linux 6.13+): napi-get does not report it for NAPI 9"},
		{"no NAPI instance", true, &fakeNAPI{}, facts.NAPIKnobs{IRQSuspendTimeout: u64p(1)}, "eth1 has no NAPI instance"},
		{"napi-get fails", true, &fakeNAPI{getErr: syscall.EPERM}, facts.NAPIKnobs{IRQSuspendTimeout: u64p(1)}, "cannot tell whether it can be set"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := buildTree(t, "mixed", mixedNICs)
			if c.files {
				fs = napiTree(t)
			}
			before := snapshot(t, fs.Root)
			env := newEnv(fs, &fakeEthtool{})
			if c.napi != nil {
				env.NAPI = c.napi
			}
			j, dir := openJournal(t, env)
			// With a NAPI change that would work, to show nothing went first.
			s := Settings{NAPI: c.k}
			if c.files && c.k.DeferHardIRQs == nil {
				s.NAPI.GROFlushTimeout = u64p(7)
			}
			_, err := Set(context.Background(), env, j, "eth1", s)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
			if d := diffSnap(before, snapshot(t, fs.Root)); len(d) > 0 {
				t.Fatalf("refusal changed the tree:\n%s", strings.Join(d, "\n"))
			}
			if c.napi != nil && len(c.napi.suspend) > 0 {
				t.Fatalf("refusal set %v", c.napi.suspend)
			}
			j.Close()
			if pend, err := journal.Pending(dir); err != nil || len(pend) != 0 {
				t.Fatalf("refusal left journal entries %v (%v)", pend, err)
			}
		})
	}
}

// TestKill9DuringNAPISetThenRestore kills `rig nicctl set` after it has
// written napi_defer_hard_irqs and gro_flush_timeout (the second not yet
// recorded as effective); `rig restore` puts both files back byte for
// byte.
func TestKill9DuringNAPISetThenRestore(t *testing.T) {
	bin := buildRig(t)
	fs := napiTree(t)
	state := t.TempDir()
	before := snapshot(t, fs.Root)
	cmd := rigCmd(bin, fs.Root, state, "nicctl", "set", "eth1", "--napi-defer-hard-irqs", "2", "--gro-flush-timeout", "200000")
	cmd.Env = append(cmd.Env, "RIG_TEST_PAUSE_AFTER_APPLY=2")
	killAtPause(t, cmd)
	if d := diffSnap(before, snapshot(t, fs.Root)); len(d) != 2 {
		t.Fatalf("expected both NAPI files changed at the kill, got:\n%s", strings.Join(d, "\n"))
	}
	out, err := rigCmd(bin, fs.Root, state, "restore").CombinedOutput()
	if err != nil || strings.Count(string(out), "restored sysfs /sys/class/net/eth1/") != 2 {
		t.Fatalf("rig restore: %v\n%s", err, out)
	}
	if d := diffSnap(before, snapshot(t, fs.Root)); len(d) > 0 {
		t.Fatalf("fake tree differs after restore:\n%s", strings.Join(d, "\n"))
	}
}

func TestNAPIValuesRoundTrip(t *testing.T) {
	v := []NAPIValue{{8194, 5}, {8193, 0}}
	s := FormatNAPIValues(v)
	if s != "8193=0 8194=5" {
		t.Fatalf("format %q", s)
	}
	back, err := ParseNAPIValues(s)
	if err != nil || FormatNAPIValues(back) != s {
		t.Fatalf("parse %v %v", back, err)
	}
	for _, bad := range []string{"", "8193", "0=5", "x=1", "1=-1", "4294967296=1", "1=18446744073709551616"} {
		if _, err := ParseNAPIValues(bad); err == nil {
			t.Errorf("ParseNAPIValues(%q) accepted", bad)
		}
	}
}

func FuzzParseNAPIValues(f *testing.F) {
	for _, s := range []string{"8193=0 8194=5", "1=18446744073709551615", "", "a=b", " 7=7\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseNAPIValues(s)
		if err != nil {
			return
		}
		again, err := ParseNAPIValues(FormatNAPIValues(v))
		if err != nil || FormatNAPIValues(again) != FormatNAPIValues(v) || len(again) != len(v) {
			t.Fatalf("%q: %v then %v (%v)", s, v, again, err)
		}
	})
}
