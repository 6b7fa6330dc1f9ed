//go:build linux

package facts

import (
	"errors"
	"fmt"
	"os"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// The netdev generic-netlink family's napi-get (include/uapi/linux/netdev.h).
const (
	netdevFamily    = "netdev"
	netdevNAPIGet   = 11 // NETDEV_CMD_NAPI_GET
	netdevNAPIIface = 1  // NETDEV_A_NAPI_IFINDEX
	netdevNAPIID    = 2  // NETDEV_A_NAPI_ID
)

// NAPIs lists the ids of the NAPI instances of interface ifindex in the
// calling thread's network namespace (netdev netlink napi-get, Linux 6.8):
// the queues busy polling polls. None means the interface's packets do not
// come through NAPI (veth without GRO or XDP, for one). A kernel that
// cannot tell gives an error wrapping errors.ErrUnsupported.
func NAPIs(ifindex int) ([]uint32, error) {
	c, err := genetlink.Dial(nil)
	if err != nil {
		return nil, fmt.Errorf("genetlink: %w", err)
	}
	defer c.Close()
	f, err := c.GetFamily(netdevFamily)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("genetlink family %q not found (kernel without netdev netlink, < 6.5): %w", netdevFamily, errors.ErrUnsupported)
	}
	if err != nil {
		return nil, fmt.Errorf("genetlink family %q: %w", netdevFamily, err)
	}
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(netdevNAPIIface, uint32(ifindex))
	body, err := ae.Encode()
	if err != nil {
		return nil, err
	}
	msgs, err := c.Execute(genetlink.Message{Header: genetlink.Header{Command: netdevNAPIGet, Version: f.Version}, Data: body},
		f.ID, netlink.Request|netlink.Dump)
	if errors.Is(err, unix.EOPNOTSUPP) {
		return nil, fmt.Errorf("netdev netlink without napi-get (kernel < 6.8): %w", errors.ErrUnsupported)
	}
	if err != nil {
		return nil, fmt.Errorf("netdev napi-get of ifindex %d: %w", ifindex, err)
	}
	var ids []uint32
	for _, m := range msgs {
		ad, err := netlink.NewAttributeDecoder(m.Data)
		if err != nil {
			return nil, fmt.Errorf("netdev napi-get: %w", err)
		}
		var id, at uint32
		for ad.Next() {
			switch ad.Type() {
			case netdevNAPIID:
				id = ad.Uint32()
			case netdevNAPIIface:
				at = ad.Uint32()
			}
		}
		if err := ad.Err(); err != nil {
			return nil, fmt.Errorf("netdev napi-get: %w", err)
		}
		if at == uint32(ifindex) && id != 0 {
			ids = append(ids, id)
		}
	}
	return ids, nil
}
