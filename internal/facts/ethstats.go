//go:build linux

package facts

import (
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ethSSStats is ETH_SS_STATS, the string set of `ethtool -S` (x/sys has
// the ioctl numbers but not this enum value).
const ethSSStats = 1

// ifreqData is struct ifreq with ifr_data, for SIOCETHTOOL (x/sys keeps its
// own unexported).
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// EthtoolIoctl is the SIOCETHTOOL surface NICStats reads counters through:
// ETHTOOL_GSSET_INFO, ETHTOOL_GSTRINGS and ETHTOOL_GSTATS. Ethtool issues
// one request for iface; data is the command's struct (its first u32 is
// the command), read and written in place as the kernel does, and never
// retained. Errors are raw errno values. HostEthtool is the kernel's;
// driver profiles in tests answer byte for byte like a driver would. It
// must not allocate: the telemetry sampler reads every sample.
type EthtoolIoctl interface {
	Ethtool(iface string, data []byte) error
}

// hostEthtool issues SIOCETHTOOL on one socket of the calling thread's
// network namespace, for one interface.
type hostEthtool struct {
	fd  int
	ifr ifreqData
}

func (h *hostEthtool) Ethtool(iface string, data []byte) error {
	h.ifr.data = unsafe.Pointer(&data[0])
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(h.fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&h.ifr)))
	h.ifr.data = nil
	if e != 0 {
		return e
	}
	return nil
}

// NICStats reads a driver's `ethtool -S` counters (ETHTOOL_GSTATS) into
// preallocated memory: New* reads the names once; Read does two ioctls and
// does not allocate, so the telemetry sampler can call it every sample.
//
// The kernel's ETHTOOL_GSTATS writes the driver's current number of
// counters whatever count the caller passed (until the December 2025 fix,
// commit 7b07be1ff1cb, which returns none on a mismatch), and that number
// changes with the channel count or XDP (a veth with 1 queue has 10, with
// 2 queues 19). So Read asks for the count first (ETHTOOL_GSSET_INFO) and
// refuses, with ErrStatsChanged, when it is not the one the names were
// read for; and the counter buffer ends at an inaccessible page, so on a
// kernel without the fix a count that grows between those two ioctls
// makes the kernel's copy fail (EFAULT) instead of writing past the
// buffer.
type NICStats struct {
	iface string
	ioc   EthtoolIoctl
	host  *hostEthtool // nil with NewNICStatsWith
	info  [8 + 8 + 4]byte
	mem   []byte // the mapping: counter buffer, then the guard page
	buf   []byte // struct ethtool_stats: cmd, n_stats, then n × u64; ends at the guard page
	names []string
	pick  []int // indexes of the counters Read reports
}

// ErrStatsChanged is wrapped by Read's error when the driver's number of
// counters is no longer the one NewNICStats read the names for (channels
// or XDP were changed): the values would not match the names. Open a new
// NICStats.
var ErrStatsChanged = errors.New("the driver's counter set changed")

// dropCounter matches the counters that tell of lost packets: drops,
// ring overruns, missed, no-buffer (mlx5 rx_out_of_buffer), FIFO errors.
var dropCounter = regexp.MustCompile(`(?i)(drop|discard|overrun|over_run|miss|no_?buf|out_of_buf|fifo|alloc_fail|xoff|timeout)`)

// stampCounter matches the drivers' counters of lost or late hardware
// stamps, in the drivers' own spelling: igb/ixgbe/ice/igc
// tx_hwtstamp_{skipped,timeouts,flushed,discarded} and rx_hwtstamp_cleared
// (i40e: port.tx_hwtstamp_skipped …), mlx5's port-timestamping CQ counters
// ptp_cqN_{late_cqe,lost_cqe,err_cqe,abort}, and ENA's PHC read counters
// phc_{cnt,exp,skp,err_dv,err_ts,err_eb} (phc_cnt, the successful reads,
// is what the errors are a share of).
var stampCounter = regexp.MustCompile(`^(port\.)?(tx_hwtstamp_(skipped|timeouts|flushed|discarded)|rx_hwtstamp_cleared|ptp_cq\d+_(late_cqe|lost_cqe|err_cqe|abort)|phc_(cnt|exp|skp|err_dv|err_ts|err_eb))$`)

// enaCounter matches ENA's counters of traffic the ENI's allowances
// shaped or dropped ({bw_in,bw_out,pps,conntrack,linklocal}_allowance_exceeded)
// and of device resets (total_resets, reset_fail; interface_down/up count
// every close and open, a SIOCSHWTSTAMP's included): amzn-drivers
// ena_ethtool.c ena_stats_global_strings, ena_stats_eni_strings.
var enaCounter = regexp.MustCompile(`_allowance_exceeded$|^(total_resets|reset_fail|interface_(up|down))$`)

// watched reports whether NICStats reports counter name.
func watched(name string) bool {
	return dropCounter.MatchString(name) || stampCounter.MatchString(name) || enaCounter.MatchString(name)
}

// NewNICStats opens the counters of iface (in the calling thread's network
// namespace) and keeps those whose names tell of drops, ring overruns,
// lost hardware timestamps, and ENA's allowances and resets. A driver without ethtool statistics gives an
// error wrapping errors.ErrUnsupported; an unknown interface
// os.ErrNotExist.
func NewNICStats(iface string) (*NICStats, error) {
	if err := checkIfname(iface); err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	h := &hostEthtool{fd: fd}
	copy(h.ifr.name[:], iface)
	s, err := NewNICStatsWith(iface, h)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	s.host = h
	return s, nil
}

// NewNICStatsWith is NewNICStats through ioc: the host's ethtool ioctl,
// or a driver profile in tests.
func NewNICStatsWith(iface string, ioc EthtoolIoctl) (*NICStats, error) {
	if err := checkIfname(iface); err != nil {
		return nil, err
	}
	return newNICStats(iface, ioc)
}

func checkIfname(iface string) error {
	if len(iface) >= unix.IFNAMSIZ || iface == "" {
		return fmt.Errorf("nic stats: %q is not an interface name", iface)
	}
	return nil
}

func newNICStats(iface string, ioc EthtoolIoctl) (*NICStats, error) {
	s := &NICStats{iface: iface, ioc: ioc}
	n, err := s.count()
	if err != nil {
		return nil, err
	}
	names, err := s.strings(n)
	if err != nil {
		return nil, err
	}
	s.names = names
	for i, n := range names {
		if watched(n) {
			s.pick = append(s.pick, i)
		}
	}
	if s.mem, s.buf, err = guarded(8 + 8*len(names)); err != nil {
		return nil, fmt.Errorf("nic stats %s: mapping the counter buffer: %w", iface, err)
	}
	return s, nil
}

// guarded maps size bytes that end where an inaccessible page begins, so
// that a kernel writing more than size bytes into buf fails with EFAULT
// instead of overwriting what follows. Unmap mem when done.
func guarded(size int) (mem, buf []byte, err error) {
	page := unix.Getpagesize()
	data := (size + page - 1) / page * page
	mem, err = unix.Mmap(-1, 0, data+page, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.Mprotect(mem[:data], unix.PROT_READ|unix.PROT_WRITE); err != nil {
		unix.Munmap(mem)
		return nil, nil, err
	}
	return mem, mem[data-size : data : data], nil
}

func (s *NICStats) ioctl(op string, data []byte) error {
	if err := s.ioc.Ethtool(s.iface, data); err != nil {
		return ioctlErr(op, s.iface, err)
	}
	return nil
}

// count asks the driver how many counters it has now (ETHTOOL_GSSET_INFO
// for ETH_SS_STATS). It does not allocate on success.
func (s *NICStats) count() (int, error) {
	info := s.info[:]
	clear(info)
	binary.NativeEndian.PutUint32(info[0:], unix.ETHTOOL_GSSET_INFO)
	binary.NativeEndian.PutUint64(info[8:], 1<<ethSSStats)
	if err := s.ioctl("ETHTOOL_GSSET_INFO", info); err != nil {
		return 0, err
	}
	if binary.NativeEndian.Uint64(info[8:])&(1<<ethSSStats) == 0 {
		return 0, fmt.Errorf("ETHTOOL_GSSET_INFO %s: no statistics: %w", s.iface, errors.ErrUnsupported)
	}
	n := int(binary.NativeEndian.Uint32(info[16:]))
	if n <= 0 || n > 1<<16 {
		return 0, fmt.Errorf("ETHTOOL_GSSET_INFO %s: %d statistics: %w", s.iface, n, errors.ErrUnsupported)
	}
	return n, nil
}

// strings reads the n counter names (ETHTOOL_GSTRINGS). The kernel writes
// its current number of names too: the buffer is guarded like Read's.
func (s *NICStats) strings(n int) ([]string, error) {
	const strLen = 32 // ETH_GSTRING_LEN
	mem, buf, err := guarded(12 + n*strLen)
	if err != nil {
		return nil, fmt.Errorf("nic stats %s: mapping the names buffer: %w", s.iface, err)
	}
	defer unix.Munmap(mem)
	binary.NativeEndian.PutUint32(buf[0:], unix.ETHTOOL_GSTRINGS)
	binary.NativeEndian.PutUint32(buf[4:], ethSSStats)
	binary.NativeEndian.PutUint32(buf[8:], uint32(n))
	if err := s.ioctl("ETHTOOL_GSTRINGS", buf); err != nil {
		return nil, err
	}
	if got := int(binary.NativeEndian.Uint32(buf[8:])); got != n {
		return nil, fmt.Errorf("ETHTOOL_GSTRINGS %s: %d names, %d expected: %w", s.iface, got, n, ErrStatsChanged)
	}
	names := make([]string, n)
	for i := range names {
		names[i] = cstr(buf[12+i*strLen : 12+(i+1)*strLen])
	}
	return names, nil
}

// Names are the counters Read reports, in order.
func (s *NICStats) Names() []string {
	out := make([]string, len(s.pick))
	for i, k := range s.pick {
		out[i] = s.names[k]
	}
	return out
}

// Read fills dst (len(Names())) with the current values. It does not
// allocate. When the driver's counter set changed since NewNICStats it
// returns an error wrapping ErrStatsChanged and leaves dst alone.
func (s *NICStats) Read(dst []uint64) error {
	n, err := s.count()
	if err != nil {
		return err
	}
	if n != len(s.names) {
		return s.changed(n)
	}
	if err := s.gstats(); err != nil {
		return err
	}
	for i, k := range s.pick {
		if i < len(dst) {
			dst[i] = binary.NativeEndian.Uint64(s.buf[8+8*k:])
		}
	}
	return nil
}

// gstats is ETHTOOL_GSTATS into the guarded buffer.
func (s *NICStats) gstats() error {
	binary.NativeEndian.PutUint32(s.buf[0:], unix.ETHTOOL_GSTATS)
	binary.NativeEndian.PutUint32(s.buf[4:], uint32(len(s.names)))
	if err := s.ioctl("ETHTOOL_GSTATS", s.buf); err != nil {
		if errors.Is(err, unix.EFAULT) {
			// The count grew between GSSET_INFO and GSTATS and the copy
			// ran into the guard page.
			return fmt.Errorf("%w: %w", err, ErrStatsChanged)
		}
		return err
	}
	if got := int(binary.NativeEndian.Uint32(s.buf[4:])); got != len(s.names) {
		if got == 0 {
			// Kernels with the December 2025 fix (net/ethtool/ioctl.c)
			// return nothing when the count asked for is not theirs.
			return fmt.Errorf("nic stats %s: the kernel returned no counters: its count is no longer the %d asked for (channels or XDP changed): %w", s.iface, len(s.names), ErrStatsChanged)
		}
		return s.changed(got)
	}
	return nil
}

func (s *NICStats) changed(n int) error {
	return fmt.Errorf("nic stats %s: %d counters now, %d when opened (channels or XDP changed): %w", s.iface, n, len(s.names), ErrStatsChanged)
}

// Close releases the socket and the buffer.
func (s *NICStats) Close() error {
	var err error
	if s.mem != nil {
		err = unix.Munmap(s.mem)
		s.mem, s.buf = nil, nil
	}
	if s.host != nil {
		err = errors.Join(err, unix.Close(s.host.fd))
		s.host = nil
	}
	return err
}

// ReadStats reads every `ethtool -S` counter of iface once, by name.
func ReadStats(iface string) (map[string]uint64, error) {
	s, err := NewNICStats(iface)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if _, err := s.count(); err != nil {
		return nil, err
	}
	if err := s.gstats(); err != nil {
		return nil, err
	}
	out := make(map[string]uint64, len(s.names))
	for i, n := range s.names {
		out[n] = binary.NativeEndian.Uint64(s.buf[8+8*i:])
	}
	return out, nil
}
