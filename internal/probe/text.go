package probe

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/rig-project/rig/internal/wire"
)

// The command-line text of values whose Go type says less than the flag:
// each is a field's type seen through the flag (flag.TextVar on a pointer
// conversion), so the field keeps its type and the flag its text and check.

// group is a multicast group:port (--group, --reply-group); "" is none.
type group netip.AddrPort

func (g group) MarshalText() ([]byte, error) { return netip.AddrPort(g).MarshalText() }

func (g *group) UnmarshalText(b []byte) error {
	var ap netip.AddrPort
	if len(b) > 0 {
		var err error
		if ap, err = parseGroup(string(b)); err != nil {
			return errors.New("want an IPv4 multicast group:port such as 239.1.1.1:9000")
		}
	}
	*g = group(ap)
	return nil
}

// unicastAddr is where unicast requests go (--to, --listen); "" is none.
type unicastAddr netip.AddrPort

func (u unicastAddr) MarshalText() ([]byte, error) { return netip.AddrPort(u).MarshalText() }

func (u *unicastAddr) UnmarshalText(b []byte) error {
	var ap netip.AddrPort
	if len(b) > 0 {
		var err error
		if ap, err = netip.ParseAddrPort(string(b)); err == nil {
			err = CheckUnicast(ap)
		}
		if err != nil {
			return fmt.Errorf("want the responder's IPv4 address:port such as 10.0.0.2:9000 (%v)", err)
		}
	}
	*u = unicastAddr(ap)
	return nil
}

// reply is where the responder's replies go (--reply): "unicast", back to
// the sender, or a multicast group:port.
type reply netip.AddrPort

func (r reply) MarshalText() ([]byte, error) {
	if !netip.AddrPort(r).IsValid() {
		return []byte("unicast"), nil
	}
	return netip.AddrPort(r).MarshalText()
}

func (r *reply) UnmarshalText(b []byte) error {
	var ap netip.AddrPort
	if s := string(b); s != "" && s != "unicast" {
		var err error
		if ap, err = parseGroup(s); err != nil {
			return errors.New("want unicast or an IPv4 multicast group:port such as 239.1.1.2:9001")
		}
	}
	*r = reply(ap)
	return nil
}

// runID is --run-id: 1 to 16 hex digits; "" is 0, not given.
type runID uint64

func (id runID) MarshalText() ([]byte, error) {
	if id == 0 {
		return nil, nil
	}
	return []byte(wire.FormatRunID(uint64(id))), nil
}

func (id *runID) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*id = 0
		return nil
	}
	v, err := wire.ParseRunID(string(b))
	*id = runID(v)
	return err
}

// nicTimestamping is --nic-timestamping: enable (false) or leave (true).
type nicTimestamping bool

func (leave nicTimestamping) MarshalText() ([]byte, error) {
	if leave {
		return []byte("leave"), nil
	}
	return []byte("enable"), nil
}

func (leave *nicTimestamping) UnmarshalText(b []byte) error {
	switch string(b) {
	case "enable", "leave":
		*leave = string(b) == "leave"
		return nil
	}
	return errors.New("want enable or leave")
}

// parseGroup parses an IPv4 multicast group:port.
func parseGroup(s string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return ap, err
	}
	if !isGroup(ap) {
		return ap, fmt.Errorf("%s is not an IPv4 multicast group:port", s)
	}
	return ap, nil
}
