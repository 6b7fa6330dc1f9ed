//go:build linux

package facts

import (
	"errors"
	"fmt"
	"net"
	"os"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// The netdev generic-netlink family's napi-get and napi-set
// (include/uapi/linux/netdev.h).
const (
	netdevFamily         = "netdev"
	netdevNAPIGet        = 11 // NETDEV_CMD_NAPI_GET
	NetdevNAPISet        = 14 // NETDEV_CMD_NAPI_SET (Linux 6.13)
	NetdevNAPIIface      = 1  // NETDEV_A_NAPI_IFINDEX
	NetdevNAPIID         = 2  // NETDEV_A_NAPI_ID
	netdevNAPIDefer      = 5  // NETDEV_A_NAPI_DEFER_HARD_IRQS (u32)
	netdevNAPIGROFlush   = 6  // NETDEV_A_NAPI_GRO_FLUSH_TIMEOUT (uint)
	NetdevNAPIIRQSuspend = 7  // NETDEV_A_NAPI_IRQ_SUSPEND_TIMEOUT (uint)
)

// NAPI is one NAPI instance as napi-get reports it: its id and the knobs
// this kernel reports of it (nil: it reports none, it predates them).
type NAPI struct {
	ID uint32 `json:"id"`
	NAPIKnobs
}

// Netdev is a connection to the netdev generic-netlink family, in the
// calling thread's network namespace.
type Netdev struct {
	C      *genetlink.Conn
	Family genetlink.Family
}

// DialNetdev connects to the netdev family. A kernel without it (before
// 6.5) gives an error wrapping errors.ErrUnsupported.
func DialNetdev() (*Netdev, error) {
	c, err := genetlink.Dial(nil)
	if err != nil {
		return nil, fmt.Errorf("genetlink: %w", err)
	}
	f, err := c.GetFamily(netdevFamily)
	if err == nil {
		return &Netdev{C: c, Family: f}, nil
	}
	c.Close()
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("genetlink family %q not found (kernel without netdev netlink, < 6.5): %w", netdevFamily, errors.ErrUnsupported)
	}
	return nil, fmt.Errorf("genetlink family %q: %w", netdevFamily, err)
}

// NAPIs lists the NAPI instances of interface ifindex (napi-get, Linux
// 6.8): the queues busy polling polls. None means the interface's packets
// do not come through NAPI (veth without GRO or XDP, for one). A kernel
// that cannot tell gives an error wrapping errors.ErrUnsupported.
func (n *Netdev) NAPIs(ifindex int) ([]NAPI, error) {
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(NetdevNAPIIface, uint32(ifindex))
	body, err := ae.Encode()
	if err != nil {
		return nil, err
	}
	msgs, err := n.C.Execute(genetlink.Message{Header: genetlink.Header{Command: netdevNAPIGet, Version: n.Family.Version}, Data: body},
		n.Family.ID, netlink.Request|netlink.Dump)
	if errors.Is(err, unix.EOPNOTSUPP) {
		return nil, fmt.Errorf("netdev netlink without napi-get (kernel < 6.8): %w", errors.ErrUnsupported)
	}
	if err != nil {
		return nil, fmt.Errorf("netdev napi-get of ifindex %d: %w", ifindex, err)
	}
	var out []NAPI
	for _, m := range msgs {
		var x NAPI
		var at uint32
		if err := decodeNAPI(m.Data, &x, &at); err != nil {
			return nil, fmt.Errorf("netdev napi-get: %w", err)
		}
		if at == uint32(ifindex) && x.ID != 0 {
			out = append(out, x)
		}
	}
	return out, nil
}

// decodeNAPI decodes one napi-get reply.
func decodeNAPI(b []byte, x *NAPI, ifindex *uint32) error {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return err
	}
	// "uint" attributes are 4 or 8 bytes (include/net/netlink.h nla_put_uint).
	vuint := func() *uint64 {
		var v uint64
		switch len(ad.Bytes()) {
		case 4:
			v = uint64(ad.Uint32())
		case 8:
			v = ad.Uint64()
		default:
			return nil
		}
		return &v
	}
	for ad.Next() {
		switch ad.Type() {
		case NetdevNAPIID:
			x.ID = ad.Uint32()
		case NetdevNAPIIface:
			*ifindex = ad.Uint32()
		case netdevNAPIDefer:
			v := ad.Uint32()
			x.DeferHardIRQs = &v
		case netdevNAPIGROFlush:
			x.GROFlushTimeout = vuint()
		case NetdevNAPIIRQSuspend:
			x.IRQSuspendTimeout = vuint()
		}
	}
	return ad.Err()
}

// Close closes the connection.
func (n *Netdev) Close() error { return n.C.Close() }

// NAPIs lists the NAPI instances of interface iface in the calling
// thread's network namespace (Netdev.NAPIs).
func NAPIs(iface string) ([]NAPI, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, err
	}
	n, err := DialNetdev()
	if err != nil {
		return nil, err
	}
	defer n.Close()
	return n.NAPIs(ifi.Index)
}
