package tstamp

import (
	"fmt"
	"strings"
)

// Need is what a socket needs of its NIC's timestamping config for rig's
// probes — plain IPv4 UDP datagrams, not PTP messages — to carry hardware
// stamps.
type Need struct {
	RX bool `json:"rx"` // every received packet is stamped: rx_filter ALL
	TX bool `json:"tx"` // a sent packet that asks is stamped: tx_type ON
}

// The needs of rig's roles.
var (
	// NeedProbe is the sender's and the responder's: their metrics
	// (rtt, turnaround) subtract an RX stamp from a TX stamp of one PHC,
	// so one direction alone measures nothing.
	NeedProbe = Need{RX: true, TX: true}
	// NeedCapture is a mirror-port capture's: it only receives.
	NeedCapture = Need{RX: true}
)

func (n Need) String() string {
	switch {
	case n.RX && n.TX:
		return "RX ALL + TX ON"
	case n.RX:
		return "RX ALL"
	case n.TX:
		return "TX ON"
	}
	return "nothing"
}

// stampsAll reports whether a device rx_filter stamps every received
// packet. PTP and NTP filters stamp only PTP event messages or NTP packets:
// rig's probes are neither, so those filters are no grant for them.
func (f RxFilter) stampsAll() bool { return f == FilterAll }

// stampsTX reports whether a device tx_type stamps a sent packet that asks
// for it. The one-step modes insert time into PTP Sync (and Pdelay_Resp)
// messages and stamp every other packet as ON does.
func (t TxType) stampsTX() bool { return t == TxOn || t == TxOneStepSync || t == TxOneStepP2P }

// Covers reports whether cfg, read from the device, already stamps what n
// needs.
func (n Need) Covers(cfg HWTstampConfig) bool {
	return (!n.RX || cfg.RxFilter.stampsAll()) && (!n.TX || cfg.TxType.stampsTX())
}

// Granted reports whether got, the config a driver wrote back for the
// request req, stamps what n needs. FILTER_SOME answering a request for
// ALL means "at least what you asked" and counts.
func (n Need) Granted(req, got HWTstampConfig) bool {
	if n.RX && !got.RxFilter.stampsAll() && !(got.RxFilter == FilterSome && req.RxFilter == FilterAll) {
		return false
	}
	return !n.TX || got.TxType.stampsTX()
}

// lacks says which of n the capabilities cannot meet, "" when none.
func (n Need) lacks(c Caps) string {
	var miss []string
	if n.RX && !c.RxAll() {
		why := "no hardware RX stamps"
		if c.HardwareRX() {
			why = "its RX filters (" + c.RxFiltersString() + ") stamp PTP/NTP messages only, and rig's UDP probes are neither"
		}
		miss = append(miss, "RX: "+why)
	}
	if n.TX && !c.HardwareTX() {
		miss = append(miss, "TX: no hardware TX stamps (tx_types "+c.TxTypesString()+")")
	}
	return strings.Join(miss, "; ")
}

// Policy is how far rig may go to get hardware stamps on one interface.
type Policy struct {
	Mode Mode
	Need Need
	// ReadOnly never plans a change: the sockets' view, for a NIC that was
	// prepared before the socket opened (or must be left alone).
	ReadOnly bool
	// AllowMgmt lets rig change the interface that carries the default
	// route; TakeOver lets it change a config a daemon owns (NICState.Owner).
	AllowMgmt, TakeOver bool
}

// Action is what Decide concluded.
type Action uint8

const (
	// ActNone: software stamps (or none) were asked for; the NIC was not
	// looked at.
	ActNone Action = iota
	// ActKeep: the current config already stamps what is needed. Nothing
	// is written.
	ActKeep
	// ActWrite: write Decision.Target (through the caller's journal), then
	// check what the driver granted with Need.Granted.
	ActWrite
	// ActUnknown: the driver cannot report its config, so rig cannot put
	// it back and leaves it alone; hardware stamps are requested and the
	// first packets show whether they arrive (RxProof, TxProof).
	ActUnknown
	// ActSoftware: mode auto, and hardware stamps are impossible or not
	// allowed here; Why says which. Nothing is written.
	ActSoftware
	// ActRefuse: mode hardware, and hardware stamps are impossible or not
	// allowed here; Why says which, Fix what to do. Nothing is written.
	ActRefuse
)

var actionNames = [...]string{"none", "keep", "write", "unknown", "software", "refuse"}

func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("Action(%d)", a)
}

// MarshalText implements encoding.TextMarshaler.
func (a Action) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (a *Action) UnmarshalText(b []byte) error {
	for i, n := range actionNames {
		if n == string(b) {
			*a = Action(i)
			return nil
		}
	}
	return fmt.Errorf("tstamp: unknown action %q", b)
}

// Decision is what Decide concluded for one interface and role.
type Decision struct {
	Action Action `json:"action"`
	// Target is the config to write (ActWrite).
	Target HWTstampConfig `json:"target"`
	// RX and TX say whether hardware stamps are expected in that direction
	// once the action is done. Expected, not proven: the first packets of
	// a round prove them (RxProof, TxProof).
	RX bool `json:"rx"`
	TX bool `json:"tx"`
	// Why explains the decision in one line; Fix is what a user can do
	// about a refusal (or about an unknown config).
	Why string `json:"why"`
	Fix string `json:"fix,omitempty"`
}

// Hardware reports whether the decision expects hardware stamps at all.
func (d Decision) Hardware() bool { return d.RX || d.TX }

func (d Decision) String() string {
	s := d.Action.String() + ": " + d.Why
	if d.Fix != "" {
		s += " (fix: " + d.Fix + ")"
	}
	return s
}

// Decide is the one rule for a NIC's timestamping config, used by rig run
// (once per run and interface), by the hand-run probes, by `rig nicctl`
// and by validation (--dry-run). It never writes anything itself.
//
//   - Software and Off modes: ActNone.
//   - A bond (its config carries FlagBondedPHC): ActRefuse in Hardware
//     mode, ActSoftware in Auto. Its hardware stamps are the active
//     slave's, on that slave's PHC, which changes on failover: a metric
//     could subtract stamps of two clocks. The slave itself can be used.
//   - A NIC whose capabilities cannot meet p.Need (no hardware stamps, PTP
//     filters only, no TX stamps): ActRefuse in Hardware mode, ActSoftware
//     in Auto. Nothing is written, so a NIC that resets its link on every
//     change (ENA) is not reset for stamps no metric could use.
//   - A daemon owns the config (ptp4l, chronyd, or an owner rig could not
//     look for) and p.TakeOver is not given: no hardware TX stamps, whatever
//     the config — NICs such as igb, ixgbe and i40e hold one TX stamp at a
//     time, and a probe's would make the daemon's time out. Hardware mode
//     is refused; Auto decides for RX alone (TX stays software).
//   - A config the driver cannot report: ActUnknown (never written: it
//     could not be put back).
//   - A config that already covers the need: ActKeep.
//   - Otherwise a write is needed, unless p.ReadOnly, or a daemon owns the
//     config (ptp4l, chronyd) without p.TakeOver, or the interface carries
//     the default route without p.AllowMgmt: then ActRefuse / ActSoftware
//     with the reason. The write sets rx_filter ALL and, where TX is
//     needed and not already stamped, tx_type ON; it keeps the rest of the
//     config (a capture never turns TX stamping on or off).
func Decide(st NICState, p Policy) Decision {
	if p.Mode == Software || p.Mode == Off {
		return Decision{Action: ActNone, Why: "timestamps " + p.Mode.String() + ": the NIC's config is not used"}
	}
	name := st.Ifname
	no := func(why, fix string) Decision {
		if p.Mode == Hardware {
			return Decision{Action: ActRefuse, Why: why, Fix: fix}
		}
		return Decision{Action: ActSoftware, Why: why + ": software stamps"}
	}
	if st.ConfigKnown && st.Config.Flags&FlagBondedPHC != 0 {
		return no(name+" is a bond (its config answers with HWTSTAMP_FLAG_BONDED_PHC_INDEX): its hardware stamps come from the active slave's PHC, which changes on failover, so a metric could subtract stamps of two clocks",
			"measure on the active slave itself (`ip -d link show "+name+"` and /proc/net/bonding/"+name+" name it), or use software stamps on the bond")
	}
	if miss := p.Need.lacks(st.Caps); miss != "" {
		return no(fmt.Sprintf("%s cannot give rig's probes %s in hardware (%s; capabilities %s)", name, p.Need, miss, st.Caps),
			"use timestamps: auto or software, or a NIC that stamps every packet (`rig nicctl probe "+name+"` shows what it grants)")
	}
	if p.Need.TX && st.Owner != "" && !p.TakeOver {
		why := fmt.Sprintf("%s owns %s's timestamping config: rig does not change it, and takes no TX stamps next to it (NICs such as igb, ixgbe and i40e hold one TX stamp at a time, and the owner's would be skipped)", st.Owner, name)
		if p.Mode == Hardware {
			return Decision{Action: ActRefuse, Why: why, Fix: ownerFix(st.Owner)}
		}
		rx := p
		rx.Need.TX = false
		d := Decide(st, rx)
		if d.RX {
			d.Why += "; TX: software stamps: " + why
		}
		return d
	}
	if !st.ConfigKnown {
		return Decision{Action: ActUnknown, RX: p.Need.RX, TX: p.Need.TX,
			Why: fmt.Sprintf("%s cannot report its timestamping config (%s): rig leaves it as it is, and the first packets show whether hardware stamps arrive", name, st.ConfigErr),
			Fix: "enable it yourself first: hwstamp_ctl -i " + name + hwstampCtlArgs(p.Need)}
	}
	if p.Need.Covers(st.Config) {
		return Decision{Action: ActKeep, RX: p.Need.RX, TX: p.Need.TX,
			Why: fmt.Sprintf("%s already stamps %s (%s): no change", name, p.Need, st.Config)}
	}
	target := st.Config
	if p.Need.RX {
		target.RxFilter = FilterAll
	}
	if p.Need.TX && !target.TxType.stampsTX() {
		target.TxType = TxOn
	}
	change := fmt.Sprintf("%s is %s; rig's probes need %s", name, st.Config, target)
	switch {
	case p.ReadOnly:
		return no(change+", and rig is not to change it here",
			"let rig enable it (leave out --nic-timestamping leave), or `rig nicctl set "+name+" --hwtstamp "+p.Need.nicctlMode()+"` first")
	case st.Owner != "" && !p.TakeOver:
		return no(fmt.Sprintf("%s; %s owns that config, and rig does not change it", change, st.Owner), ownerFix(st.Owner))
	case st.Mgmt && !p.AllowMgmt:
		return no(change+"; it is the management interface (it carries the default route or the controller's connection), and rig does not change it",
			"measure on a second NIC, or allow it (host option allow-mgmt: true, flag --allow-mgmt)")
	}
	return Decision{Action: ActWrite, Target: target, RX: p.Need.RX, TX: p.Need.TX,
		Why: fmt.Sprintf("%s: %s → %s", name, st.Config, target)}
}

// nicctlMode is the `rig nicctl set --hwtstamp` mode that enables n: "rx"
// keeps tx_type, so an RX-only NIC (ENA) takes it.
func (n Need) nicctlMode() string {
	if n.TX {
		return "all"
	}
	return "rx"
}

func hwstampCtlArgs(n Need) string {
	s := ""
	if n.TX {
		s += " -t 1"
	}
	if n.RX {
		s += " -r 1"
	}
	return s
}

// OwnerUnknown begins NICState.Owner when rig could not look for the
// daemons that own a config (no view of the host's processes).
const OwnerUnknown = "unknown"

// ownerFix is what a user can do about an owned config; owner is a text
// such as "ptp4l (pid 812, -i ens1f0)".
func ownerFix(owner string) string {
	name := owner
	if i := strings.IndexByte(owner, ' '); i > 0 {
		name = owner[:i]
	}
	if name == OwnerUnknown {
		return "run rig where it sees the host's processes (Kubernetes: hostPID: true, or through the host agent), or let rig take the NIC over (host option take-over-ptp: true, flag --take-over-ptp)"
	}
	return "measure on another interface, stop " + name + " for the run, or let rig take the NIC over (host option take-over-ptp: true, flag --take-over-ptp)"
}
