package nicfake

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// statSet is a driver's `ethtool -S` counters: the profile's device-wide
// counters, then its per-queue ones for the current number of queues, as
// drivers lay out get_strings/get_ethtool_stats. A layout is immutable
// once published; SetQueues publishes a new one that keeps the
// device-wide counters' values.
type statSet struct {
	cur  atomic.Pointer[statLayout]
	skip int // index of Profile.SkipCounter, -1 when none
}

type statLayout struct {
	names []string
	vals  []*atomic.Uint64
}

func (s *statSet) build(p *Profile, queues int) {
	old := s.cur.Load()
	l := &statLayout{}
	for i, name := range p.Counters {
		l.names = append(l.names, name)
		if old != nil {
			l.vals = append(l.vals, old.vals[i]) // device-wide: same counter
		} else {
			l.vals = append(l.vals, new(atomic.Uint64))
		}
	}
	for q := 0; q < queues; q++ {
		for _, f := range p.QueueCounters {
			l.names = append(l.names, fmt.Sprintf(f, q))
			l.vals = append(l.vals, new(atomic.Uint64))
		}
	}
	if old == nil { // device-wide indexes never change: the Stamper reads skip unlocked
		s.skip = -1
		for i, name := range p.Counters {
			if name == p.SkipCounter && name != "" {
				s.skip = i
			}
		}
	}
	s.cur.Store(l)
}

func (s *statSet) index(name string) (int, bool) {
	for i, n := range s.cur.Load().names {
		if n == name {
			return i, true
		}
	}
	return 0, false
}

func (s *statSet) add(i int, d uint64) {
	if i >= 0 {
		s.cur.Load().vals[i].Add(d)
	}
}

func (s *statSet) get(name string) (uint64, bool) {
	i, ok := s.index(name)
	if !ok {
		return 0, false
	}
	return s.cur.Load().vals[i].Load(), true
}

// ETH_SS_STATS and ETH_GSTRING_LEN.
const (
	ssStats   = 1
	gstrLen   = 32
	ssetInfo  = 8 + 8 // cmd, reserved, sset_mask; then u32 data[]
	gstrHdr   = 12    // cmd, string_set, len
	gstatsHdr = 8     // cmd, n_stats
)

// Ethtool answers SIOCETHTOOL for ifname as net/ethtool/ioctl.c does with
// this driver's counters (facts.EthtoolIoctl), and its private flags
// (privFlagsIoctl): ETHTOOL_GSSET_INFO reports
// the current count (or clears the ETH_SS_STATS bit when the driver has
// no statistics); ETHTOOL_GSTRINGS and ETHTOOL_GSTATS write the driver's
// *current* number of entries whatever count the caller passed, and set
// the count field to it — or, with CountCheck (kernels with commit
// 7b07be1ff1cb, December 2025), return a count of 0 and nothing when the
// caller's non-zero count is not the current one. Where the entries do not
// fit in data the copy stops at the end of data and the call fails with
// EFAULT, which is what the kernel's copy_to_user does when the caller's
// buffer ends at an inaccessible page (facts guards its buffers so). It
// does not allocate.
func (n *NIC) Ethtool(ifname string, data []byte) error {
	if ifname != n.Ifname {
		return unix.ENODEV
	}
	if len(data) < 4 {
		return unix.EFAULT
	}
	if done, err := n.privFlagsIoctl(data); done {
		return err
	}
	l := n.stats.cur.Load()
	count := len(l.names)
	ne := binary.NativeEndian
	switch ne.Uint32(data) {
	case unix.ETHTOOL_GSSET_INFO:
		if len(data) < ssetInfo {
			return unix.EFAULT
		}
		mask := ne.Uint64(data[8:])
		if mask&^(1<<ssStats) != 0 {
			return unix.EOPNOTSUPP // sets rig never asks for
		}
		if mask == 0 || count == 0 {
			ne.PutUint64(data[8:], 0)
			return nil
		}
		if len(data) < ssetInfo+4 {
			return unix.EFAULT
		}
		ne.PutUint32(data[ssetInfo:], uint32(count))
		return nil
	case unix.ETHTOOL_GSTRINGS:
		if len(data) < gstrHdr {
			return unix.EFAULT
		}
		if ne.Uint32(data[4:]) != ssStats || count == 0 {
			return unix.EOPNOTSUPP
		}
		if asked := int(ne.Uint32(data[8:])); n.CountCheck && asked != 0 && asked != count {
			ne.PutUint32(data[8:], 0)
			return nil
		}
		ne.PutUint32(data[8:], uint32(count))
		for i, name := range l.names {
			off := gstrHdr + i*gstrLen
			if off+gstrLen > len(data) {
				return unix.EFAULT
			}
			b := data[off : off+gstrLen]
			clear(b)
			copy(b[:gstrLen-1], name)
		}
		return nil
	case unix.ETHTOOL_GSTATS:
		if len(data) < gstatsHdr {
			return unix.EFAULT
		}
		if count == 0 {
			return unix.EOPNOTSUPP
		}
		if asked := int(ne.Uint32(data[4:])); n.CountCheck && asked != 0 && asked != count {
			ne.PutUint32(data[4:], 0)
			return nil
		}
		ne.PutUint32(data[4:], uint32(count))
		for i, v := range l.vals {
			off := gstatsHdr + 8*i
			if off+8 > len(data) {
				return unix.EFAULT
			}
			ne.PutUint64(data[off:], v.Load())
		}
		return nil
	}
	return unix.EOPNOTSUPP
}
