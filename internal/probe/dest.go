package probe

import (
	"errors"
	"fmt"
	"net/netip"
)

// CheckDest checks where requests go (the sender's destination, the
// responder's request address, the capture's direction check): a
// multicast group:port, or for unicast requests the responder's IPv4
// unicast address:port; exactly one.
func CheckDest(group, unicast netip.AddrPort) error {
	switch {
	case group.IsValid() && unicast.IsValid():
		return fmt.Errorf("requests go to a group (%s) or to an address (%s), not both", group, unicast)
	case unicast.IsValid():
		return CheckUnicast(unicast)
	case !group.IsValid():
		return errors.New("no request destination: give a multicast group:port or, for unicast requests, the responder's address:port")
	case !isGroup(group):
		return fmt.Errorf("group %s is not an IPv4 multicast group:port (e.g. 239.1.1.1:9000)", group)
	}
	return nil
}

// CheckUnicast checks the address:port of unicast requests: an IPv4
// unicast address (not multicast, broadcast or 0.0.0.0) and a port.
func CheckUnicast(ap netip.AddrPort) error {
	a := ap.Addr().Unmap()
	switch {
	case !a.Is4():
		return fmt.Errorf("%s is not an IPv4 address:port (rig speaks IPv4 only)", ap)
	case a.IsMulticast():
		return fmt.Errorf("%s is a multicast address: unicast requests go to the responder's own address (a group is given as --group)", a)
	case a.IsUnspecified() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return fmt.Errorf("%s is not a host's address: give the responder's address on its interface", a)
	case ap.Port() == 0:
		return fmt.Errorf("port 0 in %s", ap)
	}
	return nil
}

// isGroup reports whether ap is an IPv4 multicast group:port.
func isGroup(ap netip.AddrPort) bool {
	return ap.Addr().Is4() && ap.Addr().IsMulticast() && ap.Port() != 0
}
