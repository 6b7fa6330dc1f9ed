package capture

import "github.com/rig-project/rig/internal/tstamp"

// VXLAN (RFC 7348): an 8-byte header after UDP (destination port 4789):
// flags (0x08: the VNI is valid; the other bits reserved, ignored on
// receipt), 3 reserved bytes, the 24-bit VNI, 1 reserved byte; then the
// encapsulated Ethernet frame. AWS VPC Traffic Mirroring delivers its
// copies this way, the VNI being the mirror session's.
const (
	vxlanHeaderLen = 8
	vxlanFlagVNI   = 0x08
	// vxlanOverhead is what encapsulation adds in front of a frame: outer
	// Ethernet, IPv4 (no options), UDP and VXLAN headers.
	vxlanOverhead = 14 + 20 + 8 + vxlanHeaderLen
)

// vxlanInner returns the Ethernet frame a VXLAN-encapsulated IPv4/UDP
// frame carries: a subslice of f (decapsulated in place, no copy), or
// false when f is not VXLAN on tstamp.VXLANPort with the VNI flag set.
// It does not allocate.
func vxlanInner(f []byte) ([]byte, bool) {
	p, ep, ok := udpFrame(f)
	if !ok || ep.dport != tstamp.VXLANPort || len(p) < vxlanHeaderLen+14 || p[0]&vxlanFlagVNI == 0 {
		return nil, false
	}
	return p[vxlanHeaderLen:], true
}

// mirror describes the capture port for the sample header.
func (c *Capture) mirror() string {
	if c.cfg.VXLAN {
		return "vxlan: copies encapsulated in UDP 4789 (RFC 7348), stamped on arrival at this port"
	}
	return "frames as on the wire (SPAN/tap port)"
}
