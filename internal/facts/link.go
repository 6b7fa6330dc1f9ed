//go:build linux

package facts

import (
	"fmt"

	"github.com/mdlayher/ethtool"
)

// Link is the link state and mode (ethtool IFACE), read with
// mdlayher/ethtool over netlink.
type Link struct {
	Up        bool   `json:"up"`
	SpeedMbps int    `json:"speed_mbps"` // -1 when unknown (link down, virtual)
	Duplex    string `json:"duplex"`
	Autoneg   bool   `json:"autoneg"`
	Port      string `json:"port,omitempty"`
}

// LinkReader reads Link for an interface in the caller's netns.
type LinkReader func(iface string) (Link, error)

// HostLink is the real LinkReader.
func HostLink(iface string) (Link, error) {
	c, err := ethtool.New()
	if err != nil {
		return Link{}, fmt.Errorf("ethtool netlink: %w", err)
	}
	defer c.Close()
	ifi := ethtool.Interface{Name: iface}
	l := Link{SpeedMbps: -1, Duplex: "unknown"}
	st, err := c.LinkState(ifi)
	if err != nil {
		return l, fmt.Errorf("ethtool LINKSTATE_GET %s: %w", iface, err)
	}
	l.Up = st.Link
	if m, err := c.LinkMode(ifi); err == nil {
		if m.SpeedMegabits > 0 && uint32(m.SpeedMegabits) != ^uint32(0) { // SPEED_UNKNOWN is (u32)-1
			l.SpeedMbps = m.SpeedMegabits
		}
		if d, ok := map[ethtool.Duplex]string{ethtool.Half: "half", ethtool.Full: "full"}[m.Duplex]; ok {
			l.Duplex = d
		}
		l.Autoneg = m.Autoneg == ethtool.AutonegOn
	}
	if i, err := c.LinkInfo(ifi); err == nil {
		l.Port = map[ethtool.Port]string{ethtool.TwistedPair: "TP", ethtool.AUI: "AUI", ethtool.MII: "MII", ethtool.Fibre: "FIBRE",
			ethtool.BNC: "BNC", ethtool.DirectAttach: "DA", ethtool.None: "none", ethtool.Other: "other"}[i.Port]
	}
	return l, nil
}
