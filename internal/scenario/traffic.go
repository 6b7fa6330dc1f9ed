package scenario

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/probe"
)

// RequestMode is how requests reach the responder.
type RequestMode string

const (
	// RequestMulticast sends to traffic.group, which the responder joins
	// (the default; an AWS VPC carries it only through a Transit Gateway
	// multicast domain).
	RequestMulticast RequestMode = "multicast"
	// RequestUnicast sends to the responder host's own address on its
	// iface, port traffic.port; the responder joins nothing.
	RequestUnicast RequestMode = "unicast"
)

// MirrorVXLAN is a capture port that receives VXLAN-encapsulated copies
// (AWS VPC Traffic Mirroring), host option mirror: vxlan.
const MirrorVXLAN = "vxlan"

func parseRequest(v string) (RequestMode, error) {
	switch m := RequestMode(v); m {
	case RequestMulticast, RequestUnicast:
		return m, nil
	}
	return "", fmt.Errorf("request: %q is not a request mode", v)
}

const requestHint = "use multicast (to traffic.group, the default) or unicast (to the responder's address on its iface, port traffic.port)"

// trafficRequest reads traffic.request (default multicast).
func (c *checker) trafficRequest(r *rawTraffic) RequestMode {
	if r.Request == nil {
		return RequestMulticast
	}
	m, err := parseRequest(*r.Request)
	if err != nil {
		c.val("traffic.request", err.Error(), requestHint)
		return RequestMulticast
	}
	return m
}

// armRequest reads an arm's request: (default: traffic.request).
func (c *checker) armRequest(p string, v *string, def RequestMode) RequestMode {
	if def == "" {
		def = RequestMulticast
	}
	if v == nil {
		return def
	}
	m, err := parseRequest(*v)
	if err != nil {
		c.val(p+".request", err.Error(), requestHint)
		return def
	}
	return m
}

// hostTraffic reads the host options about traffic: a responder's unicast
// address and a capture's mirror encapsulation.
func (c *checker) hostTraffic(p string, rh *rawHost, h *Host) {
	if rh.Address != nil {
		a, err := netip.ParseAddr(*rh.Address)
		switch {
		case !h.Has(RoleResponder):
			c.key(p+".address", fmt.Sprintf("address: is where unicast requests go, and host %s is not the responder", h.Name), "put address: on the responder host, or delete it")
		case err != nil || !a.Unmap().Is4():
			c.val(p+".address", fmt.Sprintf("address %q is not an IPv4 address", *rh.Address), "write one of the responder iface's IPv4 addresses, e.g. 10.0.1.20")
		default:
			if err := probe.CheckUnicast(netip.AddrPortFrom(a, 1)); err != nil {
				c.val(p+".address", "address: "+err.Error(), "write one of the responder iface's IPv4 addresses, e.g. 10.0.1.20")
			} else {
				h.Address = a.Unmap()
			}
		}
	}
	if rh.CPU != nil {
		switch {
		case !h.Has(RoleSender) && !h.Has(RoleCapture):
			c.key(p+".cpu", fmt.Sprintf("cpu: pins a sender's or a capture's thread, and host %s has neither role", h.Name), "set the responder's CPU per arm with responder: {cpu: N}, or delete the line")
		case *rh.CPU < 0:
			c.val(p+".cpu", fmt.Sprintf("cpu: %d is not a CPU number", *rh.CPU), "write the CPU the sender's or capture's thread runs on, e.g. cpu: 2 (an isolated one)")
		default:
			h.CPU = rh.CPU
		}
	}
	if rh.Mirror != nil {
		switch {
		case !h.Has(RoleCapture):
			c.key(p+".mirror", fmt.Sprintf("mirror: says how the capture port receives its copies, and host %s does not capture", h.Name), "put mirror: on the capture host, or delete it")
		case *rh.Mirror != MirrorVXLAN:
			c.val(p+".mirror", fmt.Sprintf("mirror: %q is not a mirror encapsulation", *rh.Mirror), "use vxlan for VXLAN-encapsulated copies (AWS VPC Traffic Mirroring, UDP 4789), or delete the line for a SPAN/tap port")
		default:
			h.Mirror = MirrorVXLAN
		}
	}
}

// requests checks the traffic fields against the arms' request modes: a
// group where an arm sends multicast, a port where one sends unicast, and
// neither where no arm uses it.
func (c *checker) requests(r *rawScenario, s *Scenario) {
	if r.Traffic == nil {
		return
	}
	t := r.Traffic
	var multi, uni bool
	for _, a := range s.Arms {
		multi = multi || a.Request != RequestUnicast
		uni = uni || a.Request == RequestUnicast
	}
	if len(s.Arms) == 0 {
		multi, uni = s.Traffic.Request != RequestUnicast, s.Traffic.Request == RequestUnicast
	}
	if t.Port != nil {
		switch {
		case *t.Port < 1 || *t.Port > 65535:
			c.val("traffic.port", fmt.Sprintf("port %d is out of range", *t.Port), "use a UDP port 1..65535 the responder may bind")
		case !uni:
			c.val("traffic.port", "port: is the UDP port of unicast requests, and every arm sends multicast requests (to group:'s port)", "delete port:, or send unicast (request: unicast)")
		default:
			s.Traffic.Port = uint16(*t.Port)
		}
	}
	if uni && t.Port == nil {
		if s.Traffic.Group.IsValid() {
			s.Traffic.Port = s.Traffic.Group.Port()
		} else if t.Group == nil {
			c.key("traffic", "unicast requests need a port: (traffic has neither port: nor group:)", "add port: 9000 (the UDP port the responder binds on its address)")
		}
	}
	if multi && t.Group == nil {
		c.key("traffic", "traffic has no group:", "add group: \"239.1.1.1:5000\" (IPv4 multicast address:port), or request: unicast with port: to send to the responder's own address (e.g. on AWS, where a VPC carries no multicast)")
	}
	if !multi && t.Group != nil {
		c.val("traffic.group", "group: is where multicast requests go, and every arm sends unicast requests", "delete group: (unicast requests go to the responder's address on its iface, port traffic.port)")
	}
	if !uni {
		for _, h := range s.Hosts {
			if h.Address.IsValid() {
				c.val("hosts."+h.Name+".address", "address: is where unicast requests go, and every arm sends multicast requests", "delete address:, or send unicast (traffic.request: unicast)")
			}
		}
	}
}

// Unicast reports whether any arm sends unicast requests.
func (s *Scenario) Unicast() bool {
	return slices.ContainsFunc(s.Arms, func(a Arm) bool { return a.Request == RequestUnicast })
}

// RequestTo is where arm a's requests go: the group, or the responder's
// address (to, resolved by Validate or UnicastAddr) and traffic.port.
func (s *Scenario) RequestTo(a Arm, to netip.Addr) netip.AddrPort {
	if a.Request == RequestUnicast {
		return netip.AddrPortFrom(to, s.Traffic.Port)
	}
	return s.Traffic.Group
}

// RequestsText describes arm a's requests as every caption does
// ("multicast 239.1.1.1:5000", "unicast to 10.0.1.20:9000"); to may be
// invalid (not resolved yet).
func (s *Scenario) RequestsText(a Arm, to netip.Addr) string {
	if a.Request != RequestUnicast {
		return "multicast " + s.Traffic.Group.String()
	}
	if to.IsValid() {
		return "unicast to " + netip.AddrPortFrom(to, s.Traffic.Port).String()
	}
	iface := "its iface"
	if h := s.HostWith(RoleResponder); h != nil && h.Iface != "" {
		iface = h.Iface
	}
	return fmt.Sprintf("unicast to the responder's address on %s, port %d", iface, s.Traffic.Port)
}

// UnicastError is why unicast requests have no destination on a host:
// its interface has no IPv4 address, several (and no address: option
// chose one), or not the one the option names.
type UnicastError struct {
	Host, Iface string
	Addrs       []netip.Addr // the interface's IPv4 addresses
	Want        netip.Addr   // the host's address: option, if any
}

func (e *UnicastError) Error() string {
	switch {
	case e.Want.IsValid():
		return fmt.Sprintf("address %s is not on %s of host %s (its IPv4 addresses: %s)", e.Want, e.Iface, e.Host, facts.AddrList(e.Addrs))
	case len(e.Addrs) == 0:
		return fmt.Sprintf("unicast requests go to the responder's address on %s, and %s on host %s has no IPv4 address", e.Iface, e.Iface, e.Host)
	}
	return fmt.Sprintf("unicast requests go to the responder's address on %s, and %s on host %s has several (%s): rig does not guess", e.Iface, e.Iface, e.Host, facts.AddrList(e.Addrs))
}

// Fix says what to do about it.
func (e *UnicastError) Fix() string {
	switch {
	case e.Want.IsValid() && len(e.Addrs) > 0:
		return fmt.Sprintf("write one of %s in address:, or delete it", facts.AddrList(e.Addrs))
	case len(e.Addrs) == 0:
		return fmt.Sprintf("measure on an interface with an address (hosts.%s.iface), give %s one (ip addr add ADDR/LEN dev %s), or send multicast", e.Host, e.Iface, e.Iface)
	}
	return fmt.Sprintf("choose one: add address: %s to hosts.%s", e.Addrs[0], e.Host)
}

// UnicastAddr resolves where unicast requests go on the responder host:
// want when it is one of iface's IPv4 addresses, else iface's only one.
// A *UnicastError says why there is none; an error wrapping
// os.ErrNotExist or errors.ErrUnsupported means the facts cannot say.
func UnicastAddr(f *facts.Facts, host, iface string, want netip.Addr) (netip.Addr, error) {
	as, err := f.AddrsOf(iface)
	if err != nil {
		return netip.Addr{}, err
	}
	if want.IsValid() {
		if slices.Contains(as, want) {
			return want, nil
		}
		return netip.Addr{}, &UnicastError{Host: host, Iface: iface, Addrs: as, Want: want}
	}
	if len(as) != 1 {
		return netip.Addr{}, &UnicastError{Host: host, Iface: iface, Addrs: as}
	}
	return as[0], nil
}

// unicast resolves the unicast destination from the responder's facts
// (Scenario.RequestAddr), or says in the file why there is none. A host
// whose addresses cannot be read here (a fake host root, an older agent)
// is left to the runner, which asks its agent.
func (v *validator) unicast(rsp *Host, hf *hostFacts) error {
	if !v.s.Unicast() || v.s.Emulate != "" {
		return nil
	}
	if rsp.Iface == "" {
		v.c.key("hosts."+rsp.Name, fmt.Sprintf("unicast requests go to the responder's address on its iface, and host %s has no iface:", rsp.Name), "add iface: with the interface that receives the requests")
		return nil
	}
	if !slices.Contains(hf.ifaces, rsp.Iface) {
		return nil // reported already
	}
	a, err := UnicastAddr(hf.f, rsp.Name, rsp.Iface, rsp.Address)
	var ue *UnicastError
	switch {
	case err == nil:
		v.s.RequestAddr = a
	case errors.As(err, &ue):
		p := "hosts." + rsp.Name + ".address"
		if !rsp.Address.IsValid() {
			p = v.requestField()
		}
		v.c.val(p, ue.Error(), ue.Fix())
	case errors.Is(err, os.ErrNotExist), errors.Is(err, errors.ErrUnsupported):
	default:
		return &HostError{rsp.Name, err}
	}
	return nil
}

// requestField is where the file asks for unicast: traffic.request, else
// the first arm that does.
func (v *validator) requestField() string {
	if v.s.pos.has("traffic.request") && v.s.Traffic.Request == RequestUnicast {
		return "traffic.request"
	}
	for i, a := range v.s.Arms {
		if p := fmt.Sprintf("arms[%d].request", i); a.Request == RequestUnicast && v.s.pos.has(p) {
			return p
		}
	}
	return "traffic"
}

// requestsSummary is the dry run's description of where requests go, and
// whether the arms differ (each arm's line then says).
func (s *Scenario) requestsSummary() (string, bool) {
	var modes []RequestMode
	for _, a := range s.Arms {
		if !slices.Contains(modes, a.Request) {
			modes = append(modes, a.Request)
		}
	}
	if len(modes) > 1 {
		return fmt.Sprintf("per arm: %s or %s", s.RequestsText(Arm{Request: RequestMulticast}, s.RequestAddr), s.requestsUnicast()), true
	}
	if len(modes) == 1 && modes[0] == RequestUnicast {
		return s.requestsUnicast(), false
	}
	return s.RequestsText(Arm{Request: RequestMulticast}, s.RequestAddr), false
}

func (s *Scenario) requestsUnicast() string {
	t := s.RequestsText(Arm{Request: RequestUnicast}, s.RequestAddr)
	switch {
	case s.Emulate != "":
		t += " (the emulated responder's veth address, known when the lab is built)"
	case !s.RequestAddr.IsValid():
		t += " (not checked here: resolved from the responder's agent when the run starts)"
	}
	return t
}
