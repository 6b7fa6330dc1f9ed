package nicctl

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

// NICStats reads a driver's `ethtool -S` counters (ETHTOOL_GSTATS) into
// preallocated memory: New* reads the names once; Read does one ioctl and
// does not allocate, so the telemetry sampler can call it every sample.
type NICStats struct {
	fd    int
	ifr   ifreqData
	buf   []byte // struct ethtool_stats: cmd, n_stats, then n × u64
	names []string
	pick  []int // indexes of the counters Read reports
}

// dropCounter matches the counters that tell of lost packets: drops,
// ring overruns, missed, no-buffer, FIFO errors.
var dropCounter = regexp.MustCompile(`(?i)(drop|discard|overrun|over_run|miss|no_?buf|fifo|alloc_fail|xoff|timeout)`)

// NewNICStats opens the counters of iface (in the calling thread's network
// namespace) and keeps those whose names tell of drops and ring overruns.
// A driver without ethtool statistics gives an error wrapping
// errors.ErrUnsupported; an unknown interface os.ErrNotExist.
func NewNICStats(iface string) (*NICStats, error) {
	if len(iface) >= unix.IFNAMSIZ || iface == "" {
		return nil, fmt.Errorf("nic stats: %q is not an interface name", iface)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	s := &NICStats{fd: fd}
	copy(s.ifr.name[:], iface)
	names, err := s.strings(iface)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	s.names = names
	for i, n := range names {
		if dropCounter.MatchString(n) {
			s.pick = append(s.pick, i)
		}
	}
	s.buf = make([]byte, 8+8*len(names))
	return s, nil
}

func (s *NICStats) ioctl(iface, op string, p unsafe.Pointer) error {
	s.ifr.data = p
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(s.fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&s.ifr)))
	s.ifr.data = nil
	if e != 0 {
		return ioctlErr(op, iface, e)
	}
	return nil
}

// strings reads the counter names (ETHTOOL_GSSET_INFO, ETHTOOL_GSTRINGS).
func (s *NICStats) strings(iface string) ([]string, error) {
	var info [8 + 8 + 4]byte // cmd, reserved, sset_mask u64, data[1] u32
	binary.NativeEndian.PutUint32(info[0:], unix.ETHTOOL_GSSET_INFO)
	binary.NativeEndian.PutUint64(info[8:], 1<<ethSSStats)
	if err := s.ioctl(iface, "ETHTOOL_GSSET_INFO", unsafe.Pointer(&info[0])); err != nil {
		return nil, err
	}
	if binary.NativeEndian.Uint64(info[8:])&(1<<ethSSStats) == 0 {
		return nil, fmt.Errorf("ETHTOOL_GSSET_INFO %s: no statistics: %w", iface, errors.ErrUnsupported)
	}
	n := int(binary.NativeEndian.Uint32(info[16:]))
	if n <= 0 || n > 1<<16 {
		return nil, fmt.Errorf("ETHTOOL_GSSET_INFO %s: %d statistics: %w", iface, n, errors.ErrUnsupported)
	}
	const strLen = 32 // ETH_GSTRING_LEN
	buf := make([]byte, 12+n*strLen)
	binary.NativeEndian.PutUint32(buf[0:], unix.ETHTOOL_GSTRINGS)
	binary.NativeEndian.PutUint32(buf[4:], ethSSStats)
	binary.NativeEndian.PutUint32(buf[8:], uint32(n))
	if err := s.ioctl(iface, "ETHTOOL_GSTRINGS", unsafe.Pointer(&buf[0])); err != nil {
		return nil, err
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
// allocate.
func (s *NICStats) Read(dst []uint64) error {
	binary.NativeEndian.PutUint32(s.buf[0:], unix.ETHTOOL_GSTATS)
	binary.NativeEndian.PutUint32(s.buf[4:], uint32(len(s.names)))
	if err := s.ioctl("", "ETHTOOL_GSTATS", unsafe.Pointer(&s.buf[0])); err != nil {
		return err
	}
	for i, k := range s.pick {
		if i < len(dst) {
			dst[i] = binary.NativeEndian.Uint64(s.buf[8+8*k:])
		}
	}
	return nil
}

// ReadStats reads every `ethtool -S` counter of iface once.
func ReadStats(iface string) (map[string]uint64, error) {
	s, err := NewNICStats(iface)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	binary.NativeEndian.PutUint32(s.buf[0:], unix.ETHTOOL_GSTATS)
	binary.NativeEndian.PutUint32(s.buf[4:], uint32(len(s.names)))
	if err := s.ioctl(iface, "ETHTOOL_GSTATS", unsafe.Pointer(&s.buf[0])); err != nil {
		return nil, err
	}
	out := make(map[string]uint64, len(s.names))
	for i, n := range s.names {
		out[n] = binary.NativeEndian.Uint64(s.buf[8+8*i:])
	}
	return out, nil
}

// Close releases the socket.
func (s *NICStats) Close() error { return unix.Close(s.fd) }
