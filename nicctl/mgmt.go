package nicctl

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/rig-project/rig/internal/hostfs"
)

// DefaultRoute is one default route: from /proc/net/route (the main table
// only) or /proc/net/ipv6_route (every table: the kernel has no table
// column there).
type DefaultRoute struct {
	Iface  string `json:"iface"`
	Metric uint32 `json:"metric"`
	IPv6   bool   `json:"ipv6,omitempty"`
}

// DefaultRoutes reads the default routes of the caller's network
// namespace. /proc/net/ipv6_route is optional (a kernel without IPv6).
func DefaultRoutes(fs hostfs.FS) ([]DefaultRoute, error) {
	b, err := fs.ReadFile("/proc/net/route")
	if err != nil {
		return nil, err
	}
	var out []DefaultRoute
	for _, l := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(l)
		// Iface Destination Gateway Flags RefCnt Use Metric Mask ...
		if len(f) >= 8 && f[1] == "00000000" && f[7] == "00000000" && f[0] != "*" {
			m, err := strconv.ParseUint(f[6], 10, 32)
			if err != nil {
				return nil, fmt.Errorf("/proc/net/route: metric %q of %s: %w", f[6], f[0], err)
			}
			out = append(out, DefaultRoute{Iface: f[0], Metric: uint32(m)})
		}
	}
	b, err = fs.ReadFile("/proc/net/ipv6_route")
	if err != nil {
		return out, nil
	}
	for _, l := range strings.Split(string(b), "\n") {
		// dest plen src plen nexthop metric refcnt use flags dev (hex)
		f := strings.Fields(l)
		if len(f) == 10 && f[0] == strings.Repeat("0", 32) && f[1] == "00" && f[9] != "lo" {
			m, err := strconv.ParseUint(f[5], 16, 32)
			if err != nil {
				return nil, fmt.Errorf("/proc/net/ipv6_route: metric %q of %s: %w", f[5], f[9], err)
			}
			out = append(out, DefaultRoute{Iface: f[9], Metric: uint32(m), IPv6: true})
		}
	}
	return out, nil
}

// Mgmt is what rig treats as the host's management interfaces — the ones
// it does not change without allow-mgmt — and why.
type Mgmt struct {
	// Why says, for each management interface, what makes it one.
	Why map[string]string `json:"why"`
	// Default lists every interface with a default route (management or
	// not): information only.
	Default []DefaultRoute `json:"default_routes"`
}

// Ifaces lists the management interfaces, sorted.
func (m Mgmt) Ifaces() []string {
	out := make([]string, 0, len(m.Why))
	for i := range m.Why {
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

// HasDefault reports whether iface has a default route.
func (m Mgmt) HasDefault(iface string) bool {
	return slices.ContainsFunc(m.Default, func(r DefaultRoute) bool { return r.Iface == iface })
}

// ReadMgmt finds the management interfaces of the caller's network
// namespace:
//   - per address family, the interface(s) of the default route with the
//     lowest metric — the one the host's own traffic leaves by. Other
//     default routes are fallbacks (cloud-init on EC2 gives a second ENI
//     one with metric 200, amazon-ec2-net-utils one with metric 513);
//   - on the live host, the interfaces that carry the ssh connection rig
//     runs under (its address, and the way back to the peer);
//   - every device below one of those (the NIC under a bridge, bond or
//     VLAN that carries the route: /sys/class/net/IF/lower_*), and every
//     device stacked on one of these (a VLAN or macvlan above it).
func ReadMgmt(fs hostfs.FS) (Mgmt, error) {
	rs, err := DefaultRoutes(fs)
	if err != nil {
		return Mgmt{}, err
	}
	m := Mgmt{Why: map[string]string{}, Default: rs}
	for _, v6 := range []bool{false, true} {
		low := ^uint32(0)
		for _, r := range rs {
			if r.IPv6 == v6 {
				low = min(low, r.Metric)
			}
		}
		for _, r := range rs {
			if r.IPv6 == v6 && r.Metric == low && m.Why[r.Iface] == "" {
				fam := "IPv4"
				if v6 {
					fam = "IPv6"
				}
				m.Why[r.Iface] = fmt.Sprintf("carries the default route (%s, metric %d)", fam, r.Metric)
			}
		}
	}
	if fs.IsReal() {
		if peer, local, ok := sshConn(fs, os.Getenv); ok {
			for _, i := range connIfaces(peer, local) {
				if m.Why[i] == "" {
					m.Why[i] = "carries the ssh connection rig runs under (from " + peer.String() + ")"
				}
			}
		}
	}
	m.addStacked(fs)
	return m, nil
}

// addStacked adds the devices below each management interface, then
// those above any of these.
func (m Mgmt) addStacked(fs hostfs.FS) {
	ents, err := fs.ReadDir("/sys/class/net")
	if err != nil {
		return
	}
	lower := map[string][]string{}
	for _, e := range ents {
		sub, _ := fs.ReadDir("/sys/class/net/" + e.Name())
		for _, s := range sub {
			if l, ok := strings.CutPrefix(s.Name(), "lower_"); ok {
				lower[e.Name()] = append(lower[e.Name()], l)
			}
		}
	}
	walk := func(start string, next func(string) []string, how string) {
		todo := []string{start}
		for len(todo) > 0 {
			cur := todo[0]
			todo = todo[1:]
			for _, n := range next(cur) {
				if m.Why[n] == "" {
					m.Why[n] = fmt.Sprintf("is %s %s, which %s", how, cur, m.Why[cur])
					todo = append(todo, n)
				}
			}
		}
	}
	upper := func(i string) (out []string) {
		for u, ls := range lower {
			if slices.Contains(ls, i) {
				out = append(out, u)
			}
		}
		slices.Sort(out)
		return out
	}
	for _, i := range m.Ifaces() {
		walk(i, func(i string) []string { return lower[i] }, "below")
	}
	// A device above any of them passes its changes down (a VLAN's or a
	// macvlan's SIOCSHWTSTAMP goes to the lower device).
	for _, i := range m.Ifaces() {
		walk(i, upper, "stacked on")
	}
}

// sshConn is the ssh connection this process runs under, from
// $SSH_CONNECTION ("client-address client-port server-address
// server-port"), or else from the nearest of its ancestors that has it in
// /proc/PID/environ: sudo starts its command without it.
func sshConn(fs hostfs.FS, getenv func(string) string) (peer, local netip.Addr, ok bool) {
	parse := func(v string) bool {
		f := strings.Fields(v)
		if len(f) != 4 {
			return false
		}
		var e1, e2 error
		peer, e1 = netip.ParseAddr(f[0])
		local, e2 = netip.ParseAddr(f[2])
		return e1 == nil && e2 == nil
	}
	if parse(getenv("SSH_CONNECTION")) {
		return peer, local, true
	}
	pid := "self"
	for range 16 {
		st, err := fs.ReadString("/proc/" + pid + "/status")
		if err != nil {
			return peer, local, false
		}
		_, after, _ := strings.Cut(st, "\nPPid:")
		pid = strings.TrimSpace(strings.SplitN(after, "\n", 2)[0])
		if pid == "" || pid == "0" {
			return peer, local, false
		}
		env, _ := fs.ReadFile("/proc/" + pid + "/environ")
		for _, kv := range strings.Split(string(env), "\x00") {
			if v, found := strings.CutPrefix(kv, "SSH_CONNECTION="); found && parse(v) {
				return peer, local, true
			}
		}
	}
	return peer, local, false
}

// connIfaces names the interfaces of a connection between local (an
// address of this host) and peer: the one that holds local, and the one
// the kernel sends to peer from local by (`ip route get PEER from
// LOCAL`; policy routing may pick another). None when local is not an
// address of this network namespace: the connection is elsewhere.
func connIfaces(peer, local netip.Addr) []string {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil
	}
	var out []string
	for _, ifi := range ifs {
		as, _ := ifi.Addrs()
		for _, a := range as {
			if n, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap() == local.Unmap() {
					out = append(out, ifi.Name)
				}
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	rs, err := netlink.RouteGetWithOptions(net.IP(peer.Unmap().AsSlice()), &netlink.RouteGetOptions{SrcAddr: net.IP(local.Unmap().AsSlice())})
	if err == nil && len(rs) > 0 {
		if ifi, err := net.InterfaceByIndex(rs[0].LinkIndex); err == nil && !slices.Contains(out, ifi.Name) {
			out = append(out, ifi.Name)
		}
	}
	return out
}
