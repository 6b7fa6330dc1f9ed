package netlabtest

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Counters of a lab's namespaces, read through one of its processes, for
// tests that wait on traffic instead of sleeping.

// UDPSent is how many UDP datagrams the network namespace of process pid
// has sent (Udp OutDatagrams of /proc/PID/net/snmp). In a namespace of a
// test's own lab those are its probe's: a sender's requests, a responder's
// replies. Tests wait on it for a round to be under way.
func UDPSent(pid int) (int, error) { return UDPStat(pid, "OutDatagrams") }

// UDPStat is the Udp counter named stat (InDatagrams, NoPorts, …) of the
// network namespace of process pid (/proc/PID/net/snmp).
func UDPStat(pid int, stat string) (int, error) {
	p := fmt.Sprintf("/proc/%d/net/snmp", pid)
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	var head []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || f[0] != "Udp:" {
			continue
		}
		if head == nil {
			head = f
			continue
		}
		if i := slices.Index(head, stat); i > 0 && i < len(f) {
			return strconv.Atoi(f[i])
		}
	}
	return 0, fmt.Errorf("%s: no Udp %s", p, stat)
}

// RxPackets is how many packets interface iface has received in the network
// namespace of process pid (/proc/PID/net/dev): on a capture port, the
// mirror's copies so far.
func RxPackets(pid int, iface string) (int, error) {
	p := fmt.Sprintf("/proc/%d/net/dev", pid)
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		name, stats, ok := strings.Cut(l, ":")
		if f := strings.Fields(stats); ok && strings.TrimSpace(name) == iface && len(f) > 1 {
			return strconv.Atoi(f[1]) // bytes, packets, …
		}
	}
	return 0, fmt.Errorf("%s: no interface %s", p, iface)
}
