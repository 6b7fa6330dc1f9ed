package facts

import (
	"errors"
	"maps"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
)

// tree reads the facts of a host root, as `rig run --dry-run` reads this
// machine.
func tree(t *testing.T, fs hostfs.FS) *Facts {
	t.Helper()
	f, err := Read(fs)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestReadFacts(t *testing.T) {
	f := tree(t, hostfs.Default())
	if len(f.Online) == 0 {
		t.Fatalf("online CPUs: %v", f.Online)
	}
	if sib, err := f.SiblingsOf(f.Online[0]); err != nil || !slices.Contains(sib, f.Online[0]) {
		t.Errorf("siblings of %d: %v %v", f.Online[0], sib, err)
	}
	if !slices.Contains(f.Ifaces, "lo") {
		t.Errorf("interfaces: %v", f.Ifaces)
	}
	if st, err := f.TimestampingOf("lo"); err != nil || st.Caps.HardwareRX() || st.ConfigKnown {
		t.Errorf("lo timestamping: %+v %v", st, err)
	}
	// A fake root has no kernel to ask: not "none", but "cannot say".
	fake := tree(t, hostfs.FS{Root: "../hostinfo/testdata/c7i"})
	if _, err := fake.TimestampingOf(fake.Ifaces[0]); !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "cannot ask a fake host root") {
		t.Errorf("HW stamps on a fake root: %v", err)
	}
	// An empty root is not a host: reading fails, naming what is missing.
	if _, err := Read(hostfs.FS{Root: t.TempDir()}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("empty root: %v", err)
	}
}

// Read reads the default route of a fake c8g (single ENI: ens5).
func TestReadFactsMgmt(t *testing.T) {
	mg, err := tree(t, hostfs.FS{Root: "../hostinfo/testdata/c8g"}).Management()
	if err != nil || len(mg) != 1 || mg[0] != "ens5" {
		t.Fatalf("mgmt %v %v", mg, err)
	}
}

// Read asks the kernel for addresses (lo has 127.0.0.1); a fake
// host root cannot say.
func TestReadFactsAddresses(t *testing.T) {
	local := tree(t, hostfs.Default())
	as, err := local.AddrsOf("lo")
	if err != nil || len(as) == 0 || as[0] != netip.MustParseAddr("127.0.0.1") {
		t.Fatalf("lo: %v %v", as, err)
	}
	if _, err := local.AddrsOf("nosuch0"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unknown interface: %v", err)
	}
	fake := tree(t, hostfs.FS{Root: "../hostinfo/testdata/c7i"})
	if _, err := fake.AddrsOf(fake.Ifaces[0]); !errors.Is(err, os.ErrNotExist) || fake.Addrs != nil {
		t.Errorf("fake root: %v %v", err, fake.Addrs)
	}
}

// The NUMA facts of a two-node host: each CPU's node, each interface's
// (-1 where the platform gives none), and the RT bandwidth.
func TestReadFactsNUMA(t *testing.T) {
	f := tree(t, hostfs.FS{Root: "../hostinfo/testdata/numa2"})
	nodes := len(slices.Compact(slices.Sorted(maps.Values(f.Node))))
	if nodes != 2 || !slices.Equal(f.NodeCPUs(1), []int{4, 5, 6, 7}) || !slices.Equal(f.NodeCPUs(0), []int{0, 1, 2, 3}) {
		t.Errorf("nodes %d: %v", nodes, f.Node)
	}
	for ifc, want := range map[string]int{"ens1": 1, "ens2": -1, "vr0": -1} {
		if n, err := f.NICNodeOf(ifc); n != want || err != nil {
			t.Errorf("%s: %d %v, want %d", ifc, n, err, want)
		}
	}
	if _, err := f.NICNodeOf("nosuch0"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unknown interface: %v", err)
	}
	if f.SchedRT == nil || f.SchedRT.RuntimeUS != 950000 {
		t.Errorf("sched_rt %+v", f.SchedRT)
	}
	if l := tree(t, hostfs.Default()); l.BootID == "" || l.SchedRT == nil {
		t.Errorf("this machine: boot_id %q, sched_rt %v", l.BootID, l.SchedRT)
	}
}
