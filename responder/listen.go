package responder

import (
	"fmt"
	"net/netip"
	"os"
	"slices"

	"github.com/rig-project/rig/nicctl"
)

// onIface checks that a is one of iface's IPv4 addresses: requests to an
// address of another interface would not arrive on the one measured. The
// error wraps os.ErrNotExist (bad input).
func onIface(iface string, a netip.Addr) error {
	as, err := nicctl.IPv4Addrs(iface)
	if err != nil {
		return err
	}
	if !slices.Contains(as, a.Unmap()) {
		return fmt.Errorf("%s is not an address of %s (its IPv4 addresses: %s): %w", a, iface, nicctl.AddrList(as), os.ErrNotExist)
	}
	return nil
}
