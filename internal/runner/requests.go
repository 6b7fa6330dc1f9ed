package runner

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/scenario"
)

// unicastTo is where the unicast arms' requests go: the responder host's
// address on the interface it answers on, from its agent's facts (for an
// emulated run, the lab's veth). Invalid when no arm sends unicast.
func (r *run) unicastTo(facts map[string]*scenario.Facts) (netip.Addr, error) {
	s := r.s
	if !s.Unicast() {
		return netip.Addr{}, nil
	}
	rsp := r.hs.responders[0]
	name := rsp.Agent.Name
	var want netip.Addr
	if h := s.HostWith(scenario.RoleResponder); h != nil {
		want = h.Address
	}
	a, err := scenario.UnicastAddr(facts[name], name, rsp.Iface, want)
	var ue *scenario.UnicastError
	if errors.As(err, &ue) {
		return a, fmt.Errorf("%v; nothing was changed (fix: %s)", ue, ue.Fix())
	}
	if err != nil {
		return a, fmt.Errorf("host %s: where unicast requests go: %w", name, err)
	}
	return a, nil
}

// setRequests records, in the manifest, where each arm's requests go and
// the traffic's request mode.
func (r *run) setRequests(m *rundir.Manifest) {
	s, to := r.s, r.to
	for i := range m.Arms {
		if a := armByName(s, m.Arms[i].Name); a != nil {
			m.Arms[i].Requests = s.RequestsText(*a, to)
		}
	}
	e, ok := m.Effective.(effectiveScenario)
	if !ok {
		return
	}
	t := e.Traffic
	t["request"] = string(s.Traffic.Request)
	if s.Unicast() {
		t["port"] = s.Traffic.Port
		t["to"] = netip.AddrPortFrom(to, s.Traffic.Port).String()
	}
	if !s.Traffic.Group.IsValid() {
		delete(t, "group")
	}
}

func armByName(s *scenario.Scenario, name string) *scenario.Arm {
	for i := range s.Arms {
		if s.Arms[i].Name == name {
			return &s.Arms[i]
		}
	}
	return nil
}
