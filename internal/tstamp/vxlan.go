package tstamp

// VXLANPort is the IANA UDP port of VXLAN (RFC 7348), the one AWS VPC
// Traffic Mirroring sends its copies to. (Linux's `ip link add … type
// vxlan` without dstport uses 8472, the port it used before IANA's.)
const VXLANPort = 4789

// VXLANOverhead is what encapsulation adds in front of a frame: outer
// Ethernet, IPv4 (no options), UDP and the 8-byte VXLAN header.
const VXLANOverhead = 14 + 20 + 8 + 8

// VXLANMatch is which VXLAN copies a capture takes: those to UDP port Port
// (0: VXLANPort) and, when VNI is set, of that VXLAN network identifier
// only (a mirror session's; copies of another session to the same target
// are left out).
type VXLANMatch struct {
	Port uint16
	VNI  *uint32
}

// UDPPort is the outer UDP destination port.
func (m VXLANMatch) UDPPort() uint16 {
	if m.Port == 0 {
		return VXLANPort
	}
	return m.Port
}

// Takes reports whether a VXLAN header h (8 bytes: flags, 3 reserved, the
// 24-bit VNI, 1 reserved) received on the matched port is one m takes:
// the VNI flag set and, with VNI set, that VNI. It does not allocate.
func (m VXLANMatch) Takes(h []byte) bool {
	if len(h) < 8 || h[0]&0x08 == 0 {
		return false
	}
	return m.VNI == nil || uint32(h[4])<<16|uint32(h[5])<<8|uint32(h[6]) == *m.VNI
}

// MaxVNI is the largest VXLAN network identifier (24 bits).
const MaxVNI = 1<<24 - 1
