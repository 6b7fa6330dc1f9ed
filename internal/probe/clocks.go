package probe

import (
	"strings"

	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
)

// Clocks describes the stamp columns rx_{hw,sw,user} and tx_{hw,sw,user}
// (rx and tx are prefixes such as "req_rx" and "rep_tx") taken on a socket
// with the given grant. A direction's hardware column is described only
// when its stamps were requested and arrived (hw); where they were
// requested and did not, its software column says so in its note. A
// software TX column holding the qdisc's stamps (tstamp.Granted.TxSched)
// is marked Point "sched" and says why in its note.
func Clocks(g tstamp.Granted, hw *tstamp.HWProof, iface, rx, tx string) map[string]samples.Clock {
	m := map[string]samples.Clock{}
	for _, d := range []struct {
		prefix string
		hw     bool
		note   string
	}{{rx, hw.RX(), hw.RxNote()}, {tx, hw.TX(), hw.TxNote()}} {
		if g.Software() {
			c := samples.Clock{Source: "sw", Clock: "CLOCK_REALTIME", Iface: iface, Note: d.note}
			if d.prefix == tx && g.TxSched() {
				c.Point = "sched"
				c.Note = strings.TrimPrefix(c.Note+"; "+schedNote(iface), "; ")
			}
			m[d.prefix+"_sw"] = c
		}
		m[d.prefix+"_user"] = samples.Clock{Source: "user", Clock: "CLOCK_REALTIME"}
		if d.hw {
			m[d.prefix+"_hw"] = samples.Clock{Source: "hw", Clock: "phc", Iface: iface, PHCIndex: g.NIC.Caps.PHCIndex}
		}
	}
	return m
}

// schedNote says why a software TX column holds the qdisc's stamps.
func schedNote(iface string) string {
	return "software TX stamps taken before the qdisc (SCM_TSTAMP_SCHED): " + iface + "'s driver gives none at the hand-off to the NIC"
}
