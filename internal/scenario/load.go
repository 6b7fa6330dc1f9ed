package scenario

import (
	"fmt"
	"os"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// The raw* types mirror the file. Values that need parsing (durations, CPU
// lists, addresses) stay `any` or string here and are parsed with their
// path afterwards, because errors from custom decoders lose their position.
type rawScenario struct {
	Name         *string             `yaml:"name"`
	Description  *string             `yaml:"description"`
	Emulate      *string             `yaml:"emulate"`
	Responders   *int                `yaml:"responders"`
	Hosts        map[string]*rawHost `yaml:"hosts"`
	Traffic      *rawTraffic         `yaml:"traffic"`
	Timestamps   *string             `yaml:"timestamps"`
	Rounds       *int                `yaml:"rounds"`
	Order        *string             `yaml:"order"`
	Baseline     *string             `yaml:"baseline"`
	RequireCheck *bool               `yaml:"require-check"`
	Capture      *rawCapture         `yaml:"capture"`
	Defaults     *rawKnobs           `yaml:"defaults"`
	Arms         []*rawArm           `yaml:"arms"`
}

type rawCapture struct {
	Pcap *bool `yaml:"pcap"`
}

type rawHost struct {
	Via         *string  `yaml:"via"`
	Roles       []string `yaml:"roles"`
	Iface       *string  `yaml:"iface"`
	TakeOverPTP *bool    `yaml:"take-over-ptp"`
	AllowMgmt   *bool    `yaml:"allow-mgmt"`
	Address     *string  `yaml:"address"`
	Mirror      *string  `yaml:"mirror"`
	CPU         *int     `yaml:"cpu"`
	Node        *string  `yaml:"node"`
}

type rawTraffic struct {
	Request      *string `yaml:"request"`
	Group        *string `yaml:"group"`
	Port         *int    `yaml:"port"`
	Reply        *string `yaml:"reply"`
	Interval     any     `yaml:"interval"`
	Count        *int    `yaml:"count"`
	Size         *int    `yaml:"size"`
	Warmup       *int    `yaml:"warmup"`
	ReplyTimeout any     `yaml:"reply-timeout"`
}

type rawKnobs struct {
	Responder  *rawResponder `yaml:"responder"`
	Sender     *rawSender    `yaml:"sender"`
	IRQ        *rawIRQ       `yaml:"irq"`
	NIC        *rawNIC       `yaml:"nic"`
	CState     *rawCState    `yaml:"cstate"`
	Load       *rawLoad      `yaml:"load"`
	SMTSibling *rawSMT       `yaml:"smt-sibling"`
	SMT        *rawSMTFence  `yaml:"smt"`
	Power      *rawPower     `yaml:"power"`
	Tuned      *string       `yaml:"tuned"`
	Noise      *rawNoise     `yaml:"noise"`
	Requires   []string      `yaml:"requires"`
	// Responders holds knobs for one responder each, by host name.
	Responders map[string]*rawKnobs `yaml:"responders"`
}

// rawArm is a name and the knobs of rawKnobs, inline (a named field: the
// decoder cannot set an unexported embedded struct).
type rawArm struct {
	Name    *string  `yaml:"name"`
	Request *string  `yaml:"request"`
	Knobs   rawKnobs `yaml:",inline"`
}

type rawResponder struct {
	CPU    any      `yaml:"cpu"` // a CPU number, quietest, or {quietest: LIST, window: D}
	Sched  *string  `yaml:"sched"`
	Poll   *string  `yaml:"poll"`
	Engine *string  `yaml:"engine"`
	Stack  rawStack `yaml:",inline"`
}

type rawSender struct {
	Engine *string  `yaml:"engine"`
	Poll   *string  `yaml:"poll"`
	Stack  rawStack `yaml:",inline"`
}

// rawStack is the socket stack of a native engine, the responder's or the
// sender's: rig respond's and rig send's --stack and --stack-env.
type rawStack struct {
	Name *string  `yaml:"stack"`
	Env  []string `yaml:"stack-env"` // NAME=VALUE
}

type rawNoise struct {
	For any `yaml:"for"`
}

type rawIRQ struct {
	CPUs any   `yaml:"cpus"`
	Away *bool `yaml:"away"`
}

type rawNIC struct {
	Coalesce          *rawCoalesce `yaml:"coalesce"`
	Ring              *rawRing     `yaml:"ring"`
	Channels          *int         `yaml:"channels"`
	DeferHardIRQs     *int         `yaml:"napi-defer-hard-irqs"`
	GROFlushTimeout   *int         `yaml:"gro-flush-timeout"`
	IRQSuspendTimeout *int         `yaml:"irq-suspend-timeout"`
}

type rawCoalesce struct {
	RxUsecs    *int  `yaml:"rx-usecs"`
	TxUsecs    *int  `yaml:"tx-usecs"`
	RxFrames   *int  `yaml:"rx-frames"`
	TxFrames   *int  `yaml:"tx-frames"`
	AdaptiveRx *bool `yaml:"adaptive-rx"`
	AdaptiveTx *bool `yaml:"adaptive-tx"`
}

type rawRing struct {
	RX *int `yaml:"rx"`
	TX *int `yaml:"tx"`
}

type rawCState struct {
	MaxLatencyUS *int     `yaml:"max-latency-us"`
	Disable      []string `yaml:"disable"`
	Poll         *bool    `yaml:"poll"`
}

type rawLoad struct {
	StressNG *string `yaml:"stress-ng"`
	CPUs     any     `yaml:"cpus"`
}

type rawPower struct {
	CPUs       any     `yaml:"cpus"`
	Governor   *string `yaml:"governor"`
	Turbo      any     `yaml:"turbo"`
	MinPerfPct *int    `yaml:"min-perf-pct"`
	MaxPerfPct *int    `yaml:"max-perf-pct"`
	MinFreq    any     `yaml:"min-freq"`
	MaxFreq    any     `yaml:"max-freq"`
}

type rawSMT struct {
	Load *string `yaml:"load"`
}

type rawSMTFence struct {
	Fence *bool `yaml:"fence"`
}

// MaxFileSize bounds a scenario file; anything larger is not a scenario.
const MaxFileSize = 1 << 20

// Load reads and checks the scenario file at path. A file that cannot be
// read gives the os error (errors.Is(err, os.ErrNotExist) for a missing
// file); a file with problems gives an ErrorList.
func Load(path string) (*Scenario, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, src)
}

// Parse checks src as the scenario file named file (used in messages only).
func Parse(file string, src []byte) (s *Scenario, err error) {
	x := newPosIndex(file, src)
	defer func() {
		// The YAML library has panicked on malformed input before; a bad
		// file must never crash rig.
		if r := recover(); r != nil {
			s, err = nil, ErrorList{x.errAt(pos{1, 1}, fmt.Sprintf("the YAML parser failed on this file: %v", r), "simplify the YAML (plain mappings and lists); please report the file")}
		}
	}()
	if len(src) > MaxFileSize {
		return nil, ErrorList{x.errAt(pos{1, 1}, fmt.Sprintf("file is %d bytes, more than the %d a scenario may have", len(src), MaxFileSize), "is this the right file?")}
	}
	if strings.TrimSpace(stripComments(string(src))) == "" {
		return nil, ErrorList{x.errAt(pos{1, 1}, "the file is empty", "start from scenarios/demo.yaml; docs/scenarios.md lists every field")}
	}
	f, err := parser.ParseBytes(src, 0)
	if err != nil {
		return nil, ErrorList{x.yamlErr(err)}
	}
	if len(f.Docs) > 1 {
		return nil, ErrorList{x.errAt(docPos(f.Docs[1]), "more than one YAML document ('---') in the file", "put one scenario in each file")}
	}
	var nulls []string
	for _, d := range f.Docs {
		x.walk(d, "", &nulls)
	}
	if len(f.Docs) == 1 {
		if _, ok := f.Docs[0].Body.(*ast.MappingNode); !ok {
			return nil, ErrorList{x.errAt(nodePos(f.Docs[0].Body), "a scenario is a mapping of fields (name:, traffic:, arms:, ...)", "start from scenarios/demo.yaml")}
		}
	}
	var raw rawScenario
	if err := yaml.UnmarshalWithOptions(src, &raw, yaml.Strict()); err != nil {
		return nil, ErrorList{x.yamlErr(err)}
	}
	c := &checker{x: x}
	for _, p := range nulls {
		c.add(x.keyErr(p, fmt.Sprintf("%s has no value", p), "give it a value or delete the line"))
	}
	if len(c.errs) > 0 {
		return nil, c.errs.sorted()
	}
	s = c.scenario(&raw)
	s.File, s.Source, s.pos = file, src, x
	if len(c.errs) > 0 {
		return nil, c.errs.sorted()
	}
	return s, nil
}
