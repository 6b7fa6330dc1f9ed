package sender

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/rig-project/rig/responder"
)

// checkDest checks where requests go: a multicast group:port, or with
// unicast requests the responder's IPv4 unicast address:port; exactly one.
func checkDest(group, to netip.AddrPort) error {
	switch {
	case group.IsValid() && to.IsValid():
		return fmt.Errorf("requests go to a group (%s) or to an address (%s), not both", group, to)
	case to.IsValid():
		return responder.CheckUnicast(to)
	case !group.IsValid():
		return errors.New("no destination: give a multicast group:port or, for unicast requests, the responder's address:port")
	case !group.Addr().Is4() || !group.Addr().IsMulticast() || group.Port() == 0:
		return fmt.Errorf("group %s is not an IPv4 multicast group:port (e.g. 239.1.1.1:9000)", group)
	}
	return nil
}

func (c *Config) dest() netip.AddrPort {
	if c.To.IsValid() {
		return c.To
	}
	return c.Group
}
