// Package samples is the one file format for the per-request records of the
// sender, the responder and the capture.
//
// A sample file is self-describing and versioned:
//
//	"RIGSMPL\n"                      8 bytes magic
//	u32 LE n, n bytes JSON Header   what was measured, how, with which clocks
//	u64 LE count                    number of records
//	count × record                  u64 seq, u64 flags, u64 responder id
//	                                (version 3; absent before: 0), then one
//	                                int64 per column named in
//	                                Header.Columns (LE)
//	"RIGFOOT\n", u32 LE n, n bytes JSON Footer
//	                                counters, CRC-32C of the record bytes
//	u32 LE                          CRC-32C of every byte before it
//	                                (version 2; version 1 files end with
//	                                the footer, which no CRC covered)
//
// Stamps are nanoseconds on the clock named for their column in
// Header.Clocks; 0 means "not taken". Records are written from memory after a
// round, never during it. A reader of a truncated file gets the complete
// records before the damage and an error that says what is missing.
package samples

import (
	"fmt"
	"strings"
	"time"

	"github.com/rig-project/rig/internal/rundir"
)

// FormatVersion is the sample file format version written. Version 2 adds
// the trailing CRC over the whole file (header and footer included);
// version 3 the responder id of every record (several responders answer
// one multicast request). Versions 1 and 2 are still read: their records
// are responder 0's.
const FormatVersion = 3

// minFormatVersion is the oldest version Read accepts.
const minFormatVersion = 1

// Stamp names one timestamp column.
type Stamp int

// The stamps of one request, in the order they happen.
const (
	Due       Stamp = iota // sender: scheduled send time (start + k·interval)
	TxUser                 // sender: just before sendmsg
	TxSW                   // sender: kernel TX software stamp
	TxHW                   // sender: NIC TX stamp (sender PHC)
	ReqRxHW                // responder: NIC RX of the request (responder PHC)
	ReqRxSW                // responder: kernel RX software stamp
	ReqRxUser              // responder: user space got the request
	RepTxUser              // responder: just before sendmsg of the reply
	RepTxSW                // responder: kernel TX software stamp of the reply
	RepTxHW                // responder: NIC TX stamp of the reply (responder PHC)
	RxHW                   // sender: NIC RX of the reply (sender PHC)
	RxSW                   // sender: kernel RX software stamp of the reply
	RxUser                 // sender: user space got the reply
	CapReqHW               // capture: NIC RX stamp of the mirrored request (capture PHC)
	CapReqSW               // capture: kernel RX stamp of the mirrored request
	CapRepHW               // capture: NIC RX stamp of the mirrored reply (capture PHC)
	CapRepSW               // capture: kernel RX stamp of the mirrored reply
	NumStamps
)

var stampNames = [NumStamps]string{
	"due", "tx_user", "tx_sw", "tx_hw",
	"req_rx_hw", "req_rx_sw", "req_rx_user",
	"rep_tx_user", "rep_tx_sw", "rep_tx_hw",
	"rx_hw", "rx_sw", "rx_user",
	"cap_req_hw", "cap_req_sw", "cap_rep_hw", "cap_rep_sw",
}

func (s Stamp) String() string {
	if s >= 0 && s < NumStamps {
		return stampNames[s]
	}
	return fmt.Sprintf("stamp(%d)", int(s))
}

// ParseStamp returns the stamp with the given column name.
func ParseStamp(name string) (Stamp, error) {
	for i, n := range stampNames {
		if n == name {
			return Stamp(i), nil
		}
	}
	return 0, fmt.Errorf("unknown stamp %q (known: %s)", name, strings.Join(stampNames[:], ", "))
}

// Flags mark what happened to one request.
type Flags uint64

const (
	FlagDuplicate Flags = 1 << iota // the reply (or request, at the responder) arrived more than once
	FlagReordered                   // the reply arrived after a reply with a higher sequence
	FlagLate                        // the reply came after the reply timeout (ReplyLate; stamps kept)
	FlagTxLate                      // a TX stamp arrived after its wait expired (not used)
	FlagNotSent                     // the sender stopped before this sequence was sent
)

// ReplyLate reports whether r's reply came more than timeout ns after its
// request left: from the kernel's TX stamp (tx_sw, else tx_user before
// sendmsg) to the kernel's RX stamp (rx_sw, else rx_user), all the sender
// host's CLOCK_REALTIME. Judged from the send, not the due time, a stalled
// sender's catch-up requests are not late; judged from the wire arrival,
// replies the stalled sender read late are not either. False without a
// reply or a send stamp.
func ReplyLate(r *Record, timeout int64) bool {
	tx, rx := r.T[TxSW], r.T[RxSW]
	if tx == 0 {
		tx = r.T[TxUser]
	}
	if rx == 0 {
		rx = r.T[RxUser]
	}
	d, ok := Sub(rx, tx)
	return tx != 0 && rx != 0 && ok && d > timeout
}

// Sub is the one difference of two stamps, b − a, and whether it fits in
// an int64: stamps that overflow it (2^63−1 and −(2^63−1) give 2) come from
// no clock, only from a forged or damaged file, and give no value.
func Sub(b, a int64) (int64, bool) {
	d := b - a
	return d, (d <= b) == (a >= 0)
}

// Record is one request as seen by one role, or joined across roles; with
// several responders, one request and one responder's reply to it.
type Record struct {
	Seq       uint64
	Flags     Flags
	Responder uint32 // the id of the responder whose reply this is
	T         [NumStamps]int64
}

// Has reports whether stamp s was taken.
func (r *Record) Has(s Stamp) bool { return r.T[s] != 0 }

// Role is who wrote a sample file.
type Role string

const (
	RoleSender    Role = "sender"
	RoleResponder Role = "responder"
	RoleCapture   Role = "capture"
)

// Roles are the roles in the order a round's files are read and counted.
var Roles = []Role{RoleSender, RoleResponder, RoleCapture}

// Columns each role records, in file order.
var roleColumns = map[Role][]Stamp{
	RoleSender:    {Due, TxUser, TxSW, TxHW, RxHW, RxSW, RxUser},
	RoleResponder: {ReqRxHW, ReqRxSW, ReqRxUser, RepTxUser, RepTxSW, RepTxHW},
	RoleCapture:   {CapReqHW, CapReqSW, CapRepHW, CapRepSW},
}

// ColumnsFor returns the stamp columns a role records.
func ColumnsFor(r Role) []Stamp { return roleColumns[r] }

// upgradeColumns renames the columns of files written before the capture
// kept both of its clocks: their one "cap_req"/"cap_rep" pair held the NIC
// stamp where it was granted and the kernel's otherwise, as the header's
// clock for the column says.
func upgradeColumns(h *Header) {
	for i, n := range h.Columns {
		if n != "cap_req" && n != "cap_rep" {
			continue
		}
		ck, ok := h.Clocks[n]
		to := n + "_sw"
		if ok && ck.Source == "hw" {
			to = n + "_hw"
		}
		h.Columns[i] = to
		if ok {
			delete(h.Clocks, n)
			h.Clocks[to] = ck
		}
	}
}

// Clock says where the values of one stamp column come from.
type Clock struct {
	// Source is "hw" (NIC clock), "sw" (kernel software stamp) or "user"
	// (clock_gettime in the program).
	Source string `json:"source"`
	// Clock is the time base: "CLOCK_REALTIME" or "phc" (raw PHC time).
	Clock string `json:"clock"`
	// Iface and PHCIndex identify the NIC clock for "hw" stamps; two hw
	// stamps are only comparable when both match.
	Iface    string `json:"iface,omitempty"`
	PHCIndex int    `json:"phc_index,omitempty"`
	// Point is where a software TX stamp was taken: "" at the driver's
	// hand-off to the NIC (SCM_TSTAMP_SND), "sched" before the qdisc
	// (SCM_TSTAMP_SCHED), for a driver that gives no SND stamp.
	Point string `json:"point,omitempty"`
	// Note records a fallback or a limit (e.g. "rx_filter ALL not granted").
	Note string `json:"note,omitempty"`
}

// Header describes one sample file.
type Header struct {
	Format        string `json:"format"` // always "rig-samples"
	FormatVersion int    `json:"format_version"`
	WireVersion   int    `json:"wire_version"`
	RigVersion    string `json:"rig_version"`
	Role          Role   `json:"role"`
	RunID         string `json:"run_id"` // 16 hex digits
	Arm           string `json:"arm,omitempty"`
	ArmIndex      int    `json:"arm_index"`
	Round         int    `json:"round"`
	Host          string `json:"host,omitempty"`
	Iface         string `json:"iface,omitempty"`
	Group         string `json:"group,omitempty"`   // request group:port (multicast requests)
	Request       string `json:"request,omitempty"` // "unicast" or "multicast"; empty (older files): multicast
	To            string `json:"to,omitempty"`      // unicast requests: the responder's address:port
	IntervalNS    int64  `json:"interval_ns,omitempty"`
	Count         int    `json:"count,omitempty"` // requests planned
	Size          int    `json:"size,omitempty"`  // UDP payload bytes
	Warmup        int    `json:"warmup"`          // leading sequences excluded from statistics
	// Responders is how many responders answer every request (ids
	// 0..Responders-1): the sender's and the capture's records hold one
	// reply slot per responder. 0 (older files) means 1.
	Responders int `json:"responders,omitempty"`
	// ResponderID is the id a responder's file answers as (its replies
	// carry it; wire.Header.Responder).
	ResponderID uint32           `json:"responder_id,omitempty"`
	Columns     []string         `json:"columns"` // stamp names, file order
	Clocks      map[string]Clock `json:"clocks"`  // per column
	Settings    map[string]any   `json:"settings,omitempty"`
	StartedAt   string           `json:"started_at,omitempty"` // RFC 3339, UTC
}

// Counters are the per-role event counts of one round.
type Counters struct {
	Sent            uint64 `json:"sent,omitempty"`
	Received        uint64 `json:"received,omitempty"` // sender: replies, late ones included
	Lost            uint64 `json:"lost,omitempty"`     // sender: requests without a reply
	Duplicated      uint64 `json:"duplicated,omitempty"`
	Reordered       uint64 `json:"reordered,omitempty"`
	Late            uint64 `json:"late,omitempty"`      // sender: replies after the reply timeout (ReplyLate)
	Foreign         uint64 `json:"foreign,omitempty"`   // not rig packets, or another run's, arm's, round's or direction's
	Malformed       uint64 `json:"malformed,omitempty"` // rig magic but invalid
	TxStampsMissing uint64 `json:"tx_stamps_missing,omitempty"`
	TxStampsLate    uint64 `json:"tx_stamps_late,omitempty"`
	RxStampsMissing uint64 `json:"rx_stamps_missing,omitempty"`
	SendErrors      uint64 `json:"send_errors,omitempty"`
	Unpaired        uint64 `json:"unpaired,omitempty"`     // capture: request or reply seen alone
	OutOfRange      uint64 `json:"out_of_range,omitempty"` // sequences beyond the preallocated records (answered, not recorded)
	Outgoing        uint64 `json:"outgoing,omitempty"`     // capture: frames this host sent itself (PACKET_OUTGOING), dropped
	// KernelDrops: frames the kernel dropped before the program read them
	// (capture: PACKET_STATISTICS tp_drops, a full receive buffer).
	KernelDrops uint64 `json:"kernel_drops,omitempty"`
}

// Footer closes a sample file.
type Footer struct {
	Records  uint64   `json:"records"`
	CRC32C   uint32   `json:"crc32c"` // over the record bytes
	Counters Counters `json:"counters"`
	EndedAt  string   `json:"ended_at,omitempty"`
	// Stopped says why the program ended before its natural end:
	// "interrupted: …" (a signal or a cancelled context) or "failed: …"
	// (an error). The responder and the capture run until stopped, so
	// "interrupted" is their normal end; the sender's is not.
	Stopped string `json:"stopped,omitempty"`
	// Thread is the measuring thread's CPU use over the round (sender:
	// the pacing thread; responder: its loop), when the kernel gave it.
	Thread *ThreadUsage `json:"thread,omitempty"`
	// PerResponder, with several responders, holds the counters of each
	// (index = responder id) as one responder's round would have them:
	// the replies received, lost, late, duplicated and reordered are that
	// responder's; what no reply can be told apart by (sent, foreign,
	// malformed, TX stamps) is the file's. Counters are the sums.
	PerResponder []Counters `json:"per_responder,omitempty"`
}

// Time is how a sample file writes a wall-clock time (StartedAt,
// EndedAt): UTC, RFC 3339 with nanoseconds.
func Time(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// ResponderCount is h.Responders with older files' 0 read as 1.
func (h *Header) ResponderCount() int { return max(h.Responders, 1) }

// SetResponders records n responders: left out (0) for one, so that a
// one-responder file reads as before there were several.
func (h *Header) SetResponders(n int) {
	if n > 1 {
		h.Responders = n
	}
}

// CountersOf returns responder id's counters from a footer: its
// PerResponder entry, or with one responder the file's counters.
func (f *Footer) CountersOf(id uint32) Counters {
	if len(f.PerResponder) == 0 {
		return f.Counters
	}
	if int(id) < len(f.PerResponder) {
		return f.PerResponder[id]
	}
	return Counters{}
}

// Prefixes of Footer.Stopped.
const (
	StoppedInterrupted = "interrupted: "
	StoppedFailed      = "failed: "
)

// ThreadUsage is rundir.ThreadUsage: sample footers and noise.json carry it.
type ThreadUsage = rundir.ThreadUsage

// TxColumns are a role's transmit stamps: User is taken before sendmsg, SW
// and HW arrive afterwards from the socket's error queue, keyed by
// sequence. The sender and the responder file and await them the same way.
type TxColumns struct{ User, SW, HW Stamp }

// The transmit columns of the two roles that send.
var (
	SenderTx    = TxColumns{TxUser, TxSW, TxHW}
	ResponderTx = TxColumns{RepTxUser, RepTxSW, RepTxHW}
)

// File stores a TX stamp pair (0 = not in this error-queue entry) under
// recs[key]; it reports false for a key outside recs.
func (c TxColumns) File(recs []Record, key uint32, sw, hw int64) bool {
	if uint64(key) >= uint64(len(recs)) {
		return false
	}
	r := &recs[key]
	if sw != 0 {
		r.T[c.SW] = sw
	}
	if hw != 0 {
		r.T[c.HW] = hw
	}
	return true
}

// SWOf is the software TX stamp filed under recs[key] so far (0: none, or
// a key outside recs).
func (c TxColumns) SWOf(recs []Record, key uint32) int64 {
	if uint64(key) >= uint64(len(recs)) {
		return 0
	}
	return recs[key].T[c.SW]
}

// TxWant is the set of TX stamps a sent datagram should get back.
type TxWant uint8

const (
	WantSW TxWant = 1 << iota // kernel software stamp
	WantHW                    // NIC hardware stamp
)

// TxWanted is the TxWant of a socket granted software and/or hardware TX
// stamps (neither: timestamps off, nothing to wait for).
func TxWanted(sw, hw bool) TxWant {
	var w TxWant
	if sw {
		w |= WantSW
	}
	if hw {
		w |= WantHW
	}
	return w
}

// Awaits reports whether r was sent and still lacks a TX stamp it wants.
func (c TxColumns) Awaits(r *Record, want TxWant) bool {
	if r.T[c.User] == 0 {
		return false
	}
	return (want&WantSW != 0 && r.T[c.SW] == 0) || (want&WantHW != 0 && r.T[c.HW] == 0)
}

// Awaiting counts the records of recs that await a TX stamp.
func (c TxColumns) Awaiting(recs []Record, want TxWant) uint64 {
	var n uint64
	for i := range recs {
		if c.Awaits(&recs[i], want) {
			n++
		}
	}
	return n
}
