package agent

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/power"
	"github.com/rig-project/rig/internal/scenario"
	"github.com/rig-project/rig/internal/tstamp"
)

// LocalFacts reads the facts of the agent's host (in its network
// namespace, for the interfaces).
func LocalFacts(fs hostfs.FS) (*Facts, error) {
	l := scenario.LocalFacts{FS: fs}
	f := &Facts{Siblings: map[int][]int{}, Timestamping: map[string]tstamp.NICState{}, IdleStates: map[int][]string{}}
	var err error
	if f.Online, err = l.OnlineCPUs(); err != nil {
		return nil, err
	}
	missing := func(what string, err error) error {
		if errors.Is(err, os.ErrNotExist) {
			f.Missing = append(f.Missing, what)
			return nil
		}
		return err
	}
	if f.Isolated, err = l.IsolatedCPUs(); missing("isolated", err) != nil {
		return nil, err
	}
	if f.NohzFull, err = l.NohzFullCPUs(); missing("nohz_full", err) != nil {
		return nil, err
	}
	for _, c := range f.Online {
		sib, err := l.ThreadSiblings(c)
		if err != nil {
			return nil, err
		}
		f.Siblings[c] = sib
		st, err := l.IdleStates(c)
		if err == nil {
			f.IdleStates[c] = st
		} else if !slices.Contains(f.Missing, "cpuidle") {
			if missing("cpuidle", err) != nil {
				return nil, err
			}
		}
	}
	if f.Ifaces, err = l.Interfaces(); err != nil {
		return nil, err
	}
	for _, i := range f.Ifaces {
		// Interfaces that cannot be asked (a fake root, one gone since
		// the listing) are left out: validation then says so.
		if st, err := l.Timestamping(i); err == nil {
			f.Timestamping[i] = st
		}
		if as, err := l.Addresses(i); err == nil {
			if f.Addrs == nil {
				f.Addrs = map[string][]netip.Addr{}
			}
			f.Addrs[i] = append([]netip.Addr{}, as...)
		}
	}
	if f.StressNG, err = l.HasStressNG(); err != nil {
		return nil, err
	}
	pf, err := l.Power()
	if err != nil {
		return nil, fmt.Errorf("power facts: %w", err)
	}
	f.Power = &pf
	// Never nil when known: nil tells the controller "unknown" (no route
	// table here, or an older agent).
	switch mg, err := l.MgmtInterfaces(); {
	case err == nil:
		f.MgmtIfaces = append([]string{}, mg...)
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	return f, nil
}

// HostFacts returns facts received from an agent as scenario.HostFacts.
func (f *Facts) HostFacts() scenario.HostFacts { return remoteFacts{f} }

type remoteFacts struct{ f *Facts }

var _ scenario.HostFacts = remoteFacts{}

func (r remoteFacts) lacks(what string) error {
	if slices.Contains(r.f.Missing, what) {
		return fmt.Errorf("%s: %w", what, os.ErrNotExist)
	}
	return nil
}

func (r remoteFacts) OnlineCPUs() ([]int, error) { return r.f.Online, nil }
func (r remoteFacts) ThreadSiblings(cpu int) ([]int, error) {
	if s, ok := r.f.Siblings[cpu]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("cpu%d: %w", cpu, os.ErrNotExist)
}
func (r remoteFacts) IsolatedCPUs() ([]int, error)  { return r.f.Isolated, r.lacks("isolated") }
func (r remoteFacts) NohzFullCPUs() ([]int, error)  { return r.f.NohzFull, r.lacks("nohz_full") }
func (r remoteFacts) Interfaces() ([]string, error) { return r.f.Ifaces, nil }
func (r remoteFacts) HasStressNG() (bool, error)    { return r.f.StressNG, nil }
func (r remoteFacts) Timestamping(iface string) (tstamp.NICState, error) {
	if !slices.Contains(r.f.Ifaces, iface) {
		return tstamp.NICState{}, fmt.Errorf("interface %s: %w", iface, os.ErrNotExist)
	}
	st, ok := r.f.Timestamping[iface]
	if !ok {
		return st, fmt.Errorf("timestamping of %s: the agent could not read it: %w", iface, errors.ErrUnsupported)
	}
	return st, nil
}
func (r remoteFacts) MgmtInterfaces() ([]string, error) {
	if r.f.MgmtIfaces == nil {
		return nil, fmt.Errorf("default routes: the agent does not report them: %w", os.ErrNotExist)
	}
	return r.f.MgmtIfaces, nil
}
func (r remoteFacts) Addresses(iface string) ([]netip.Addr, error) {
	switch {
	case !slices.Contains(r.f.Ifaces, iface):
		return nil, fmt.Errorf("interface %s: %w", iface, os.ErrNotExist)
	case r.f.Addrs == nil:
		return nil, fmt.Errorf("addresses: the agent does not report them (an older rig there): %w", os.ErrNotExist)
	}
	return r.f.Addrs[iface], nil
}
func (r remoteFacts) Power() (power.Facts, error) {
	if r.f.Power == nil {
		return power.Facts{}, fmt.Errorf("the agent does not report the frequency control (an older rig): %w", os.ErrNotExist)
	}
	return *r.f.Power, nil
}
func (r remoteFacts) IdleStates(cpu int) ([]string, error) {
	if err := r.lacks("cpuidle"); err != nil {
		return nil, err
	}
	if s, ok := r.f.IdleStates[cpu]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("cpu%d/cpuidle: %w", cpu, os.ErrNotExist)
}
