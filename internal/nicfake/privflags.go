package nicfake

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// ssPrivFlags is ETH_SS_PRIV_FLAGS.
const ssPrivFlags = 2

// SetPrivFlag sets a private flag (`ethtool --set-priv-flags`) and
// reports whether the driver has it.
func (n *NIC) SetPrivFlag(name string, on bool) bool {
	for i, f := range n.P.PrivFlags {
		if f != name {
			continue
		}
		for {
			old := n.priv.Load()
			v := old &^ (1 << i)
			if on {
				v |= 1 << i
			}
			if n.priv.CompareAndSwap(old, v) {
				return true
			}
		}
	}
	return false
}

// privOn reports whether private flag name is set.
func (n *NIC) privOn(name string) bool {
	for i, f := range n.P.PrivFlags {
		if f == name {
			return n.priv.Load()&(1<<i) != 0
		}
	}
	return false
}

// privFlagsIoctl answers the SIOCETHTOOL requests for private flags as
// net/ethtool/ioctl.c does with the driver's get_sset_count, get_strings
// and get_priv_flags: ETHTOOL_GSSET_INFO for ETH_SS_PRIV_FLAGS alone (the
// bit cleared for a driver without them), ETHTOOL_GSTRINGS for that set,
// ETHTOOL_GPFLAGS. It reports whether data was such a request.
func (n *NIC) privFlagsIoctl(data []byte) (bool, error) {
	ne := binary.NativeEndian
	count := len(n.P.PrivFlags)
	switch ne.Uint32(data) {
	case unix.ETHTOOL_GSSET_INFO:
		if len(data) < ssetInfo || ne.Uint64(data[8:]) != 1<<ssPrivFlags {
			return false, nil
		}
		if count == 0 {
			ne.PutUint64(data[8:], 0)
			return true, nil
		}
		if len(data) < ssetInfo+4 {
			return true, unix.EFAULT
		}
		ne.PutUint32(data[ssetInfo:], uint32(count))
		return true, nil
	case unix.ETHTOOL_GSTRINGS:
		if len(data) < gstrHdr || ne.Uint32(data[4:]) != ssPrivFlags {
			return false, nil
		}
		if count == 0 {
			return true, unix.EOPNOTSUPP
		}
		ne.PutUint32(data[8:], uint32(count))
		for i, name := range n.P.PrivFlags {
			off := gstrHdr + i*gstrLen
			if off+gstrLen > len(data) {
				return true, unix.EFAULT
			}
			b := data[off : off+gstrLen]
			clear(b)
			copy(b[:gstrLen-1], name)
		}
		return true, nil
	case unix.ETHTOOL_GPFLAGS:
		if len(data) < 8 {
			return true, unix.EFAULT
		}
		if count == 0 {
			return true, unix.EOPNOTSUPP
		}
		ne.PutUint32(data[4:], n.priv.Load())
		return true, nil
	}
	return false, nil
}
