// Package nicfake plays network drivers' hardware-timestamping behaviour
// for tests: one Profile per driver, each built from that driver's source
// (the functions and versions read are named on each profile), and a NIC
// that answers rig's seams the way the driver would — tstamp.Device
// (ETHTOOL_GET_TS_INFO, SIOCGHWTSTAMP, SIOCSHWTSTAMP with the core's
// validation in front), tstamp.Stamper (the hardware stamps a socket on a
// veth would have carried), tstamp.PHCDevice (the PTP clock ioctls) and
// facts.EthtoolIoctl (`ethtool -S`, byte for byte) — and keeps the files a
// driver changes (/sys/class/net/IF/{operstate,carrier,carrier_changes},
// /proc/irq/N/...) in a fake host root.
//
// It is a normal package so that the tests of several packages can import
// it; nothing outside tests uses it.
package nicfake

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rig-project/rig/internal/tstamp"
)

// SetCall is one SIOCSHWTSTAMP the NIC received, failed ones included.
type SetCall struct {
	Req     tstamp.HWTstampConfig // what the caller asked for
	Granted tstamp.HWTstampConfig // what was written back (zero on error)
	Err     error                 // the errno, nil on success
	Bounced bool                  // the driver closed and reopened the interface
}

// Offsets of a NIC's hardware stamps from the software stamps of the same
// packet: the PHC runs PHCOffset ahead of CLOCK_REALTIME (a PTP-disciplined
// PHC keeps TAI, 37 s ahead of UTC), the NIC stamps a received packet
// RxLead before the kernel does and a sent one TxLag after.
const (
	PHCOffset = 37 * int64(time.Second)
	RxLead    = 2 * int64(time.Microsecond)
	TxLag     = 1 * int64(time.Microsecond)
)

// NIC is one interface of a driver Profile. It is safe for concurrent use:
// the probes' threads call the Stamper while tests read its counters.
type NIC struct {
	P      *Profile
	Ifname string
	// CountCheck plays a kernel with the ETHTOOL_GSTATS/GSTRINGS count
	// check (see Ethtool); set it before use.
	CountCheck bool
	// Clock, when set before use, times the link changes that come after
	// a reset (Profile.LinkDown, OperLag); nil: the wall clock.
	Clock *Clock

	mu    sync.Mutex
	root  string // fake host root, "" when not attached
	calls []SetCall
	gets  int
	links sync.WaitGroup // link changes still to come (ENA's reset)

	cfg   atomic.Uint64  // current config, packed (tx_type<<32 | rx_filter)
	priv  atomic.Uint32  // private flags, bit i = Profile.PrivFlags[i]
	slots []atomic.Int64 // TX stamp slots: busy until this software-stamp time (ns)

	stats   statSet
	queues  int
	carrier int64 // carrier_changes
	noCarr  bool  // the carrier is off
	operDn  bool  // operstate reads down
	watch   bool  // a linkwatch run is pending
	ferr    error // a fake-root file that could not be written
	phc     *PHC
}

// New returns ifname's NIC as the driver has just probed it: config
// Profile.Start, Profile.Queues queues.
func New(p *Profile, ifname string) *NIC {
	n := &NIC{P: p, Ifname: ifname, queues: max(p.Queues, 1), slots: make([]atomic.Int64, p.TxSlots)}
	n.store(p.Start)
	n.stats.build(p, n.queues)
	if p.PHC != nil {
		n.phc = newPHC(n, p.PHC)
	}
	return n
}

func pack(c tstamp.HWTstampConfig) uint64 {
	return uint64(uint32(c.TxType))<<32 | uint64(uint32(c.RxFilter))
}

func (n *NIC) store(c tstamp.HWTstampConfig) { n.cfg.Store(pack(c)) }

// Config is the driver's current config (what SIOCGHWTSTAMP would report
// on a driver that has it).
func (n *NIC) Config() tstamp.HWTstampConfig {
	v := n.cfg.Load()
	return tstamp.HWTstampConfig{TxType: tstamp.TxType(int32(uint32(v >> 32))), RxFilter: tstamp.RxFilter(int32(uint32(v)))}
}

// SetConfig puts the driver in config c without an ioctl: another program
// (ptp4l, an earlier run) configured it before the test starts.
func (n *NIC) SetConfig(c tstamp.HWTstampConfig) { n.store(c) }

// Sets returns every SIOCSHWTSTAMP received so far, in order.
func (n *NIC) Sets() []SetCall {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]SetCall(nil), n.calls...)
}

// Writes counts the SIOCSHWTSTAMP calls that changed the device (that
// succeeded, or failed after the driver had reset the interface).
func (n *NIC) Writes() int {
	k := 0
	for _, c := range n.Sets() {
		if c.Err == nil || c.Bounced {
			k++
		}
	}
	return k
}

func (n *NIC) check(ifname string) error {
	if ifname != n.Ifname {
		return unix.ENODEV
	}
	return nil
}

// TSInfo is ETHTOOL_GET_TS_INFO: the profile's capabilities.
func (n *NIC) TSInfo(ifname string) (tstamp.Caps, error) {
	if err := n.check(ifname); err != nil {
		return tstamp.Caps{}, err
	}
	c := n.P.Caps
	c.Ifname = ifname
	return c, nil
}

// GetHWTstamp is SIOCGHWTSTAMP: the stored config, or the profile's error
// for a driver that does not implement it.
func (n *NIC) GetHWTstamp(ifname string) (tstamp.HWTstampConfig, error) {
	if err := n.check(ifname); err != nil {
		return tstamp.HWTstampConfig{}, err
	}
	n.mu.Lock()
	n.gets++
	n.mu.Unlock()
	if n.P.GetErr != 0 {
		return tstamp.HWTstampConfig{}, n.P.GetErr
	}
	return n.Config(), nil
}

// Gets counts the SIOCGHWTSTAMP calls.
func (n *NIC) Gets() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.gets
}

// Result is what a driver's SIOCSHWTSTAMP handler did.
type Result struct {
	Stored  tstamp.HWTstampConfig // the config in force afterwards
	Granted tstamp.HWTstampConfig // copied back to the caller on success
	Err     unix.Errno            // 0 on success
	Bounce  bool                  // the interface was closed and reopened
}

// Number of tx_type and rx_filter values the kernel knows
// (__HWTSTAMP_TX_CNT, __HWTSTAMP_FILTER_CNT in include/uapi/linux/net_tstamp.h,
// 6.18), and HWTSTAMP_FLAG_MASK.
const (
	txTypeCount   = 4
	rxFilterCount = 16
	flagMask      = 1 // HWTSTAMP_FLAG_BONDED_PHC_INDEX
)

// SetHWTstamp is SIOCSHWTSTAMP: the core's net_hwtstamp_validate
// (net/core/dev_ioctl.c: flags outside HWTSTAMP_FLAG_MASK → EINVAL, tx_type
// or rx_filter out of range → ERANGE; the flags rule is what the
// patch that removed the drivers' own flags checks relies on, the range
// checks were not re-read), then the profile's driver handler. Every call
// is recorded.
func (n *NIC) SetHWTstamp(ifname string, cfg *tstamp.HWTstampConfig) error {
	if err := n.check(ifname); err != nil {
		return err
	}
	req := *cfg
	n.mu.Lock()
	defer n.mu.Unlock()
	var r Result
	switch {
	case req.Flags&^flagMask != 0:
		r = Result{Stored: n.Config(), Err: unix.EINVAL}
	case req.TxType < 0 || req.TxType >= txTypeCount || req.RxFilter < 0 || req.RxFilter >= rxFilterCount:
		r = Result{Stored: n.Config(), Err: unix.ERANGE}
	case n.P.Set == nil:
		r = Result{Stored: n.Config(), Err: unix.EOPNOTSUPP} // no ndo_hwtstamp_set, no ioctl: veth, virtio_net
	default:
		cur := n.Config()
		r = n.P.Set(cur, req)
		r.Bounce = r.Bounce || r.Err == 0 && n.P.Reopen != nil && n.P.Reopen(cur, r.Stored, n.privOn)
	}
	n.store(r.Stored)
	call := SetCall{Req: req, Bounced: r.Bounce}
	if r.Bounce {
		n.bounceLocked()
	}
	if r.Err != 0 {
		call.Err = r.Err
		n.calls = append(n.calls, call)
		return r.Err
	}
	call.Granted = r.Granted
	n.calls = append(n.calls, call)
	*cfg = r.Granted
	return nil
}

// rxStamped reports whether the current config stamps rig's UDP probes on
// receive: only rx_filter ALL does (the drivers that take a PTP or NTP
// filter as ALL store ALL, so their config reads ALL).
func (n *NIC) rxStamped() bool {
	return tstamp.RxFilter(int32(uint32(n.cfg.Load()))) == tstamp.FilterAll
}

// txStamped reports whether a sent packet that asks for a hardware stamp
// gets one under the current config.
func (n *NIC) txStamped() bool {
	if n.P.TxAlways {
		return true
	}
	t := tstamp.TxType(int32(uint32(n.cfg.Load() >> 32)))
	return t == tstamp.TxOn || (n.P.OneStep && (t == tstamp.TxOneStepSync || t == tstamp.TxOneStepP2P))
}

// StampRX is the hardware stamp the NIC would have put on a received
// packet whose software stamp is sw: PHC time, RxLead earlier, or 0 when
// the config does not stamp it. It does not allocate.
func (n *NIC) StampRX(ifname string, sw int64) int64 {
	if ifname != n.Ifname || !n.rxStamped() {
		return 0
	}
	return sw + PHCOffset - RxLead
}

// StampTX is the hardware stamp of a sent packet whose software stamp is
// sw, or 0: the config does not stamp TX, or every TX-stamp slot is still
// held by an earlier packet (the driver counts it in Profile.SkipCounter
// and sends the packet unstamped). A slot is held from the packet's
// software stamp for Profile.TxHold. It does not allocate and is safe for
// concurrent use.
func (n *NIC) StampTX(ifname string, sw int64) int64 {
	if ifname != n.Ifname || !n.txStamped() {
		return 0
	}
	if len(n.slots) > 0 && !n.takeSlot(sw) {
		n.stats.add(n.stats.skip, 1)
		return 0
	}
	return sw + PHCOffset + TxLag
}

// StampSWTX is the software (SND) TX stamp the driver gives a sent packet
// whose veth stamp is sw: sw, or 0 when the profile's capabilities lack
// TX_SOFTWARE (a driver that never calls skb_tx_timestamp, such as mlx5
// before 6.16), so a profile suppresses what veth would have given. It
// does not allocate.
func (n *NIC) StampSWTX(ifname string, sw int64) int64 {
	if ifname == n.Ifname && n.P.Caps.SOF&tstamp.FlagTxSoftware == 0 {
		return 0
	}
	return sw
}

// takeSlot claims a TX-stamp slot free at sw.
func (n *NIC) takeSlot(sw int64) bool {
	until := sw + int64(n.P.TxHold)
	for i := range n.slots {
		s := &n.slots[i]
		for {
			cur := s.Load()
			if sw < cur {
				break // still held
			}
			if s.CompareAndSwap(cur, until) {
				return true
			}
		}
	}
	return false
}

// Counter returns the current value of the `ethtool -S` counter name and
// whether the driver has it.
func (n *NIC) Counter(name string) (uint64, bool) { return n.stats.get(name) }

// AddCounter adds d to counter name (a test playing traffic the profile
// does not model); it reports whether the driver has the counter.
func (n *NIC) AddCounter(name string, d uint64) bool {
	i, ok := n.stats.index(name)
	if ok {
		n.stats.add(i, d)
	}
	return ok
}

// SetQueues changes the number of queues (`ethtool -L`): the per-queue
// counters change with it, as the drivers' get_sset_count does.
func (n *NIC) SetQueues(q int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.queues = max(q, 1)
	n.stats.build(n.P, n.queues)
}

// PHC is the NIC's PTP clock, nil when the profile has none.
func (n *NIC) PHC() *PHC { return n.phc }

// Attach makes the NIC keep its files below root (a fake host root):
// /sys/class/net/IF/{operstate,carrier,carrier_changes} and, for each queue,
// /proc/irq/N/{smp_affinity_list,affinity_hint} with IRQs from
// Profile.FirstIRQ. Files it finds are kept (another NIC's, a test's).
func (n *NIC) Attach(root string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.root = root
	if err := n.writeLocked("/sys/class/net/"+n.Ifname+"/operstate", "up\n"); err != nil {
		return err
	}
	if err := n.writeLocked("/sys/class/net/"+n.Ifname+"/carrier_changes", strconv.FormatInt(n.carrier, 10)+"\n"); err != nil {
		return err
	}
	if err := n.writeLocked("/sys/class/net/"+n.Ifname+"/carrier", "1\n"); err != nil {
		return err
	}
	for _, irq := range n.irqsLocked() {
		base := "/proc/irq/" + strconv.Itoa(irq) + "/"
		for _, f := range []string{"smp_affinity_list", "affinity_hint"} {
			if _, err := os.Stat(filepath.Join(root, base+f)); err == nil {
				continue
			}
			v := "0-1\n"
			if f == "affinity_hint" {
				v = "0\n" // no hint set
			}
			if err := n.writeLocked(base+f, v); err != nil {
				return err
			}
		}
	}
	return nil
}

func (n *NIC) irqsLocked() []int {
	if n.P.FirstIRQ == 0 {
		return nil
	}
	out := make([]int, n.queues)
	for i := range out {
		out[i] = n.P.FirstIRQ + i
	}
	return out
}

// IRQs are the queues' IRQ numbers in the fake host root (none when the
// profile has no FirstIRQ).
func (n *NIC) IRQs() []int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.irqsLocked()
}

func (n *NIC) writeLocked(path, v string) error {
	if n.root == "" {
		return nil
	}
	p := filepath.Join(n.root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(v), 0o644)
}

// bounceLocked is a reset of the interface (ena_close() then ena_up())
// as the kernel shows it. The IRQs are freed and requested again: their
// affinity hint is set to the node's CPUs; the affinity a user wrote is
// kept (kernel/irq/manage.c irq_setup_affinity keeps IRQD_AFFINITY_SET).
//
// Profile.LinkDown 0 is ENA's (amzn-drivers 2.17.0 ena_netdev.c): ena_down
// calls netif_carrier_off and ena_up netif_carrier_on, both inside the
// ioctl, so carrier_changes has moved by 2 and carrier reads 1 when it
// returns; linkwatch, which writes operstate later (a carrier-off event is
// not urgent), then finds the carrier on, and operstate never reads down.
// LinkDown > 0: the carrier comes back that long after the ioctl (a PHY
// that renegotiates), operstate following as carrierLocked says.
func (n *NIC) bounceLocked() {
	for _, irq := range n.irqsLocked() {
		n.fileErr(n.writeLocked("/proc/irq/"+strconv.Itoa(irq)+"/affinity_hint", "0-1\n"))
	}
	n.AddCounter("interface_down", 1)
	if n.P.LinkDown <= 0 {
		n.carrier += 2
		n.fileErr(n.writeLocked("/sys/class/net/"+n.Ifname+"/carrier_changes", strconv.FormatInt(n.carrier, 10)+"\n"))
		n.AddCounter("interface_up", 1)
		return
	}
	n.carrierLocked(false)
	n.after(n.P.LinkDown, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.carrierLocked(true)
		n.AddCounter("interface_up", 1)
	})
}

// carrierLocked is netif_carrier_on/off: carrier and carrier_changes at
// once; operstate when linkwatch gets to it (net/core/link_watch.c, 6.18).
// A carrier-off event is not urgent: linkwatch runs Profile.OperLag later
// (up to a second after its previous run) and writes the state it finds
// then. A carrier-on event after linkwatch took the link down is urgent
// (linkwatch_urgent_event: the qdisc is deactivated) and runs at once.
func (n *NIC) carrierLocked(on bool) {
	n.carrier++
	n.noCarr = !on
	n.fileErr(n.writeLocked("/sys/class/net/"+n.Ifname+"/carrier_changes", strconv.FormatInt(n.carrier, 10)+"\n"))
	n.fileErr(n.writeLocked("/sys/class/net/"+n.Ifname+"/carrier", map[bool]string{true: "1\n", false: "0\n"}[on]))
	switch {
	case on && n.operDn, !on && n.P.OperLag <= 0:
		n.linkwatchLocked()
	case !on && !n.watch:
		n.watch = true
		n.after(n.P.OperLag, func() {
			n.mu.Lock()
			defer n.mu.Unlock()
			n.linkwatchLocked()
		})
	}
}

// linkwatchLocked is linkwatch_do_dev: operstate from the carrier now.
func (n *NIC) linkwatchLocked() {
	n.watch, n.operDn = false, n.noCarr
	n.fileErr(n.writeLocked("/sys/class/net/"+n.Ifname+"/operstate", map[bool]string{true: "down\n", false: "up\n"}[n.noCarr]))
}

// after runs f d later on the NIC's clock.
func (n *NIC) after(d time.Duration, f func()) {
	if n.Clock != nil {
		n.Clock.AfterFunc(d, f)
		return
	}
	n.links.Add(1)
	time.AfterFunc(d, func() {
		defer n.links.Done()
		f()
	})
}

func (n *NIC) fileErr(err error) {
	if err != nil && n.ferr == nil {
		n.ferr = err
	}
}

// Wait waits for the link changes in progress (a reset's link-up) and
// reports a fake-root file that could not be written.
func (n *NIC) Wait() error {
	n.links.Wait()
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ferr
}

// CarrierChanges is the driver's carrier_changes count.
func (n *NIC) CarrierChanges() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.carrier
}

// String names the NIC for test output.
func (n *NIC) String() string { return fmt.Sprintf("%s (%s)", n.Ifname, n.P.Name) }
