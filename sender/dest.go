package sender

import "net/netip"

func (c *Config) dest() netip.AddrPort {
	if c.To.IsValid() {
		return c.To
	}
	return c.Group
}
