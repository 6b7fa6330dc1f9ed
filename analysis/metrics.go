package analysis

import (
	"slices"
	"strings"

	"github.com/rig-project/rig/internal/samples"
)

// Metric names, in table order. Headline is the metric of the latency-over-
// time plot and the first table.
const (
	Turnaround     = "turnaround"
	RTT            = "rtt"
	Network        = "network"
	KernelToUser   = "kernel_to_user"
	UserProcessing = "user_processing"
	UserToKernel   = "user_to_kernel"
	Lateness       = "lateness"
	RTTFromDue     = "rtt_from_due"
	Headline       = Turnaround
)

// MetricNames lists every metric in table order.
var MetricNames = []string{Turnaround, RTT, Network, KernelToUser, UserProcessing, UserToKernel, Lateness, RTTFromDue}

// MetricDoc says what each metric measures.
var MetricDoc = map[string]string{
	Turnaround:     "responder turnaround: reply − request at the responder (capture, else responder NIC, else software, else user)",
	RTT:            "round trip at the sender: reply received − request sent",
	Network:        "rtt − turnaround, only when both come from hardware clocks",
	KernelToUser:   "responder: kernel RX stamp → user space has the request",
	UserProcessing: "responder: user space has the request → just before sending the reply",
	UserToKernel:   "responder: sendmsg of the reply → kernel TX stamp",
	Lateness:       "sender pacing error: tx_user − due",
	RTTFromDue:     "reply received − scheduled send time (a late send is charged, no coordinated omission)",
}

// Source is one way to compute a metric from the stamps of one record:
// T[B]−T[A], minus T[D]−T[C] when Sub is set (network). Every stamp involved
// must be non-zero or the record is "missing" for the metric.
type Source struct {
	Label   string // "capture sw", "responder hw", "sender sw→user", "sender sw (sched)"…
	Formula string // "cap_rep_sw − cap_req_sw"
	A, B    samples.Stamp
	Sub     bool
	C, D    samples.Stamp
	// Clock is the clock both (all) stamps share: "CLOCK_REALTIME" or
	// "phc eth1/phc0".
	Clock string
	// Note is what the sample headers say about the clocks used, e.g. that
	// hardware stamps were requested and did not arrive ("" when nothing).
	Note string
	// Fallback is the part of Note that software clocks carry: the
	// programs note on a software column only that hardware stamps were
	// requested there and did not arrive.
	Fallback string
}

// What one record gives a source: a sample, or why not.
const (
	valSample   uint8 = iota
	valMissing        // a stamp the source needs was not taken
	valNegative       // a difference on one clock below 0: a forged or misfiled packet
	valOverflow       // a difference beyond int64 (samples.Sub): stamps no clock gives
)

// Value returns the metric value of r and what r gives (valSample …
// valOverflow). Each difference is of stamps on one clock, so it cannot be
// negative; network's difference of two of them may be.
func (s *Source) Value(r *samples.Record) (int64, uint8) {
	if s.Sub && (r.T[s.C] == 0 || r.T[s.D] == 0) {
		return 0, valMissing
	}
	v, got := span(r, s.A, s.B)
	if got != valSample || !s.Sub {
		return v, got
	}
	u, got := span(r, s.C, s.D)
	if got != valSample {
		return 0, got
	}
	if v, ok := samples.Sub(v, u); ok {
		return v, valSample
	}
	return 0, valOverflow
}

// span is T[b] − T[a] of r and what it gives.
func span(r *samples.Record, a, b samples.Stamp) (int64, uint8) {
	if r.T[a] == 0 || r.T[b] == 0 {
		return 0, valMissing
	}
	v, ok := samples.Sub(r.T[b], r.T[a])
	switch {
	case !ok:
		return 0, valOverflow
	case v < 0:
		return v, valNegative
	}
	return v, valSample
}

// userStamps are taken with clock_gettime(CLOCK_REALTIME) by the programs
// themselves (docs/measurement.md); a file that carries the column has them even when
// its header lists no clock for it.
var userStamps = map[samples.Stamp]bool{
	samples.Due: true, samples.TxUser: true, samples.ReqRxUser: true, samples.RepTxUser: true, samples.RxUser: true,
}

// clockOf returns the clock of stamp s in a round: the header's entry for the
// column, or for the user stamps (and due) CLOCK_REALTIME when the column is
// present. A stamp without either is not available in that round.
func clockOf(j *samples.Joined, s samples.Stamp) (samples.Clock, bool) {
	if ck, ok := j.Clocks[s.String()]; ok && ck.Source != "" {
		if ck.Clock == "" && ck.Source != "hw" {
			ck.Clock = "CLOCK_REALTIME"
		}
		return ck, true
	}
	if userStamps[s] && j.Present[s] {
		return samples.Clock{Source: "user", Clock: "CLOCK_REALTIME"}, true
	}
	return samples.Clock{}, false
}

// clockName is the time base of a clock: two stamps may be subtracted only
// when their clockNames are equal. A NIC clock is named by its interface and
// PHC index: two NICs' PHCs are different clocks.
func clockName(c samples.Clock) string {
	if c.Source == "hw" {
		return "phc " + c.SourceLabel()
	}
	if c.Clock == "" {
		return "CLOCK_REALTIME"
	}
	return c.Clock
}

// pair builds a source T[b]−T[a] when both stamps are available on one
// clock; sameSource additionally requires the same source kind (hw/sw/user).
func pair(j *samples.Joined, who string, a, b samples.Stamp, sameSource bool) (Source, bool) {
	ca, ok1 := clockOf(j, a)
	cb, ok2 := clockOf(j, b)
	if !ok1 || !ok2 || clockName(ca) != clockName(cb) {
		return Source{}, false
	}
	label := who + " " + ca.Source
	if ca.Source != cb.Source {
		if sameSource {
			return Source{}, false
		}
		label = who + " " + ca.Source + "→" + cb.Source
	}
	if p := ca.Point + cb.Point; p != "" {
		label += " (" + p + ")" // a software TX stamp not taken at the NIC hand-off
	}
	all := func(samples.Clock) bool { return true }
	sw := func(c samples.Clock) bool { return c.Source == "sw" }
	return Source{Label: label, Formula: b.String() + " − " + a.String(), A: a, B: b, Clock: clockName(ca),
		Note: joinNotes(ca, cb, all), Fallback: joinNotes(ca, cb, sw)}, true
}

// joinNotes joins the notes of the clocks that pass keep, each once.
func joinNotes(ca, cb samples.Clock, keep func(samples.Clock) bool) string {
	var notes []string
	for _, c := range []samples.Clock{ca, cb} {
		if c.Note != "" && keep(c) && !slices.Contains(notes, c.Note) {
			notes = append(notes, c.Note)
		}
	}
	return strings.Join(notes, "; ")
}

// candidates returns the sources metric m could use in round j, best first.
// Network is handled by networkCandidates.
func candidates(m string, j *samples.Joined) []Source {
	var out []Source
	add := func(s Source, ok bool) {
		if ok {
			out = append(out, s)
		}
	}
	switch m {
	case Turnaround:
		fl := floor(j)
		add(fl(pair(j, "capture", samples.CapReqHW, samples.CapRepHW, true)))
		add(fl(pair(j, "capture", samples.CapReqSW, samples.CapRepSW, true)))
		add(pair(j, "responder", samples.ReqRxHW, samples.RepTxHW, true))
		add(pair(j, "responder", samples.ReqRxSW, samples.RepTxSW, true))
		add(pair(j, "responder", samples.ReqRxUser, samples.RepTxUser, true))
	case RTT:
		add(pair(j, "sender", samples.TxHW, samples.RxHW, true))
		add(pair(j, "sender", samples.TxSW, samples.RxSW, true))
		add(pair(j, "sender", samples.TxUser, samples.RxUser, true))
	case KernelToUser:
		add(pair(j, "responder", samples.ReqRxSW, samples.ReqRxUser, false))
	case UserProcessing:
		add(pair(j, "responder", samples.ReqRxUser, samples.RepTxUser, false))
	case UserToKernel:
		add(pair(j, "responder", samples.RepTxUser, samples.RepTxSW, false))
	case Lateness:
		add(pair(j, "sender", samples.Due, samples.TxUser, false))
	case RTTFromDue:
		// rx_hw is PHC time and due CLOCK_REALTIME: pair() refuses it unless
		// a future clock says they share a base.
		add(pair(j, "sender", samples.Due, samples.RxHW, false))
		add(pair(j, "sender", samples.Due, samples.RxSW, false))
		add(pair(j, "sender", samples.Due, samples.RxUser, false))
	case Network:
		for _, r := range candidates(RTT, j) {
			for _, t := range candidates(Turnaround, j) {
				if n, ok := networkSource(r, t); ok {
					out = append(out, n)
				}
			}
		}
	}
	return out
}

// floor labels a capture turnaround of a round the reflector answered
// (rig respond --engine xdp, docs/probes.md#reflector-floor): it takes no
// stamps, so the capture's, on the wire, are the arm's only turnaround.
func floor(j *samples.Joined) func(Source, bool) (Source, bool) {
	h := j.Headers[samples.RoleResponder]
	e, _ := h.Settings["engine"].(string)
	return func(s Source, ok bool) (Source, bool) {
		if !ok || e != "xdp" && e != "xdp-generic" && e != "tc" {
			return s, ok
		}
		s.Label = "reflector floor: " + s.Label
		note := "the responder is the reflector (--engine " + e + "): it takes no stamps; the turnaround is the capture's, reply − request on the wire"
		s.Note = strings.TrimPrefix(s.Note+"; "+note, "; ")
		return s, true
	}
}

// networkSource combines an rtt and a turnaround source when both are
// hardware stamps.
func networkSource(rtt, ta Source) (Source, bool) {
	if !strings.HasSuffix(rtt.Label, " hw") || !strings.HasSuffix(ta.Label, " hw") {
		return Source{}, false
	}
	return Source{
		Label:   rtt.Label + " − " + ta.Label,
		Formula: "(" + rtt.Formula + ") − (" + ta.Formula + ")",
		A:       rtt.A, B: rtt.B, Sub: true, C: ta.A, D: ta.B,
		Clock: rtt.Clock + " − " + ta.Clock,
	}, true
}
