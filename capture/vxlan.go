package capture

import (
	"fmt"

	"github.com/rig-project/rig/internal/tstamp"
)

// VXLAN (RFC 7348): an 8-byte header after UDP (destination port 4789, or
// the one tstamp.VXLANMatch names):
// flags (0x08: the VNI is valid; the other bits reserved, ignored on
// receipt), 3 reserved bytes, the 24-bit VNI, 1 reserved byte; then the
// encapsulated Ethernet frame. AWS VPC Traffic Mirroring delivers its
// copies this way, the VNI being the mirror session's.
const (
	vxlanHeaderLen = 8
	vxlanOverhead  = tstamp.VXLANOverhead
)

// vxlanInner returns the Ethernet frame a VXLAN-encapsulated IPv4/UDP
// frame carries: a subslice of f (decapsulated in place, no copy), or
// false when f is not VXLAN that m takes (its UDP port, the VNI flag set,
// its VNI when set). It does not allocate.
func vxlanInner(f []byte, m tstamp.VXLANMatch) ([]byte, bool) {
	p, ep, ok := udpFrame(f)
	if !ok || ep.dport != m.UDPPort() || len(p) < vxlanHeaderLen+14 || !m.Takes(p) {
		return nil, false
	}
	return p[vxlanHeaderLen:], true
}

// mirror describes the capture port for the sample header.
func (c *Capture) mirror() string {
	if !c.cfg.VXLAN {
		return "frames as on the wire (SPAN/tap port)"
	}
	vni := "any VNI"
	if v := c.match.VNI; v != nil {
		vni = fmt.Sprintf("VNI %d", *v)
	}
	return fmt.Sprintf("vxlan: copies encapsulated in UDP %d (RFC 7348), %s, stamped on arrival at this port", c.match.UDPPort(), vni)
}
