//go:build linux

package facts

import (
	"errors"
	"fmt"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
)

// IRQ kinds: which queue direction an IRQ serves, or none.
const (
	IRQTxRx = "txrx" // combined queue pair
	IRQRx   = "rx"
	IRQTx   = "tx"
	IRQMisc = "misc"         // management/async/config vector of the device
	IRQNone = "unattributed" // the device owns it (msi_irqs) but no name rule matched
)

// IRQ is one interrupt of a NIC.
type IRQ struct {
	Number int    `json:"irq"`
	Name   string `json:"name"` // action names from /proc/interrupts, ", "-joined
	Kind   string `json:"kind"`
	Queue  int    `json:"queue"` // -1 when not a queue IRQ
	// Affinity and Effective are smp_affinity_list and
	// effective_affinity_list (empty when the kernel has no such file).
	Affinity  string `json:"smp_affinity_list"`
	Effective string `json:"effective_affinity_list"`
	// Managed IRQs have their affinity set by the kernel; writes fail.
	Managed    bool     `json:"managed"`
	ManagedWhy string   `json:"managed_why,omitempty"`
	Counts     []uint64 `json:"counts"` // per CPU, in the CounterTable's CPUs order
}

// Device is where a netdev lives on its bus.
type Device struct {
	Iface  string `json:"iface"`
	Path   string `json:"sysfs_path"`        // resolved /sys/devices/... of the device
	Driver string `json:"driver"`            // from the device's driver link
	BDF    string `json:"pci_bdf,omitempty"` // PCI address, if on PCI
	// MSIDir is the directory whose msi_irqs lists the IRQs ("" if none).
	MSIDir string `json:"-"`
}

var bdfRe = regexp.MustCompile(`^[0-9a-f]{4,}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

// ErrNoDevice is wrapped when an interface has no /sys/class/net entry: bad
// input (it matches cli.ErrUsage).
var ErrNoDevice = cli.Usage(errors.New("no such network interface"))

// realpath resolves symlinks below fs's root the way the kernel would, so
// that fake trees with relative sysfs links behave like the real /sys.
func realpath(fs hostfs.FS, p string) (string, error) {
	parts := strings.Split(strings.Trim(path.Clean(p), "/"), "/")
	cur := "/"
	for hops := 0; len(parts) > 0; {
		next := path.Join(cur, parts[0])
		parts = parts[1:]
		st, err := os.Lstat(fs.Path(next))
		if err != nil {
			return "", err
		}
		if st.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if hops++; hops > 40 {
			return "", fmt.Errorf("%s: too many symlinks", p)
		}
		t, err := fs.Readlink(next)
		if err != nil {
			return "", err
		}
		if path.IsAbs(t) {
			cur = "/"
		}
		parts = append(strings.Split(strings.Trim(path.Clean(t), "/"), "/"), parts...)
	}
	return cur, nil
}

// FindDevice resolves a netdev to its device directory, driver and PCI
// address. Virtual interfaces (veth, bridges) have no device: the Device
// then has only Iface set and no error.
func FindDevice(fs hostfs.FS, iface string) (Device, error) {
	d := Device{Iface: iface}
	if iface == "" || strings.ContainsAny(iface, "/ \x00") || iface == "." || iface == ".." {
		return d, fmt.Errorf("%q is not an interface name", iface)
	}
	if !fs.Exists("/sys/class/net/" + iface) {
		return d, fmt.Errorf("interface %s: %w (see `ip link`)", iface, ErrNoDevice)
	}
	dev, err := realpath(fs, "/sys/class/net/"+iface+"/device")
	if errors.Is(err, os.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return d, fmt.Errorf("interface %s: %w", iface, err)
	}
	d.Path = dev
	if drv, err := realpath(fs, dev+"/driver"); err == nil {
		d.Driver = path.Base(drv)
	}
	for p := dev; p != "/" && p != "/sys/devices" && p != "."; p = path.Dir(p) {
		if d.MSIDir == "" && fs.Exists(p+"/msi_irqs") {
			d.MSIDir = p
		}
		if d.BDF == "" && bdfRe.MatchString(path.Base(p)) {
			d.BDF = path.Base(p)
		}
	}
	return d, nil
}

type irqRule struct {
	re   *regexp.Regexp
	kind string
}

// rules builds, for one device, the patterns its driver gives its queue
// IRQs in /proc/interrupts (each driver names them its own way; the
// queue number is the capture group).
func rules(d Device) []irqRule {
	q := regexp.QuoteMeta
	ifn := q(d.Iface)
	var r []irqRule
	add := func(kind, expr string) { r = append(r, irqRule{regexp.MustCompile(expr), kind}) }
	add(IRQTxRx, `^(?:ice|i40e)-`+ifn+`-TxRx-(\d+)$`)
	add(IRQTxRx, `^`+ifn+`-Tx-Rx-(\d+)$`) // ena
	add(IRQTxRx, `^`+ifn+`-TxRx-(\d+)$`)  // igb, igc, ixgbe
	add(IRQRx, `^(?:i40e-|ice-)?`+ifn+`-rx-(\d+)$`)
	add(IRQTx, `^(?:i40e-|ice-)?`+ifn+`-tx-(\d+)$`)
	add(IRQTxRx, `^`+ifn+`-(\d+)$`) // sfc
	if d.BDF != "" {
		b := q(d.BDF)
		add(IRQTxRx, `^mlx5_comp(\d+)@pci:`+b+`$`)
		add(IRQMisc, `^(?:mlx5_async\d*|ena-mgmnt)@pci:`+b+`$`)
		add(IRQMisc, b) // any other vector naming the device (ice misc, ...)
	}
	if v := path.Base(d.Path); strings.HasPrefix(v, "virtio") {
		vq := q(v)
		add(IRQRx, `^`+vq+`-input\.(\d+)$`)
		add(IRQTx, `^`+vq+`-output\.(\d+)$`)
		add(IRQMisc, `^`+vq+`-(?:config|virtqueues|control)$`)
	}
	if d.Driver == "exanic" {
		add(IRQMisc, `^exanic\d+$`)
	}
	return r
}

func classify(rs []irqRule, names []string) (kind string, queue int, ok bool) {
	for _, n := range names {
		for _, r := range rs {
			m := r.re.FindStringSubmatch(n)
			if m == nil {
				continue
			}
			queue = -1
			if len(m) > 1 {
				queue, _ = strconv.Atoi(m[1])
			}
			return r.kind, queue, true
		}
	}
	return IRQNone, -1, false
}

// DiscoverIRQs lists the IRQs of a device: every IRQ in its msi_irqs and
// every /proc/interrupts row whose name matches the driver's naming. IRQs
// that no rule attributes to a queue are still listed (kind unattributed).
// The result is sorted by kind order (queues first), queue, then number.
func DiscoverIRQs(fs hostfs.FS, d Device, in *hostinfo.CounterTable) ([]IRQ, error) {
	own := map[int]bool{}
	if d.MSIDir != "" {
		ents, err := fs.ReadDir(d.MSIDir + "/msi_irqs")
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if n, err := strconv.Atoi(e.Name()); err == nil {
				own[n] = true
			}
		}
	}
	rs := rules(d)
	var out []IRQ
	for _, l := range in.Rows {
		if l.IRQ < 0 {
			continue
		}
		kind, queue, matched := classify(rs, l.Actions)
		if !matched && !own[l.IRQ] {
			continue
		}
		irq := IRQ{Number: l.IRQ, Name: strings.Join(l.Actions, ", "), Kind: kind, Queue: queue, Counts: l.Counts}
		if err := readAffinity(fs, &irq); err != nil {
			return nil, err
		}
		out = append(out, irq)
	}
	order := map[string]int{IRQTxRx: 0, IRQRx: 0, IRQTx: 0, IRQMisc: 1, IRQNone: 2}
	slices.SortStableFunc(out, func(a, b IRQ) int {
		if c := order[a.Kind] - order[b.Kind]; c != 0 {
			return c
		}
		if a.Queue != b.Queue {
			return a.Queue - b.Queue
		}
		return a.Number - b.Number
	})
	return out, nil
}

// IRQFile is the path of a file of IRQ n under /proc/irq.
func IRQFile(n int, name string) string { return "/proc/irq/" + strconv.Itoa(n) + "/" + name }

func readAffinity(fs hostfs.FS, irq *IRQ) error {
	p := IRQFile(irq.Number, "smp_affinity_list")
	a, err := fs.ReadString(p)
	if err != nil {
		return fmt.Errorf("IRQ %d: %w", irq.Number, err)
	}
	irq.Affinity = a
	irq.Effective, _ = fs.ReadString(IRQFile(irq.Number, "effective_affinity_list"))
	// Newer kernels make a managed IRQ's affinity files read-only; debugfs,
	// when mounted, says so explicitly. Older kernels only tell on write
	// (EIO, or EPERM from ~6.12), which Set reports per IRQ.
	if st, err := os.Stat(fs.Path(p)); err == nil && st.Mode().Perm()&0o222 == 0 {
		irq.Managed, irq.ManagedWhy = true, "smp_affinity_list is read-only"
	}
	if s, err := fs.ReadString("/sys/kernel/debug/irq/irqs/" + strconv.Itoa(irq.Number)); err == nil && strings.Contains(s, "IRQD_AFFINITY_MANAGED") {
		irq.Managed, irq.ManagedWhy = true, "debugfs: IRQD_AFFINITY_MANAGED"
	}
	return nil
}

// IsQueue reports whether the IRQ serves a queue.
func (i IRQ) IsQueue() bool { return i.Kind == IRQTxRx || i.Kind == IRQRx || i.Kind == IRQTx }

// HostIRQs lists every numbered IRQ under /proc/irq with its affinity,
// named from /proc/interrupts where it has a row. One without
// smp_affinity_list (the kernel gives it no affinity to set) is listed as
// Managed, so that whoever moves IRQs names it instead of passing it over.
func HostIRQs(fs hostfs.FS) ([]IRQ, error) {
	ents, err := fs.ReadDir("/proc/irq")
	if err != nil {
		return nil, err
	}
	names := map[int]string{}
	if in, err := hostinfo.ReadInterrupts(fs); err == nil {
		for _, r := range in.Rows {
			names[r.IRQ] = strings.Join(r.Actions, ", ")
		}
	}
	var out []IRQ
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil || !e.IsDir() {
			continue
		}
		irq := IRQ{Number: n, Name: names[n], Queue: -1}
		if !fs.Exists(IRQFile(n, "smp_affinity_list")) {
			irq.Managed, irq.ManagedWhy = true, "no smp_affinity_list"
		} else if err := readAffinity(fs, &irq); err != nil {
			return nil, err
		}
		out = append(out, irq)
	}
	slices.SortFunc(out, func(a, b IRQ) int { return a.Number - b.Number })
	return out, nil
}
