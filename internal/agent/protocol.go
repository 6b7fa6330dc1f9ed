// Package agent is how the rig controller works on a host: it starts
// `rig agent --stdio` through whatever reaches the host (nothing for this
// machine, `ip netns exec NS`, `ssh HOST`, `kubectl exec -i POD --`) and
// speaks a small versioned protocol over the agent's stdin and stdout.
//
// The protocol is JSON, one message per line. The agent speaks first with
// a Hello; the controller refuses a protocol or version it does not know.
// Then the controller sends Requests and the agent answers each with a
// Response of the same ID, in any order; between them the agent sends
// Events (log and progress lines of the processes it runs).
//
// The agent executes rig operations only: host facts, the environment
// snapshot, the preflight checks, ranking CPUs by noise, preparing a NIC's
// timestamping for the run and applying and taking back an arm's knobs
// (both journaled), and the rig probe processes (respond, send, capture)
// whose sample files it hands back. It never runs an arbitrary command. When its stdin closes — the
// controller exited or died — or it gets SIGINT, SIGTERM or SIGHUP, it stops
// its processes and takes every knob back before it exits; a write to a
// controller that is gone fails without stopping that. Its processes get
// SIGTERM when the agent dies, however it dies.
package agent

import (
	"encoding/json"

	"github.com/rig-project/rig/internal/tstamp"
)

// Proto and Version identify the protocol. A change that an older peer
// would misread bumps Version. 2: timestamps op; facts carry timestamping
// states. 3: knobs in snake_case, host facts as one struct
// (facts.Facts), several responders (respond --id, send/capture
// --responders). 4: a probe's start args are the flags that differ from
// its defaults. 5: a capture's pcap file (StartArgs.Pcap, FetchResult.Pcap).
const (
	Proto   = "rig-agent"
	Version = 5
)

// Hello is the agent's first line.
type Hello struct {
	Proto   string `json:"proto"`
	Version int    `json:"version"`
	Rig     string `json:"rig"`  // rig version and commit
	Host    string `json:"host"` // hostname
	PID     int    `json:"pid"`
	Netns   string `json:"netns,omitempty"`
	// Error, when set, is why the agent cannot serve (another rig holds
	// the host, no work directory); it exits after the Hello.
	Error string `json:"error,omitempty"`
}

// Request is one operation.
type Request struct {
	ID   uint64          `json:"id"`
	Op   string          `json:"op"`
	Args json.RawMessage `json:"args,omitempty"`
}

// Response answers the Request with the same ID.
type Response struct {
	ID     uint64          `json:"id"`
	OK     bool            `json:"ok"`
	Error  string          `json:"error,omitempty"`
	Usage  bool            `json:"usage,omitempty"` // the error is bad input (exit 2 material)
	Result json.RawMessage `json:"result,omitempty"`
}

// Event is an unsolicited line from a process the agent runs.
type Event struct {
	Event  string `json:"event"` // "log" or "progress"
	Handle int    `json:"handle"`
	Line   string `json:"line"`
}

// Operations.
const (
	OpFacts = "facts" // → facts.Facts
	OpEnv   = "env"   // EnvArgs → envsnap.Snapshot
	OpApply = "apply" // ApplyArgs → ApplyResult
	OpUndo  = "undo"  // → ApplyResult
	OpStart = "start" // StartArgs → StartResult
	OpReady = "ready" // HandleArgs{Timeout} → {}
	OpStop  = "stop"  // HandleArgs → {}
	OpWait  = "wait"  // HandleArgs → WaitResult
	OpFetch = "fetch" // HandleArgs → FetchResult
	OpCheck = "check" // CheckArgs → check.Report
	// OpTimestamps prepares a NIC's hardware timestamping for the whole
	// run (journaled; taken back at bye, not by an arm's undo).
	OpTimestamps = "timestamps" // TimestampsArgs → nicctl.TSResult
	// OpRankCPUs watches candidate CPUs and ranks them by measured noise
	// (responder.cpu: quietest, before each round).
	OpRankCPUs = "rank-cpus" // RankArgs → rundir.Ranking
	OpBye      = "bye"       // → {}; the agent cleans up and exits
)

// EnvArgs selects the NICs of the snapshot.
type EnvArgs struct {
	Ifaces []string `json:"ifaces"`
}

// CheckArgs run `rig check` on the agent's host.
type CheckArgs struct {
	CPU   int    `json:"cpu"`
	Iface string `json:"iface,omitempty"`
	// Multicast: the requests are multicast on Iface (the IGMP check).
	Multicast bool `json:"multicast,omitempty"`
}

// ApplyArgs is an arm to put in force on the agent's host.
type ApplyArgs struct {
	Arm      string          `json:"arm"`
	Knobs    json.RawMessage `json:"knobs"` // scenario.Knobs
	Iface    string          `json:"iface"`
	LengthNS int64           `json:"length_ns"`
	// AllowMgmt lets the knobs change Iface although it carries the
	// default route (the scenario host's allow-mgmt).
	AllowMgmt bool `json:"allow_mgmt,omitempty"`
}

// TimestampsArgs ask for a NIC's hardware timestamping for the run: Mode
// is the scenario's ("auto", "hardware", "software"), Need what the roles
// on that interface need (sender/responder RX+TX, capture RX).
type TimestampsArgs struct {
	Iface     string      `json:"iface"`
	Mode      string      `json:"mode"`
	Need      tstamp.Need `json:"need"`
	AllowMgmt bool        `json:"allow_mgmt,omitempty"`
	TakeOver  bool        `json:"take_over,omitempty"`
}

// RankArgs are the candidate CPUs (nil: every CPU the agent may run on)
// and how long to watch them (0: cpurank's default).
type RankArgs struct {
	CPUs     []int `json:"cpus,omitempty"`
	WindowNS int64 `json:"window_ns,omitempty"`
}

// ApplyResult lists what changed or was restored, one line each.
type ApplyResult struct {
	Report []string `json:"report"`
}

// StartArgs starts a rig probe process: Command is "respond", "send",
// "capture" or "noise"; Args are its flags without --out (the agent picks the file).
type StartArgs struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
	// Telemetry, for a responder, samples its CPU from the agent while it
	// runs (what else ran there: docs/measurement.md); nil: none.
	Telemetry *TelemetryArgs `json:"telemetry,omitempty"`
	// Pcap, for a capture, has it write its frames as pcap too (the agent
	// picks the file, as --out's); Fetch hands it back.
	Pcap bool `json:"pcap,omitempty"`
}

// TelemetryArgs configure the per-CPU telemetry of a responder.
type TelemetryArgs struct {
	CPU        int   `json:"cpu"` // the responder CPU, its SMT sibling watched too; -1: unpinned, every CPU it may run on
	IntervalNS int64 `json:"interval_ns,omitempty"`
	// Iface is the responder NIC: its queue IRQs' affinity drift is
	// watched (found by the agent with nicctl's IRQ discovery).
	Iface string `json:"iface,omitempty"`
}

// StartResult names the process.
type StartResult struct {
	Handle int `json:"handle"`
}

// HandleArgs names a process.
type HandleArgs struct {
	Handle    int   `json:"handle"`
	TimeoutNS int64 `json:"timeout_ns,omitempty"`
}

// WaitResult is how a process ended.
type WaitResult struct {
	ExitCode int      `json:"exit_code"`
	Error    string   `json:"error,omitempty"`
	Tail     []string `json:"tail,omitempty"` // last stderr lines
}

// FetchResult is a process's sample file.
type FetchResult struct {
	Data      []byte `json:"data"`                // base64 in JSON
	Telemetry []byte `json:"telemetry,omitempty"` // telemetry.json, when asked for
	Pcap      []byte `json:"pcap,omitempty"`      // the capture's pcap file, when asked for
}
