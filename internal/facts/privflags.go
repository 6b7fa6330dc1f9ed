//go:build linux

package facts

import (
	"encoding/binary"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// ethSSPrivFlags is ETH_SS_PRIV_FLAGS, the string set of `ethtool
// --show-priv-flags`.
const ethSSPrivFlags = 2

// PrivBypassOnly is the ExaNIC private flag that takes a port away from
// the kernel: exanic_netdev_xmit drops every packet the kernel sends and
// the kernel's RX path is not started, so only the bypass APIs (libexanic,
// exasock) see traffic. The driver sets it at probe for firmware that is
// not a NIC, a PTP grandmaster or a devkit.
const PrivBypassOnly = "bypass_only"

// PrivCQECompress is mlx5's RX CQE compression (en_ethtool.c
// set_pflag_rx_cqe_compress). While it is on, turning RX stamping on or
// off reopens the channels (mlx5e_hwstamp_config_ptp_rx: the carrier
// drops and comes back inside the ioctl), and only PTP packets go to the
// uncompressed PTP queue: rig's UDP stays on compressed queues, where the
// packets of one compressed block carry its first packet's stamp
// (mlx5e_decompress_cqe copies no timestamp).
const PrivCQECompress = "rx_cqe_compress"

// cqeCompressNote says what PrivCQECompress on means for rig's stamps.
func cqeCompressNote(iface string) string {
	return "private flag " + PrivCQECompress + " is on: RX stamping on or off reopens " + iface + "'s channels (the link bounces), and rig's packets that complete together share one hardware RX stamp (a compressed block's first): fix: ethtool --set-priv-flags " + iface + " " + PrivCQECompress + " off"
}

// PrivFlags reads iface's private flags (`ethtool --show-priv-flags`:
// ETHTOOL_GSSET_INFO and ETHTOOL_GSTRINGS for ETH_SS_PRIV_FLAGS, then
// ETHTOOL_GPFLAGS) through the NIC's timestamping device when it answers
// SIOCETHTOOL too (driver profiles), the host's when the NIC has none. A
// driver without private flags gives an empty map; a test device that
// does not answer SIOCETHTOOL, nil.
func (e *NIC) PrivFlags(iface string) (map[string]bool, error) {
	var ioc EthtoolIoctl = hostEthtoolOnce{}
	if e.TS != nil {
		d, ok := e.TS.(EthtoolIoctl)
		if !ok {
			return nil, nil
		}
		ioc = d
	}
	ne := binary.NativeEndian
	info := make([]byte, 8+8+4)
	ne.PutUint32(info, unix.ETHTOOL_GSSET_INFO)
	ne.PutUint64(info[8:], 1<<ethSSPrivFlags)
	err := ioc.Ethtool(iface, info)
	if errors.Is(err, unix.EOPNOTSUPP) || err == nil && ne.Uint64(info[8:]) == 0 {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, ioctlErr("ETHTOOL_GSSET_INFO", iface, err)
	}
	n := int(ne.Uint32(info[16:]))
	if n < 0 || n > 32 { // ETHTOOL_GPFLAGS has 32 bits
		return nil, fmt.Errorf("ETHTOOL_GSSET_INFO %s: %d private flags", iface, n)
	}
	const strLen = 32 // ETH_GSTRING_LEN
	strs := make([]byte, 12+n*strLen)
	ne.PutUint32(strs, unix.ETHTOOL_GSTRINGS)
	ne.PutUint32(strs[4:], ethSSPrivFlags)
	ne.PutUint32(strs[8:], uint32(n))
	if err := ioc.Ethtool(iface, strs); err != nil {
		return nil, ioctlErr("ETHTOOL_GSTRINGS", iface, err)
	}
	val := make([]byte, 8) // struct ethtool_value
	ne.PutUint32(val, unix.ETHTOOL_GPFLAGS)
	if err := ioc.Ethtool(iface, val); err != nil {
		return nil, ioctlErr("ETHTOOL_GPFLAGS", iface, err)
	}
	bits := ne.Uint32(val[4:])
	flags := map[string]bool{}
	for i := range n {
		flags[cstr(strs[12+i*strLen:12+(i+1)*strLen])] = bits&(1<<i) != 0
	}
	return flags, nil
}

// bypassOnly refuses a port the kernel does not use (PrivBypassOnly).
func bypassOnly(iface string) error {
	return fmt.Errorf("%s is in ExaNIC bypass-only mode (private flag %s): the kernel sends and receives nothing on it, so rig's probes would wait for packets that never come; fix: ethtool --set-priv-flags %s %s off (firmware that is not a NIC sets it at probe: load NIC firmware): %w",
		iface, PrivBypassOnly, iface, PrivBypassOnly, errors.ErrUnsupported)
}

// hostEthtoolOnce is the host's SIOCETHTOOL for a few calls: one socket
// each, in the calling thread's network namespace.
type hostEthtoolOnce struct{}

func (hostEthtoolOnce) Ethtool(iface string, data []byte) error {
	if err := checkIfname(iface); err != nil {
		return err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	h := hostEthtool{fd: fd}
	copy(h.ifr.name[:], iface)
	return h.Ethtool(iface, data)
}
