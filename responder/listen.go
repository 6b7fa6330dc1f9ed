package responder

import (
	"fmt"
	"net/netip"
	"os"
	"slices"

	"github.com/rig-project/rig/internal/facts"
)

// onIface checks that a is one of iface's IPv4 addresses: requests to an
// address of another interface would not arrive on the one measured. The
// error wraps os.ErrNotExist (bad input).
func onIface(iface string, a netip.Addr) error {
	as, err := facts.IPv4Addrs(iface)
	if err != nil {
		return err
	}
	if !slices.Contains(as, a.Unmap()) {
		return fmt.Errorf("%s is not an address of %s (its IPv4 addresses: %s): %w", a, iface, facts.AddrList(as), os.ErrNotExist)
	}
	return nil
}
