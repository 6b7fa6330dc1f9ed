package samples

import "net/netip"

// Request modes of a round (Header.Request).
const (
	RequestMulticast = "multicast" // to an IPv4 group the responder joined
	RequestUnicast   = "unicast"   // to the responder's own address on its interface
)

// Requests says where the round's requests went, as every table caption
// prints it: "multicast 239.1.1.1:9000" or "unicast to 10.0.0.2:9000"; ""
// when the header does not say.
func (h *Header) Requests() string {
	switch {
	case h.Request == RequestUnicast:
		return "unicast to " + h.To
	case h.Group != "":
		return "multicast " + h.Group
	}
	return ""
}

// SetRequests records where the requests went: to the group (multicast)
// or, when to is valid, to that address (unicast).
func (h *Header) SetRequests(group, to netip.AddrPort) {
	switch {
	case to.IsValid():
		h.Request, h.To, h.Group = RequestUnicast, to.String(), ""
	case group.IsValid():
		h.Request, h.Group, h.To = RequestMulticast, group.String(), ""
	}
}
