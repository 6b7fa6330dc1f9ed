package nicctl

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rig-project/rig/internal/ethtoolnl"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/tstamp"
)

// fakeNIC describes one NIC in a fake tree.
type fakeNIC struct {
	iface, bdf, driver string
	virtio             string // "virtio2": netdev hangs below a virtio device
	irqs               []int  // msi_irqs
}

var mixedNICs = []fakeNIC{
	{iface: "ens5", bdf: "0000:00:05.0", driver: "ena", irqs: []int{24, 25, 26, 27, 28}},
	{iface: "ens3f0np0", bdf: "0000:3b:00.0", driver: "mlx5_core", irqs: []int{60, 61, 62, 63, 64, 65}},
	{iface: "ens1f0", bdf: "0000:5e:00.0", driver: "ice", irqs: []int{90, 91, 92, 93, 94}},
	{iface: "eth1", bdf: "0000:00:03.0", driver: "virtio_net", virtio: "virtio2", irqs: []int{120, 121, 122, 123, 124}},
}

func write(t testing.TB, root, p, content string, mode os.FileMode) {
	t.Helper()
	full := filepath.Join(root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	os.Chmod(full, mode)
}

func symlink(t testing.TB, root, p, target string) {
	t.Helper()
	full := filepath.Join(root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, full); err != nil {
		t.Fatal(err)
	}
}

// buildTree makes a fake /proc and /sys below a temp dir from a real-format
// /proc/interrupts fixture (a file in hostinfo's testdata/interrupts, or a
// path), laid out like the kernel's: class links are
// relative symlinks into /sys/devices, the device link points back up.
// eth0 carries the default route (it has no device: only its class entry).
func buildTree(t testing.TB, interrupts string, nics []fakeNIC) hostfs.FS {
	t.Helper()
	root := t.TempDir()
	if !strings.Contains(interrupts, "/") {
		interrupts = filepath.Join("../internal/hostinfo/testdata/interrupts", strings.TrimPrefix(interrupts, "interrupts."))
	}
	b, err := os.ReadFile(interrupts)
	if err != nil {
		t.Fatal(err)
	}
	write(t, root, "/proc/interrupts", string(b), 0o444)
	in, err := hostinfo.ParseCounterTable(b)
	if err != nil {
		t.Fatal(err)
	}
	all := "0-" + strconv.Itoa(len(in.CPUs)-1)
	write(t, root, "/sys/devices/system/cpu/online", all+"\n", 0o444)
	for _, l := range in.Rows {
		if l.IRQ < 0 {
			continue
		}
		d := "/proc/irq/" + strconv.Itoa(l.IRQ)
		write(t, root, d+"/smp_affinity_list", all+"\n", 0o644)
		write(t, root, d+"/effective_affinity_list", strconv.Itoa(l.IRQ%len(in.CPUs))+"\n", 0o444)
	}
	write(t, root, "/proc/net/route", "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"+
		"eth0\t00000000\t0100A8C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"+
		"eth0\t0000A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n", 0o444)
	write(t, root, "/sys/devices/virtual/net/eth0/operstate", "up\n", 0o444)
	write(t, root, "/proc/2/comm", "kthreadd\n", 0o444) // the host's PID namespace
	symlink(t, root, "/sys/class/net/eth0", "../../devices/virtual/net/eth0")
	for _, n := range nics {
		pci := "/sys/devices/pci0000:00/" + n.bdf
		dev := pci
		if n.virtio != "" {
			dev = pci + "/" + n.virtio
		}
		for _, irq := range n.irqs {
			write(t, root, pci+"/msi_irqs/"+strconv.Itoa(irq), "msix\n", 0o444)
		}
		write(t, root, "/sys/bus/pci/drivers/"+n.driver+"/.keep", "", 0o444)
		depth := strings.Count(strings.TrimPrefix(dev, "/"), "/") // up to /sys
		symlink(t, root, dev+"/driver", strings.Repeat("../", depth)+"bus/pci/drivers/"+n.driver)
		netdir := dev + "/net/" + n.iface
		write(t, root, netdir+"/operstate", "up\n", 0o444)
		write(t, root, netdir+"/mtu", "9000\n", 0o444)
		write(t, root, netdir+"/speed", "100000\n", 0o444)
		symlink(t, root, netdir+"/device", "../../../"+filepath.Base(dev))
		symlink(t, root, "/sys/class/net/"+n.iface, "../../devices/pci0000:00/"+strings.TrimPrefix(netdir, "/sys/devices/pci0000:00/"))
	}
	return hostfs.FS{Root: root}
}

// snapshot returns every regular file and symlink below root, for
// byte-exact comparison.
func snapshot(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "-> " + l
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fi.Mode().String() + " " + string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diffSnap(a, b map[string]string) []string {
	var d []string
	for k, v := range a {
		if b[k] != v {
			d = append(d, k+": "+strconv.Quote(v)+" → "+strconv.Quote(b[k]))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			d = append(d, k+": new")
		}
	}
	return d
}

// fakeEthtool is an in-memory driver. nil sections are "not supported".
type fakeEthtool struct {
	ch        *ethtoolnl.Channels
	rings     *ethtoolnl.Rings
	coal      *ethtoolnl.Coalesce
	ringRound func(uint32) uint32 // drivers round ring sizes
	sets      []string
}

var errUnsup = func(op, iface string) error { return &ethtoolnl.Error{Op: op, Iface: iface, Err: unix.EOPNOTSUPP} }

func (f *fakeEthtool) Coalesce(_ context.Context, i string) (ethtoolnl.Coalesce, error) {
	if f.coal == nil {
		return ethtoolnl.Coalesce{}, errUnsup("COALESCE_GET", i)
	}
	return *f.coal, nil
}
func (f *fakeEthtool) SetCoalesce(_ context.Context, i string, c ethtoolnl.Coalesce) error {
	if f.coal == nil {
		return errUnsup("COALESCE_SET", i)
	}
	f.sets = append(f.sets, "coalesce")
	if c.RxUsecs != nil {
		f.coal.RxUsecs = new(uint32(*c.RxUsecs))
	}
	if c.TxUsecs != nil {
		f.coal.TxUsecs = new(uint32(*c.TxUsecs))
	}
	if c.AdaptiveRx != nil {
		f.coal.AdaptiveRx = new(*c.AdaptiveRx)
	}
	return nil
}
func (f *fakeEthtool) Rings(_ context.Context, i string) (ethtoolnl.Rings, error) {
	if f.rings == nil {
		return ethtoolnl.Rings{}, errUnsup("RINGS_GET", i)
	}
	return *f.rings, nil
}
func (f *fakeEthtool) SetRings(_ context.Context, i string, r ethtoolnl.Rings) error {
	if f.rings == nil {
		return errUnsup("RINGS_SET", i)
	}
	f.sets = append(f.sets, "rings")
	round := f.ringRound
	if round == nil {
		round = func(v uint32) uint32 { return v }
	}
	if r.Rx != nil {
		f.rings.Rx = new(round(*r.Rx))
	}
	if r.Tx != nil {
		f.rings.Tx = new(round(*r.Tx))
	}
	return nil
}
func (f *fakeEthtool) Channels(_ context.Context, i string) (ethtoolnl.Channels, error) {
	if f.ch == nil {
		return ethtoolnl.Channels{}, errUnsup("CHANNELS_GET", i)
	}
	return *f.ch, nil
}
func (f *fakeEthtool) SetChannels(_ context.Context, i string, c ethtoolnl.Channels) error {
	f.sets = append(f.sets, "channels")
	if c.Combined != nil {
		f.ch.Combined = new(uint32(*c.Combined))
	}
	return nil
}

func (f *fakeEthtool) Close() error { return nil }

// fakeIoctl answers ETHTOOL_GDRVINFO.
type fakeIoctl struct{}

func (f *fakeIoctl) DrvInfo(iface string) (DrvInfo, error) {
	return DrvInfo{Driver: "fake", Firmware: "1.2.3", BusInfo: "0000:00:05.0"}, nil
}

// fakeTS is a NIC's timestamping surface: caps, a current config, and how
// the driver answers SIOCSHWTSTAMP.
type fakeTS struct {
	caps   tstamp.Caps
	cur    tstamp.HWTstampConfig
	getErr error // SIOCGHWTSTAMP
	setErr error // SIOCSHWTSTAMP
	grant  func(req tstamp.HWTstampConfig) tstamp.HWTstampConfig
	sets   []tstamp.HWTstampConfig
	// onSet runs after a successful set (a driver resetting the link).
	onSet func()
}

func (f *fakeTS) TSInfo(name string) (tstamp.Caps, error) {
	c := f.caps
	c.Ifname = name
	return c, nil
}
func (f *fakeTS) GetHWTstamp(string) (tstamp.HWTstampConfig, error) { return f.cur, f.getErr }
func (f *fakeTS) SetHWTstamp(_ string, c *tstamp.HWTstampConfig) error {
	f.sets = append(f.sets, *c)
	if f.setErr != nil {
		return f.setErr
	}
	if f.grant != nil {
		*c = f.grant(*c)
	}
	f.cur = *c
	if f.onSet != nil {
		f.onSet()
	}
	return nil
}

var tsCapsAll = tstamp.Caps{SOF: tstamp.FlagTxHardware | tstamp.FlagRxHardware | tstamp.FlagRawHardware, PHCIndex: 2,
	TxTypes: 1<<tstamp.TxOff | 1<<tstamp.TxOn, RxFilters: 1<<tstamp.FilterNone | 1<<tstamp.FilterAll | 1<<tstamp.FilterPTPv2Event}
