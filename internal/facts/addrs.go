package facts

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
)

// IPv4Addrs lists the IPv4 addresses of iface in the calling thread's
// network namespace (RTM_GETADDR), sorted. An interface that does not
// exist gives an error wrapping os.ErrNotExist; one without IPv4
// addresses gives an empty list.
func IPv4Addrs(iface string) ([]netip.Addr, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, fmt.Errorf("interface %q: %w (list them with `ip link`)", iface, os.ErrNotExist)
	}
	as, err := ifi.Addrs()
	if err != nil {
		return nil, fmt.Errorf("addresses of %s: %w", iface, err)
	}
	var out []netip.Addr
	for _, a := range as {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap().Is4() {
			out = append(out, ip.Unmap())
		}
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return out, nil
}

// AddrList formats addresses for messages: "10.0.0.2, 10.0.0.3" or "none".
func AddrList(as []netip.Addr) string {
	if len(as) == 0 {
		return "none"
	}
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}
