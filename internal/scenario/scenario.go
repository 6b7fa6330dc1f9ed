// Package scenario reads rig scenario files: the strict YAML loader, the
// checks against the facts of the hosts, and the plan of arms × rounds.
//
// The flow is Load → Validate → Plan. Load rejects anything malformed or
// impossible in the file itself; Validate checks the file against what the
// hosts have (CPUs, interfaces, stress-ng, timestamping) and marks arms whose
// `requires` the host lacks as skipped; Plan orders the arms of every round.
// Nothing in this package changes a host.
//
// Every problem in a file is reported as an *Error carrying file:line:col, the
// offending source line with a caret, and a hint; Load and Validate return
// them as an ErrorList (use errors.As). The file format is documented field
// by field in docs/scenarios.md.
package scenario

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/ethtoolnl"
	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/power"
	"github.com/rig-project/rig/internal/probe"
)

// DefaultRounds is rounds:'s default (docs/scenarios.md documents the
// defaults). The traffic's are rig send's (probe.DefaultSend): a round
// sends as rig send does by hand.
const DefaultRounds = 3

// Names of the hosts that `emulate: netns` creates.
const (
	EmulatedSender    = "sender"    // role sender
	EmulatedResponder = "responder" // role responder (responder 0)
	EmulatedCapture   = "capture"   // role capture, on the switch's mirror port
)

// EmulatedResponderN is the name of emulated responder i: "responder" for
// 0, "responder<i>" for the others (`responders: N`), as the lab's roles.
func EmulatedResponderN(i int) string {
	if i == 0 {
		return EmulatedResponder
	}
	return fmt.Sprintf("%s%d", EmulatedResponder, i)
}

// MaxEmulatedResponders bounds `responders:` (the lab's responder
// namespaces; netlab.MaxResponders).
const MaxEmulatedResponders = 9

// MaxResponders bounds the responder hosts of one request stream
// (rig send --responders).
const MaxResponders = probe.MaxResponders

// Scenario is one loaded and statically valid scenario file.
type Scenario struct {
	File         string // path as given to Load
	Source       []byte // the file as read
	Name         string
	Description  string
	Emulate      string // "" or "netns"
	Hosts        []Host // sorted by name; the built-in ones when Emulate is set
	Traffic      Traffic
	Timestamps   TimestampMode
	Rounds       int
	Order        Order
	Baseline     string // an arm name; the first arm unless the file says otherwise
	RequireCheck bool   // run `rig check` on every host before the first round
	// Pcap: every round's capture writes its frames as pcap too
	// (capture.pcap; rundir.PcapFile).
	Pcap     bool
	Defaults Knobs // as written under `defaults`
	// DefaultsPer are the knobs under defaults.responders, by responder
	// host name.
	DefaultsPer map[string]Knobs
	// Responders are the responder hosts' names; a responder's id is its
	// index (hosts sorted by name). Several: fan-out, every one answers
	// every multicast request.
	Responders []string
	Arms       []Arm
	// RequestAddr is where unicast requests go: the responder host's
	// address on its iface, resolved by Validate from that host's facts
	// (invalid when no arm sends unicast, when emulated, or when the facts
	// could not say; the runner resolves it again from its agent).
	RequestAddr netip.Addr
	// Warnings are what Validate found the run may pay for on the hosts
	// (a responder CPU off its NIC's NUMA node, RT throttling of a
	// spinning FIFO responder, prefer-busy-poll with the interrupts on)
	// or could not tell there, each at its field: printed, not refused.
	Warnings ErrorList
	// NICNodeCPUs are, by responder host, the CPUs of its interface's
	// NUMA node, read by Validate where an arm asks numa: nic.
	NICNodeCPUs map[string][]int

	pos *posIndex
}

// Host is one machine the scenario runs on.
type Host struct {
	Name    string
	Via     string   // "local", or the command that reaches the host
	Command []string // Via split into argv; nil for local
	Roles   []Role
	Iface   string // "" when not given
	// TakeOverPTP lets rig change the NIC's timestamping config although
	// ptp4l or chronyd owns it (host option take-over-ptp).
	TakeOverPTP bool
	// AllowMgmt lets the arms change Iface (IRQs, NIC settings) although it
	// carries the host's default route; without it validation refuses.
	AllowMgmt bool
	// Address is the responder's address on Iface that unicast requests
	// go to (host option address), for an Iface with several; invalid:
	// its only one.
	Address netip.Addr
	// Mirror is how the capture host's port receives the copies: ""
	// (a SPAN/tap port: the frames as on the wire) or MirrorVXLAN.
	Mirror string
	// CPU pins the sender's pacing thread or the capture's loop on this
	// host (host option cpu; nil: not pinned). A responder's CPU is an
	// arm knob (responder.cpu), not a host option.
	CPU *int
	// Node is the agent that applies the arms' node knobs (SplitNode) for
	// a responder that cannot (a pod: read-only /sys and /proc/irq): the
	// host agent on its node, reached by host option node (a via). Its
	// name is NodeName(Name); nil: the host applies them itself.
	Node *Host
}

// NodeName names the node agent of host: its journal lane, its facts
// and its lines in the log.
func NodeName(host string) string { return host + "-node" }

// Has reports whether h plays role r.
func (h Host) Has(r Role) bool {
	for _, x := range h.Roles {
		if x == r {
			return true
		}
	}
	return false
}

// Local reports whether the host is the machine rig runs on.
func (h Host) Local() bool { return h.Via == "local" }

// Role is what a host does in a scenario.
type Role string

const (
	RoleSender    Role = "sender"
	RoleResponder Role = "responder"
	RoleCapture   Role = "capture"
)

// KnobsFor returns the knobs arm a applies on responder host name:
// defaults, then defaults.responders[name], then the arm's, then the
// arm's responders[name], each overriding the one before.
func (s *Scenario) KnobsFor(a Arm, name string) Knobs {
	return merge(merge(merge(s.Defaults, s.DefaultsPer[name]), a.Knobs), a.PerResponder[name])
}

// Fanout reports whether several responders answer each request.
func (s *Scenario) Fanout() bool { return len(s.Responders) > 1 }

// HostWith returns the host playing role r, or nil.
func (s *Scenario) HostWith(r Role) *Host {
	for i := range s.Hosts {
		if s.Hosts[i].Has(r) {
			return &s.Hosts[i]
		}
	}
	return nil
}

// Traffic is the request stream of every round.
type Traffic struct {
	// Request is the arms' default request mode (traffic.request; an arm
	// may say otherwise, Arm.Request).
	Request      RequestMode
	Group        netip.AddrPort // IPv4 multicast group and port of multicast requests
	Port         uint16         // UDP port of unicast requests (traffic.port, else the group's)
	Reply        netip.AddrPort // multicast reply group; invalid (zero) = unicast reply
	Interval     time.Duration
	Count        int // requests per round, warm-up included
	Size         int // UDP payload bytes
	Warmup       int // leading samples excluded from every statistic
	ReplyTimeout time.Duration
}

// UnicastReply reports whether the responder answers the sender by unicast.
func (t Traffic) UnicastReply() bool { return !t.Reply.IsValid() }

// RoundDuration is the time one round takes to send its requests.
func (t Traffic) RoundDuration() time.Duration { return time.Duration(t.Count) * t.Interval }

// TimestampMode selects the timestamp source of every metric.
type TimestampMode string

const (
	TimestampsAuto     TimestampMode = "auto"
	TimestampsHardware TimestampMode = "hardware"
	TimestampsSoftware TimestampMode = "software"
)

// OrderKind is the rule that orders the arms inside each round.
type OrderKind string

const (
	OrderRotate     OrderKind = "rotate"     // round r starts at arm r mod A
	OrderSequential OrderKind = "sequential" // file order in every round
	OrderRandom     OrderKind = "random"     // a shuffle per round, fixed by Seed
)

// Order is the arm order rule; Seed is used by OrderRandom only.
type Order struct {
	Kind OrderKind
	Seed uint64
}

func (o Order) String() string {
	if o.Kind == OrderRandom {
		return fmt.Sprintf("random:%d", o.Seed)
	}
	return string(o.Kind)
}

// Arm is a named set of knobs.
type Arm struct {
	Name string
	// Request is how the arm's requests travel: the arm's request:, else
	// traffic.request.
	Request   RequestMode
	Knobs     Knobs // as written in the arm
	Effective Knobs // defaults merged with Knobs
	// PerResponder are the knobs under the arm's responders:, by
	// responder host name (Scenario.KnobsFor merges them).
	PerResponder map[string]Knobs
	// Skip is why the arm cannot run on the hosts ("" = it runs). Validate
	// sets it from `requires` (and the implicit ones, see docs/scenarios.md).
	Skip string
	// Notes are what Validate found the knobs do on the host, where that
	// differs from what they say (max-latency-us 0 without a POLL state
	// leaves the shallowest state, WFI on arm64): facts, not warnings.
	Notes []string
}

// Knobs are the settings an arm applies on the responder host, and the
// sender's engine. A nil pointer or slice means "leave the host as it is"
// (rig send's default for the sender).
//
// The JSON names (manifest.json's knobs, the agent's apply operation) are
// snake_case like every other key rig writes.
type Knobs struct {
	Responder  Responder       `json:"responder"`
	Sender     Sender          `json:"sender"`
	IRQ        *IRQ            `json:"irq"`
	NIC        NIC             `json:"nic"`
	CState     *CState         `json:"cstate"`
	Load       *StressLoad     `json:"load"`
	SMTSibling *SMTSibling     `json:"smt_sibling"`
	SMT        *SMT            `json:"smt"`
	Power      *power.Settings `json:"power"` // the CPU frequency (cpufreq, turbo, intel_pstate limits)
	Tuned      *string         `json:"tuned"` // a tuned profile (tuned-adm profile), applied first
	Noise      *Noise          `json:"noise"`
	Requires   []Requirement   `json:"requires"`
}

// Responder says where and how the responder runs. CPU and Quietest are
// the two forms of responder.cpu: at most one is set.
type Responder struct {
	CPU      *int            `json:"cpu"`
	Quietest *Quietest       `json:"quietest"`
	Sched    *cpusched.Sched `json:"sched"`  // the responder thread's scheduling policy
	Poll     *probe.Poll     `json:"poll"`   // how the responder waits for a request
	Engine   *probe.Engine   `json:"engine"` // rig respond --engine
	Stack    *probe.Stack    `json:"stack"`  // rig respond --stack (and --stack-env)
}

// Sender says how the sender runs its loop: rig send --engine, --poll and
// --stack (its CPU is host option cpu).
type Sender struct {
	Engine *probe.Engine   `json:"engine"`
	Poll   *probe.PollMode `json:"poll"`
	Stack  *probe.Stack    `json:"stack"` // rig send --stack (and --stack-env)
}

// Quietest is responder.cpu: quietest — the responder host's agent ranks
// the candidate CPUs by measured noise before each round (cpurank) and
// the round pins the responder to the quietest.
type Quietest struct {
	CPUs   []int         `json:"cpus"`      // candidates; nil = every CPU rig may run on there
	Window time.Duration `json:"window_ns"` // how long they are watched; 0 = the default (1 s)
	// NICNode (numa: nic) keeps only the candidates on the NUMA node of
	// the responder's interface (Scenario.QuietestCPUs).
	NICNode bool `json:"numa_nic,omitempty"`
}

// HasCPU reports whether the responder is pinned: to a given CPU or to the
// quietest one.
func (r Responder) HasCPU() bool { return r.CPU != nil || r.Quietest != nil }

// Noise is a window of rig noise on the responder CPU before each round's
// probes start, under the arm's knobs: a busy responder and the noise
// loop cannot share the CPU, so each gets its own time.
type Noise struct {
	For time.Duration `json:"for_ns"`
}

// Noise window bounds (noise: {for: D}).
const (
	MinNoise = time.Millisecond
	MaxNoise = time.Hour
)

// IRQ places the queue IRQs of the responder NIC (CPUs) and moves every
// other IRQ of the host off the measured CPUs (Away).
type IRQ struct {
	CPUs []int `json:"cpus"`
	Away bool  `json:"away"`
	// AwayFrom is what rig run resolves Away to on the host: the CPUs of
	// every responder of the round there (a fan-out lab shares one host's
	// IRQs); nil means responder.cpu.
	AwayFrom []int `json:"away_from,omitempty"`
}

// ChangesNIC reports whether the knobs change the responder's NIC: its
// queue IRQs or its ethtool and NAPI settings (irq.away is the host's).
func (k Knobs) ChangesNIC() bool {
	return (k.IRQ != nil && k.IRQ.CPUs != nil) || k.NIC != (NIC{})
}

// NIC holds the ethtool settings of the responder NIC.
type NIC struct {
	Coalesce ethtoolnl.Coalesce `json:"coalesce"` // interrupt moderation (ethtool -C)
	Ring     Ring               `json:"ring"`
	Channels *uint32            `json:"channels"` // combined channels
	// NAPI is what busy polling wants to keep the interrupts off.
	NAPI facts.NAPIKnobs `json:"napi"`
}

// Ring is the ring sizes (ethtool -G).
type Ring struct {
	RX *uint32 `json:"rx"`
	TX *uint32 `json:"tx"`
}

// CState limits idle states for the responder CPU; exactly one field is set.
type CState struct {
	MaxLatencyUS *int     `json:"max_latency_us"` // hold /dev/cpu_dma_latency open with this value
	Disable      []string `json:"disable"`        // disable these cpuidle states (by name) on the responder CPU
	Poll         bool     `json:"poll"`           // disable every state but POLL on the responder CPU
}

// StressLoad runs stress-ng beside the responder.
type StressLoad struct {
	StressNG []string `json:"stress_ng"` // stress-ng arguments (rig adds --taskset and stops it)
	CPUs     []int    `json:"cpus"`      // --taskset list; nil = stress-ng's default affinity
}

// SMT keeps the responder CPU's SMT siblings idle for the round: Fence
// takes them offline.
type SMT struct {
	Fence bool `json:"fence"`
}

// SMTSibling runs stress-ng on the SMT sibling of the responder CPU.
type SMTSibling struct {
	StressNG []string `json:"stress_ng"`
}

// PowerSettings are the arm's power knobs for the host, with the CPUs
// resolved: the responder CPU when power.cpus is not given.
func (k Knobs) PowerSettings() power.Settings {
	if k.Power == nil {
		return power.Settings{}
	}
	s := *k.Power
	if s.CPUs == nil && k.Responder.CPU != nil {
		s.CPUs = []int{*k.Responder.CPU}
	}
	return s
}

// SplitNode splits k into the knobs that change the node — irq, cstate,
// power, tuned, smt, with the responder CPU they default to — and the
// others.
func (k Knobs) SplitNode() (node, rest Knobs) {
	node = Knobs{Responder: Responder{CPU: k.Responder.CPU}, IRQ: k.IRQ, CState: k.CState, Power: k.Power, Tuned: k.Tuned, SMT: k.SMT}
	rest = k
	rest.IRQ, rest.CState, rest.Power, rest.Tuned, rest.SMT = nil, nil, nil, nil, nil
	return node, rest
}

// HasNode reports whether k changes the node (SplitNode).
func (k Knobs) HasNode() bool {
	return k.IRQ != nil || k.CState != nil || k.Power != nil || k.Tuned != nil || k.SMT != nil
}

// TunedProfile is the arm's tuned profile, "" for none.
func (k Knobs) TunedProfile() string {
	if k.Tuned == nil {
		return ""
	}
	return *k.Tuned
}

// Requirement is a host state an arm needs; without it the arm is skipped.
type Requirement string

const (
	RequireIsolated     Requirement = "isolated"      // responder CPU in isolcpus
	RequireNohzFull     Requirement = "nohz_full"     // responder CPU in nohz_full
	RequireSMT          Requirement = "smt"           // responder CPU has an SMT sibling
	RequireHWTimestamps Requirement = "hw-timestamps" // responder and capture NICs stamp in hardware
	RequireStressNG     Requirement = "stress-ng"     // stress-ng installed on the responder host
)

var requirements = []Requirement{RequireIsolated, RequireNohzFull, RequireSMT, RequireHWTimestamps, RequireStressNG}
