package scenario

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/wire"
)

// The raw* types mirror the file. Values that need parsing (durations, CPU
// lists, addresses) stay `any` or string here and are parsed with their
// path afterwards, because errors from custom decoders lose their position.
type rawScenario struct {
	Name         *string             `yaml:"name"`
	Description  *string             `yaml:"description"`
	Emulate      *string             `yaml:"emulate"`
	Hosts        map[string]*rawHost `yaml:"hosts"`
	Traffic      *rawTraffic         `yaml:"traffic"`
	Timestamps   *string             `yaml:"timestamps"`
	Rounds       *int                `yaml:"rounds"`
	Order        *string             `yaml:"order"`
	Baseline     *string             `yaml:"baseline"`
	RequireCheck *bool               `yaml:"require-check"`
	Defaults     *rawKnobs           `yaml:"defaults"`
	Arms         []*rawArm           `yaml:"arms"`
}

type rawHost struct {
	Via         *string  `yaml:"via"`
	Roles       []string `yaml:"roles"`
	Iface       *string  `yaml:"iface"`
	TakeOverPTP *bool    `yaml:"take-over-ptp"`
	AllowMgmt   *bool    `yaml:"allow-mgmt"`
	Address     *string  `yaml:"address"`
	Mirror      *string  `yaml:"mirror"`
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
	IRQ        *rawIRQ       `yaml:"irq"`
	NIC        *rawNIC       `yaml:"nic"`
	CState     *rawCState    `yaml:"cstate"`
	Load       *rawLoad      `yaml:"load"`
	SMTSibling *rawSMT       `yaml:"smt-sibling"`
	Power      *rawPower     `yaml:"power"`
	Tuned      *string       `yaml:"tuned"`
	Requires   []string      `yaml:"requires"`
}

// rawArm is a name and the knobs of rawKnobs (not embedded: the decoder
// cannot set an unexported embedded struct).
type rawArm struct {
	Name       *string       `yaml:"name"`
	Request    *string       `yaml:"request"`
	Responder  *rawResponder `yaml:"responder"`
	IRQ        *rawIRQ       `yaml:"irq"`
	NIC        *rawNIC       `yaml:"nic"`
	CState     *rawCState    `yaml:"cstate"`
	Load       *rawLoad      `yaml:"load"`
	SMTSibling *rawSMT       `yaml:"smt-sibling"`
	Power      *rawPower     `yaml:"power"`
	Tuned      *string       `yaml:"tuned"`
	Requires   []string      `yaml:"requires"`
}

func (a *rawArm) knobs() *rawKnobs {
	return &rawKnobs{a.Responder, a.IRQ, a.NIC, a.CState, a.Load, a.SMTSibling, a.Power, a.Tuned, a.Requires}
}

type rawResponder struct {
	CPU   any     `yaml:"cpu"` // a CPU number, quietest, or {quietest: LIST, window: D}
	Sched *string `yaml:"sched"`
	Poll  *string `yaml:"poll"`
}

type rawIRQ struct {
	CPUs any `yaml:"cpus"`
}

type rawNIC struct {
	Coalesce *rawCoalesce `yaml:"coalesce"`
	Ring     *rawRing     `yaml:"ring"`
	Channels *int         `yaml:"channels"`
}

type rawCoalesce struct {
	RxUsecs    *int  `yaml:"rx-usecs"`
	TxUsecs    *int  `yaml:"tx-usecs"`
	RxFrames   *int  `yaml:"rx-frames"`
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
		return nil, ErrorList{x.errAt(pos{1, 1}, "the file is empty", "start from scenarios/demo.yaml; README.md (Scenario file format) lists every field")}
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

// docPos is where a document starts: its "---" when it has one.
func docPos(d *ast.DocumentNode) pos {
	if d.Start != nil && d.Start.Position != nil {
		return pos{d.Start.Position.Line, d.Start.Position.Column}
	}
	return nodePos(d.Body)
}

func stripComments(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") && t != "---" {
			b.WriteString(l)
		}
	}
	return b.String()
}

// yamlErr turns a goccy error into an *Error with a position and a hint.
func (x *posIndex) yamlErr(err error) *Error {
	var (
		syn *yaml.SyntaxError
		typ *yaml.TypeError
		ovf *yaml.OverflowError
		dup *yaml.DuplicateKeyError
		unk *yaml.UnknownFieldError
		unx *yaml.UnexpectedNodeTypeError
	)
	at := func(t *token.Token) pos {
		if t == nil || t.Position == nil {
			return pos{1, 1}
		}
		return pos{t.Position.Line, t.Position.Column}
	}
	switch {
	case errors.As(err, &unk):
		p := at(unk.Token)
		path, _ := x.pathAt(p)
		name := path
		if i := strings.LastIndexAny(path, ".]"); i >= 0 {
			name = path[i+1:]
		}
		if name == "" {
			name = unk.Token.Value
		}
		parent := parentPath(path)
		known := knownKeys(parent)
		where := "at the top level"
		if parent != "" {
			where = "in " + parent
		}
		hint := "known fields " + where + ": " + strings.Join(known, ", ")
		if d := closest(name, known); d != "" {
			hint = fmt.Sprintf("did you mean %q? %s", d, hint)
		}
		return x.errAt(p, fmt.Sprintf("unknown field %q %s", name, where), hint)
	case errors.As(err, &dup):
		return x.errAt(at(dup.Token), dup.Message, "a key may appear once in a mapping: delete or merge the repeated one")
	case errors.As(err, &typ):
		p := at(typ.Token)
		path, _ := x.pathAt(p)
		want := kindName(typ.DstType)
		got := "a " + strings.TrimPrefix(fmt.Sprint(typ.SrcType), "[]interface {}")
		if typ.SrcType != nil {
			got = kindName(typ.SrcType)
		}
		reason := fmt.Sprintf("want %s, got %s", want, got)
		if path != "" {
			reason = path + ": " + reason
		}
		return x.errAt(p, reason, "README.md (Scenario file format) gives the type of each field")
	case errors.As(err, &ovf):
		p := at(ovf.Token)
		return x.errAt(p, fmt.Sprintf("number %s is out of range", ovf.SrcNum), "use a value README.md (Scenario file format) allows for this field")
	case errors.As(err, &unx):
		p := at(unx.Token)
		path, _ := x.pathAt(p)
		reason := fmt.Sprintf("want %s, got %s", nodeKindName(unx.Expected), nodeKindName(unx.Actual))
		if path != "" {
			reason = path + ": " + reason
		}
		return x.errAt(p, reason, "check the indentation: nested fields go on their own lines, indented under their parent")
	case errors.As(err, &syn) && strings.Contains(syn.Message, "already defined"):
		// The parser reports duplicate keys as syntax errors.
		return x.errAt(at(syn.Token), syn.Message, "a key may appear once in a mapping: delete or merge the repeated one")
	case errors.As(err, &syn):
		return x.errAt(at(syn.Token), "YAML syntax: "+syn.Message, "check indentation (spaces, not tabs), colons after keys, and quotes around values with ':' or '#'")
	}
	var ye yaml.Error
	if errors.As(err, &ye) {
		return x.errAt(at(ye.GetToken()), ye.GetMessage(), "")
	}
	// Errors without a token (should not happen with the options used):
	// still point at the file.
	return x.errAt(pos{1, 1}, err.Error(), "")
}

func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}

func kindName(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64, reflect.Uint32:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping (key: value lines)"
	}
	return "a " + t.String()
}

func nodeKindName(t ast.NodeType) string {
	switch t {
	case ast.MappingType, ast.MappingValueType:
		return "a mapping (key: value lines)"
	case ast.SequenceType:
		return "a list"
	case ast.StringType:
		return "a string"
	case ast.IntegerType:
		return "a whole number"
	case ast.BoolType:
		return "true or false"
	case ast.NullType:
		return "nothing"
	}
	return strings.ToLower(t.String())
}

// knownKeys lists the fields allowed under path, from the raw types.
func knownKeys(path string) []string {
	t := reflect.TypeOf(rawScenario{})
	if path != "" {
		for _, seg := range splitPath(path) {
			for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
				if t.Kind() == reflect.Slice && !strings.HasPrefix(seg, "[") {
					return nil
				}
				if t.Kind() == reflect.Slice {
					t = t.Elem()
					seg = ""
					break
				}
				t = t.Elem()
			}
			if seg == "" {
				continue
			}
			switch t.Kind() {
			case reflect.Map:
				t = t.Elem()
			case reflect.Struct:
				f, ok := fieldByTag(t, seg)
				if !ok {
					return nil
				}
				t = f
			default:
				return nil
			}
		}
	}
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	var collect func(reflect.Type)
	collect = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("yaml")
			if tag == ",inline" {
				collect(f.Type)
				continue
			}
			out = append(out, tag)
		}
	}
	collect(t)
	return out
}

func fieldByTag(t reflect.Type, tag string) (reflect.Type, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		ft := f.Tag.Get("yaml")
		if ft == ",inline" {
			if r, ok := fieldByTag(f.Type, tag); ok {
				return r, true
			}
			continue
		}
		if ft == tag {
			return f.Type, true
		}
	}
	return nil, false
}

// splitPath splits "arms[2].nic.ring" into "arms", "[2]", "nic", "ring".
func splitPath(p string) []string {
	var out []string
	for _, part := range strings.Split(p, ".") {
		for {
			i := strings.IndexByte(part, '[')
			if i < 0 {
				break
			}
			if i > 0 {
				out = append(out, part[:i])
			}
			j := strings.IndexByte(part, ']')
			if j < i {
				break
			}
			out = append(out, part[i:j+1])
			part = part[j+1:]
		}
		if part != "" {
			out = append(out, part)
		}
	}
	return out
}

// closest returns the candidate within edit distance 2 of s, if any.
func closest(s string, cands []string) string {
	best, bestD := "", 3
	for _, c := range cands {
		if d := editDistance(strings.ToLower(s), c); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" {
		// "rx_usecs" for "rx-usecs": the other spelling of a separator.
		alt := strings.ReplaceAll(s, "_", "-")
		if slices.Contains(cands, alt) {
			return alt
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// checker collects the static problems of one file while converting it.
type checker struct {
	x    *posIndex
	errs ErrorList
}

func (c *checker) add(e *Error) { c.errs = append(c.errs, e) }

func (c *checker) val(path, reason, hint string) { c.add(c.x.valErr(path, reason, hint)) }
func (c *checker) key(path, reason, hint string) { c.add(c.x.keyErr(path, reason, hint)) }

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func (c *checker) scenario(r *rawScenario) *Scenario {
	s := &Scenario{
		Timestamps: TimestampsAuto,
		Rounds:     DefaultRounds,
		Order:      Order{Kind: OrderRotate},
	}
	if r.Name == nil || strings.TrimSpace(*r.Name) == "" {
		c.add(c.x.errAt(pos{1, 1}, "the scenario has no name", "add a line `name: my-test` (used in the run directory name)"))
	} else if !nameRE.MatchString(*r.Name) {
		c.val("name", fmt.Sprintf("name %q may hold only letters, digits, '.', '_' and '-'", *r.Name), "it becomes part of the run directory name; put prose in description:")
	} else {
		s.Name = *r.Name
	}
	if r.Description != nil {
		s.Description = *r.Description
	}
	if r.Emulate != nil {
		if *r.Emulate != "netns" {
			c.val("emulate", fmt.Sprintf("emulate: %q is not a known topology", *r.Emulate), "the only emulated topology is `emulate: netns`; for real hosts delete the line and list hosts:")
		} else {
			s.Emulate = "netns"
		}
	}
	s.Hosts = c.hosts(r, s.Emulate != "")
	s.Traffic = c.traffic(r.Traffic)
	if r.Timestamps != nil {
		switch m := TimestampMode(*r.Timestamps); m {
		case TimestampsAuto, TimestampsHardware, TimestampsSoftware:
			s.Timestamps = m
		default:
			c.val("timestamps", fmt.Sprintf("timestamps: %q is not a timestamp mode", *r.Timestamps), "use hardware, software or auto (the best the NICs grant)")
		}
		if s.Emulate != "" && s.Timestamps == TimestampsHardware {
			c.val("timestamps", "the emulated topology (veth) has no hardware timestamps", "use timestamps: software (or auto) with emulate: netns")
		}
	}
	if r.Rounds != nil {
		if *r.Rounds < 1 || *r.Rounds > 1000 {
			c.val("rounds", fmt.Sprintf("rounds: %d is out of range", *r.Rounds), "use 1..1000; 3-5 rounds let a difference show as non-overlapping ranges")
		} else {
			s.Rounds = *r.Rounds
		}
	}
	if r.Order != nil {
		if o, err := parseOrder(*r.Order); err != nil {
			c.val("order", err.Error(), "use rotate (default), sequential or random:SEED (e.g. random:42)")
		} else {
			s.Order = o
		}
	}
	if r.RequireCheck != nil {
		s.RequireCheck = *r.RequireCheck
	}
	if r.Defaults != nil {
		s.Defaults = c.knobs("defaults", r.Defaults)
	}
	if len(r.Arms) == 0 {
		if c.x.has("arms") {
			c.val("arms", "arms: is empty", "list at least one arm: `- name: baseline`")
		} else {
			c.add(c.x.errAt(pos{1, 1}, "the scenario has no arms", "add `arms:` with at least one `- name: ...` entry"))
		}
	}
	seen := map[string]string{}
	for i, ra := range r.Arms {
		p := fmt.Sprintf("arms[%d]", i)
		if ra == nil {
			c.val(p, "empty arm", "give the arm a name: `- name: baseline`")
			continue
		}
		a := Arm{}
		switch {
		case ra.Name == nil:
			c.val(p, fmt.Sprintf("arm %d has no name", i+1), "add `name: ...` to the arm")
		case !nameRE.MatchString(*ra.Name):
			c.val(p+".name", fmt.Sprintf("arm name %q may hold only letters, digits, '.', '_' and '-'", *ra.Name), "arm names become file names in the run directory")
		default:
			a.Name = *ra.Name
			if prev, dup := seen[a.Name]; dup {
				pe, _ := c.x.lookup(prev + ".name")
				c.val(p+".name", fmt.Sprintf("arm name %q is used twice (first at line %d)", a.Name, pe.val.line), "give every arm its own name")
			}
			seen[a.Name] = p
		}
		a.Knobs = c.knobs(p, ra.knobs())
		a.Request = c.armRequest(p, ra.Request, s.Traffic.Request)
		a.Effective = merge(s.Defaults, a.Knobs)
		c.effective(p, a.Effective)
		s.Arms = append(s.Arms, a)
	}
	if r.Baseline != nil {
		if _, ok := seen[*r.Baseline]; !ok {
			names := make([]string, 0, len(s.Arms))
			for _, a := range s.Arms {
				names = append(names, a.Name)
			}
			hint := "arms: " + strings.Join(names, ", ")
			if d := closest(*r.Baseline, names); d != "" {
				hint = fmt.Sprintf("did you mean %q? %s", d, hint)
			}
			c.val("baseline", fmt.Sprintf("baseline %q names no arm", *r.Baseline), hint)
		} else {
			s.Baseline = *r.Baseline
		}
	} else if len(s.Arms) > 0 {
		s.Baseline = s.Arms[0].Name
	}
	c.requests(r, s)
	c.crossChecks(s)
	return s
}

func parseOrder(v string) (Order, error) {
	switch v {
	case "rotate":
		return Order{Kind: OrderRotate}, nil
	case "sequential":
		return Order{Kind: OrderSequential}, nil
	}
	if seed, ok := strings.CutPrefix(v, "random:"); ok {
		n, err := strconv.ParseUint(seed, 10, 64)
		if err != nil {
			return Order{}, fmt.Errorf("order: %q: the seed must be a whole number >= 0", v)
		}
		return Order{Kind: OrderRandom, Seed: n}, nil
	}
	if v == "random" {
		return Order{}, fmt.Errorf("order: random needs a seed so that the run can be repeated")
	}
	return Order{}, fmt.Errorf("order: %q is not an order rule", v)
}

var roleNames = []Role{RoleSender, RoleResponder, RoleCapture}

func (c *checker) hosts(r *rawScenario, emulate bool) []Host {
	if emulate {
		if r.Hosts != nil {
			c.key("hosts", "emulate: netns builds its own hosts; hosts: cannot be given too", "delete hosts: to use the emulated topology, or delete emulate: to use real hosts")
		}
		return []Host{
			{Name: EmulatedResponder, Via: "ip netns exec", Roles: []Role{RoleResponder}},
			{Name: EmulatedSender, Via: "ip netns exec", Roles: []Role{RoleSender}},
			{Name: EmulatedCapture, Via: "ip netns exec", Roles: []Role{RoleCapture}},
		}
	}
	if len(r.Hosts) == 0 {
		if c.x.has("hosts") {
			c.val("hosts", "hosts: is empty", "name at least one host with `via: local` and roles [sender, responder]")
		} else {
			c.add(c.x.errAt(pos{1, 1}, "the scenario has no hosts and no emulate:", "add `emulate: netns` to run on this machine, or hosts: with via and roles"))
		}
		return nil
	}
	names := make([]string, 0, len(r.Hosts))
	for n := range r.Hosts {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Host
	count := map[Role][]string{}
	for _, n := range names {
		rh := r.Hosts[n]
		p := "hosts." + n
		if !nameRE.MatchString(n) {
			c.key(p, fmt.Sprintf("host name %q may hold only letters, digits, '.', '_' and '-'", n), "")
			continue
		}
		h := Host{Name: n}
		if rh == nil {
			c.key(p, fmt.Sprintf("host %s has no via: and roles:", n), "e.g. `"+n+": {via: local, roles: [sender]}`")
			continue
		}
		if rh.Via == nil {
			c.key(p, fmt.Sprintf("host %s has no via:", n), "use via: local, or the command that reaches it: \"ssh HOST\", \"ip netns exec NS\", \"kubectl exec -i POD --\"")
		} else {
			h.Via = strings.TrimSpace(*rh.Via)
			if cmd, err := parseVia(h.Via); err != nil {
				c.val(p+".via", err.Error(), "use local, \"ssh HOST\", \"ip netns exec NS\" or \"kubectl exec -i POD --\"; rig appends `rig agent --stdio`")
			} else {
				h.Command = cmd
			}
		}
		if len(rh.Roles) == 0 {
			c.key(p, fmt.Sprintf("host %s has no roles", n), "add roles: with one or more of sender, responder, capture")
		}
		for i, role := range rh.Roles {
			rp := fmt.Sprintf("%s.roles[%d]", p, i)
			if !slices.Contains(roleNames, Role(role)) {
				c.val(rp, fmt.Sprintf("unknown role %q", role), "roles are sender, responder and capture")
				continue
			}
			if h.Has(Role(role)) {
				c.val(rp, fmt.Sprintf("role %s is listed twice", role), "")
				continue
			}
			h.Roles = append(h.Roles, Role(role))
			count[Role(role)] = append(count[Role(role)], n)
		}
		if rh.Iface != nil {
			if !validIfname(*rh.Iface) {
				c.val(p+".iface", fmt.Sprintf("%q is not an interface name", *rh.Iface), "Linux interface names are 1-15 characters without '/', ':' or spaces")
			} else {
				h.Iface = *rh.Iface
			}
		}
		if rh.TakeOverPTP != nil {
			h.TakeOverPTP = *rh.TakeOverPTP
		}
		if h.Has(RoleCapture) && (h.Has(RoleSender) || h.Has(RoleResponder)) {
			c.val(p+".roles", fmt.Sprintf("host %s captures on the interface it sends or answers on: a tap there sees the host's own packets as outgoing, with software stamps at best, and its \"turnaround\" would be the sender's round trip", n),
				"give the capture its own host entry on the mirror/SPAN port (e.g. cap: {via: local, roles: [capture], iface: MIRROR_PORT}), or remove the capture role")
		}
		if rh.AllowMgmt != nil {
			h.AllowMgmt = *rh.AllowMgmt
		}
		c.hostTraffic(p, rh, &h)
		out = append(out, h)
	}
	// Two entries may reach one machine (one per NIC port): the capture's
	// port must not be the sender's or the responder's.
	for _, cp := range out {
		if !cp.Has(RoleCapture) || cp.Iface == "" {
			continue
		}
		for _, o := range out {
			if o.Name != cp.Name && o.Via == cp.Via && o.Iface == cp.Iface && (o.Has(RoleSender) || o.Has(RoleResponder)) {
				c.val("hosts."+cp.Name+".iface", fmt.Sprintf("the capture captures on %s, which host %s (via %s) sends or answers on: the capture needs its own mirror/SPAN port", cp.Iface, o.Name, o.Via),
					"give the capture the NIC port the switch mirrors both directions to, or remove the capture role")
			}
		}
	}
	for _, role := range []Role{RoleSender, RoleResponder} {
		if len(count[role]) == 0 && len(c.errs) == 0 {
			c.key("hosts", fmt.Sprintf("no host has the %s role", role), fmt.Sprintf("add %s to the roles of one host", role))
		}
	}
	for _, role := range roleNames {
		if len(count[role]) > 1 {
			c.val("hosts."+count[role][1], fmt.Sprintf("the %s role is on two hosts (%s)", role, strings.Join(count[role], ", ")), "one host plays each role")
		}
	}
	return out
}

// parseVia checks the command that reaches a host. It is split on spaces
// (no shell): rig runs it directly and appends `rig agent --stdio`.
func parseVia(v string) ([]string, error) {
	if v == "local" {
		return nil, nil
	}
	if v == "" {
		return nil, fmt.Errorf("via is empty")
	}
	if strings.ContainsAny(v, "|;&$`<>()\"'\\") {
		return nil, fmt.Errorf("via %q has shell syntax; it is run as a plain command, not through a shell", v)
	}
	f := strings.Fields(v)
	switch f[0] {
	case "ssh":
		if len(f) < 2 || strings.HasPrefix(f[len(f)-1], "-") {
			return nil, fmt.Errorf("via %q names no host to ssh to", v)
		}
	case "ip":
		// "ip netns exec NS", optionally followed by the command that
		// reaches the host from inside NS (e.g. ssh from a lab namespace).
		if len(f) < 4 || f[1] != "netns" || f[2] != "exec" {
			return nil, fmt.Errorf("via %q: want \"ip netns exec NS\" [COMMAND]", v)
		}
	case "kubectl":
		if !slices.Contains(f, "-i") && !slices.Contains(f, "--stdin") {
			return nil, fmt.Errorf("via %q lacks -i: the agent talks over stdin", v)
		}
		if f[len(f)-1] != "--" {
			return nil, fmt.Errorf("via %q must end with -- so that the agent's flags go to the agent", v)
		}
	}
	return f, nil
}

func validIfname(s string) bool {
	return s != "" && len(s) <= 15 && s != "." && s != ".." && !strings.ContainsAny(s, "/: \t\n")
}

func (c *checker) traffic(r *rawTraffic) Traffic {
	t := Traffic{Interval: DefaultInterval, Count: DefaultCount, Size: DefaultSize, Warmup: DefaultWarmup, ReplyTimeout: DefaultReplyTimeout}
	if r == nil {
		c.add(c.x.errAt(pos{1, 1}, "the scenario has no traffic:", "add traffic: with at least group: \"239.1.1.1:5000\""))
		return t
	}
	// A missing group: is checked with the arms' request modes (requests).
	if r.Group != nil {
		if ap, err := parseGroup(*r.Group); err != nil {
			c.val("traffic.group", "group: "+err.Error(), "write an IPv4 multicast address and port, e.g. \"239.1.1.1:5000\"")
		} else {
			t.Group = ap
		}
	}
	t.Request = c.trafficRequest(r)
	if r.Reply != nil && *r.Reply != "unicast" {
		if ap, err := parseGroup(*r.Reply); err != nil {
			c.val("traffic.reply", "reply: "+err.Error(), "use unicast (the default) or a multicast group:port such as \"239.1.1.2:5001\"")
		} else if ap == t.Group {
			c.val("traffic.reply", "reply group equals the request group", "use a different group or port for replies, or unicast")
		} else {
			t.Reply = ap
		}
	}
	if r.Interval != nil {
		if d, ok := c.duration("traffic.interval", r.Interval); ok {
			if d < time.Microsecond || d > 10*time.Second {
				c.val("traffic.interval", fmt.Sprintf("interval %v is out of range", d), "use 1µs..10s; the seeds use 1ms")
			} else {
				t.Interval = d
			}
		}
	}
	if r.ReplyTimeout != nil {
		if d, ok := c.duration("traffic.reply-timeout", r.ReplyTimeout); ok {
			if d < time.Microsecond || d > time.Minute {
				c.val("traffic.reply-timeout", fmt.Sprintf("reply-timeout %v is out of range", d), "use 1µs..1m; a reply later than this counts as lost")
			} else {
				t.ReplyTimeout = d
			}
		}
	}
	if r.Count != nil {
		if *r.Count < 1 || *r.Count > 100_000_000 {
			c.val("traffic.count", fmt.Sprintf("count %d is out of range", *r.Count), "use 1..100000000 requests per round (default 10000)")
		} else {
			t.Count = *r.Count
		}
	}
	if r.Size != nil {
		if err := wire.CheckSize(*r.Size); err != nil {
			c.val("traffic.size", err.Error(), fmt.Sprintf("the rig header takes %d bytes; 64 is the default", wire.HeaderLen))
		} else {
			t.Size = *r.Size
		}
	}
	if r.Warmup != nil {
		if *r.Warmup < 0 {
			c.val("traffic.warmup", fmt.Sprintf("warmup %d is negative", *r.Warmup), "use 0 or more (default 2)")
		} else {
			t.Warmup = *r.Warmup
		}
	}
	if t.Warmup >= t.Count {
		p := "traffic.warmup"
		if r.Warmup == nil {
			p = "traffic.count"
		}
		c.val(p, fmt.Sprintf("warmup (%d) leaves no samples of count (%d)", t.Warmup, t.Count), "count includes the warm-up; make count larger than warmup")
	}
	return t
}

func parseGroup(s string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(s)
	if err != nil {
		return ap, fmt.Errorf("%q is not address:port", s)
	}
	if !ap.Addr().Is4() || !ap.Addr().IsMulticast() {
		return ap, fmt.Errorf("%s is not an IPv4 multicast address (224.0.0.0/4)", ap.Addr())
	}
	if ap.Port() == 0 {
		return ap, fmt.Errorf("port 0 in %q", s)
	}
	return ap, nil
}

// duration parses a duration written as a string ("1ms", "250us", "1µs").
// A bare number is refused: its unit would be a guess.
func (c *checker) duration(path string, v any) (time.Duration, bool) {
	s, ok := v.(string)
	if !ok {
		c.val(path, fmt.Sprintf("%v has no unit", v), fmt.Sprintf("write a duration with its unit, e.g. %vms or %vus", v, v))
		return 0, false
	}
	d, err := time.ParseDuration(strings.ReplaceAll(strings.TrimSpace(s), " ", ""))
	if err != nil {
		c.val(path, fmt.Sprintf("%q is not a duration", s), "write a number and a unit: ns, us (or µs), ms, s, e.g. 1ms or 250us")
		return 0, false
	}
	if d <= 0 {
		c.val(path, fmt.Sprintf("duration %q must be positive", s), "write a duration above zero, e.g. 1ms")
		return 0, false
	}
	return d, true
}

// cpuList accepts "0-3,8", a single number, or a YAML list of numbers.
func (c *checker) cpuList(path string, v any) ([]int, bool) {
	hint := `write a CPU list as "0-3,8" or [0, 1, 2]`
	switch x := v.(type) {
	case string:
		l, err := cpulist.Parse(x)
		if err != nil {
			c.val(path, err.Error(), hint)
			return nil, false
		}
		if len(l) == 0 {
			c.val(path, "the CPU list is empty", hint)
			return nil, false
		}
		return l, true
	case uint64, int64, int, float64:
		return c.cpuList(path, []any{x})
	case []any:
		if len(x) == 0 {
			c.val(path, "the CPU list is empty", hint)
			return nil, false
		}
		var out []int
		for i, e := range x {
			ep := fmt.Sprintf("%s[%d]", path, i)
			var n int64
			switch y := e.(type) {
			case uint64:
				if y > math.MaxInt32 {
					n = math.MaxInt64
				} else {
					n = int64(y)
				}
			case int64:
				n = y
			case int:
				n = int64(y)
			default:
				c.val(ep, fmt.Sprintf("%v is not a CPU number", e), hint)
				return nil, false
			}
			if n < 0 || n > cpulist.MaxCPU {
				c.val(ep, fmt.Sprintf("CPU %d is out of range", n), fmt.Sprintf("CPU numbers are 0..%d", cpulist.MaxCPU))
				return nil, false
			}
			out = append(out, int(n))
		}
		slices.Sort(out)
		return slices.Compact(out), true
	}
	c.val(path, "want a CPU list", hint)
	return nil, false
}

func (c *checker) u32(path string, v *int, max int, what string) *uint32 {
	if v == nil {
		return nil
	}
	if *v < 0 || *v > max {
		c.val(path, fmt.Sprintf("%s %d is out of range", what, *v), fmt.Sprintf("use 0..%d", max))
		return nil
	}
	u := uint32(*v)
	return &u
}

func (c *checker) knobs(p string, r *rawKnobs) Knobs {
	var k Knobs
	if rr := r.Responder; rr != nil {
		rp := p + ".responder"
		if rr.CPU != nil {
			k.Responder.CPU, k.Responder.Quietest = c.responderCPU(rp+".cpu", rr.CPU)
		}
		if rr.Sched != nil {
			if sc, err := parseSched(*rr.Sched); err != nil {
				c.val(rp+".sched", err.Error(), "use other, or fifo:N with N in 1..99 (e.g. fifo:50)")
			} else {
				k.Responder.Sched = &sc
			}
		}
		if rr.Poll != nil {
			if po, err := parsePoll(*rr.Poll); err != nil {
				c.val(rp+".poll", err.Error(), "use block, busy, or busy-poll:µs (e.g. busy-poll:50)")
			} else {
				k.Responder.Poll = &po
			}
		}
	}
	if r.IRQ != nil {
		ip := p + ".irq"
		if r.IRQ.CPUs == nil {
			c.key(ip, "irq has no cpus:", `add cpus: "0" (the CPUs for the responder NIC's queue IRQs)`)
		} else if l, ok := c.cpuList(ip+".cpus", r.IRQ.CPUs); ok {
			k.IRQ = &IRQ{CPUs: l}
		}
	}
	if n := r.NIC; n != nil {
		np := p + ".nic"
		if co := n.Coalesce; co != nil {
			cp := np + ".coalesce"
			k.NIC.Coalesce = Coalesce{
				RxUsecs:    c.u32(cp+".rx-usecs", co.RxUsecs, 1_000_000, "rx-usecs"),
				TxUsecs:    c.u32(cp+".tx-usecs", co.TxUsecs, 1_000_000, "tx-usecs"),
				RxFrames:   c.u32(cp+".rx-frames", co.RxFrames, 1_000_000, "rx-frames"),
				AdaptiveRx: co.AdaptiveRx,
				AdaptiveTx: co.AdaptiveTx,
			}
			if *co == (rawCoalesce{}) {
				c.key(cp, "coalesce sets nothing", "set one of rx-usecs, tx-usecs, rx-frames, adaptive-rx, adaptive-tx, or delete it")
			}
		}
		if rg := n.Ring; rg != nil {
			gp := np + ".ring"
			k.NIC.Ring = Ring{RX: c.u32(gp+".rx", rg.RX, 1<<20, "ring rx"), TX: c.u32(gp+".tx", rg.TX, 1<<20, "ring tx")}
			if rg.RX != nil && *rg.RX == 0 {
				c.val(gp+".rx", "ring rx 0 would drop every packet", "use a size the NIC supports (ethtool -g IFACE)")
				k.NIC.Ring.RX = nil
			}
			if rg.TX != nil && *rg.TX == 0 {
				c.val(gp+".tx", "ring tx 0 would drop every packet", "use a size the NIC supports (ethtool -g IFACE)")
				k.NIC.Ring.TX = nil
			}
			if *rg == (rawRing{}) {
				c.key(gp, "ring sets nothing", "set rx and/or tx, or delete it")
			}
		}
		if n.Channels != nil {
			if *n.Channels < 1 || *n.Channels > 4096 {
				c.val(np+".channels", fmt.Sprintf("channels %d is out of range", *n.Channels), "use 1..4096 (ethtool -l IFACE shows the maximum)")
			} else {
				ch := uint32(*n.Channels)
				k.NIC.Channels = &ch
			}
		}
	}
	if cs := r.CState; cs != nil {
		k.CState = c.cstate(p+".cstate", cs)
	}
	if l := r.Load; l != nil {
		lp := p + ".load"
		ld := &StressLoad{}
		if l.StressNG == nil {
			c.key(lp, "load has no stress-ng:", `add stress-ng: "--cpu 1 --cpu-method fft"`)
			ld = nil
		} else if args, ok := c.stressArgs(lp+".stress-ng", *l.StressNG, "load.cpus"); ok {
			ld.StressNG = args
		} else {
			ld = nil
		}
		if l.CPUs != nil {
			if cl, ok := c.cpuList(lp+".cpus", l.CPUs); ok && ld != nil {
				ld.CPUs = cl
			}
		}
		k.Load = ld
	}
	if sm := r.SMTSibling; sm != nil {
		sp := p + ".smt-sibling"
		if sm.Load == nil {
			c.key(sp, "smt-sibling has no load:", `add load: "--cpu 1 --cpu-method fft"`)
		} else if args, ok := c.stressArgs(sp+".load", *sm.Load, "nothing: rig pins it to the sibling"); ok {
			k.SMTSibling = &SMTSibling{StressNG: args}
		}
	}
	if pw := r.Power; pw != nil {
		k.Power = c.power(p+".power", pw)
	}
	if r.Tuned != nil {
		if t := strings.TrimSpace(*r.Tuned); t == "" || strings.ContainsAny(t, "/\\;&|$`'\"<>") {
			c.val(p+".tuned", fmt.Sprintf("tuned: %q is not a profile name", *r.Tuned), "name a profile `tuned-adm list` shows, e.g. network-latency")
		} else {
			k.Tuned = &t
		}
	}
	for i, q := range r.Requires {
		qp := fmt.Sprintf("%s.requires[%d]", p, i)
		if !slices.Contains(requirements, Requirement(q)) {
			names := make([]string, len(requirements))
			for j, r := range requirements {
				names[j] = string(r)
			}
			hint := "known requirements: " + strings.Join(names, ", ")
			if d := closest(q, names); d != "" {
				hint = fmt.Sprintf("did you mean %q? %s", d, hint)
			}
			c.val(qp, fmt.Sprintf("unknown requirement %q", q), hint)
			continue
		}
		if !slices.Contains(k.Requires, Requirement(q)) {
			k.Requires = append(k.Requires, Requirement(q))
		}
	}
	return k
}

func parseSched(v string) (Sched, error) {
	if v == "other" {
		return Sched{Policy: "other"}, nil
	}
	if pr, ok := strings.CutPrefix(v, "fifo:"); ok {
		n, err := strconv.Atoi(pr)
		if err != nil || n < 1 || n > 99 {
			return Sched{}, fmt.Errorf("sched %q: fifo priority must be 1..99", v)
		}
		return Sched{Policy: "fifo", Priority: n}, nil
	}
	if v == "fifo" {
		return Sched{}, fmt.Errorf("sched fifo needs a priority")
	}
	return Sched{}, fmt.Errorf("sched %q is not a policy", v)
}

func parsePoll(v string) (Poll, error) {
	switch v {
	case "block", "busy":
		return Poll{Mode: v}, nil
	}
	if us, ok := strings.CutPrefix(v, "busy-poll:"); ok {
		n, err := strconv.Atoi(us)
		if err != nil || n < 1 || n > 1_000_000 {
			return Poll{}, fmt.Errorf("poll %q: the SO_BUSY_POLL time must be 1..1000000 µs", v)
		}
		return Poll{Mode: "busy-poll", BusyPollUS: n}, nil
	}
	if v == "busy-poll" {
		return Poll{}, fmt.Errorf("poll busy-poll needs a time in µs")
	}
	return Poll{}, fmt.Errorf("poll %q is not a poll mode", v)
}

func (c *checker) cstate(cp string, cs *rawCState) *CState {
	var set []string
	if cs.MaxLatencyUS != nil {
		set = append(set, "max-latency-us")
	}
	if cs.Disable != nil {
		set = append(set, "disable")
	}
	if cs.Poll != nil {
		set = append(set, "poll")
	}
	switch {
	case len(set) == 0:
		c.key(cp, "cstate sets nothing", "set one of max-latency-us, disable: [names], poll: true; leave cstate out to keep the host's idle states")
		return nil
	case len(set) > 1:
		c.key(cp+"."+set[1], fmt.Sprintf("cstate sets both %s and %s", set[0], set[1]), "set exactly one: they are different ways of limiting idle states")
		return nil
	}
	out := &CState{}
	switch {
	case cs.MaxLatencyUS != nil:
		if *cs.MaxLatencyUS < 0 || *cs.MaxLatencyUS > 2_000_000_000 {
			c.val(cp+".max-latency-us", fmt.Sprintf("max-latency-us %d is out of range", *cs.MaxLatencyUS), "use 0 (poll only) or more µs")
			return nil
		}
		out.MaxLatencyUS = cs.MaxLatencyUS
	case cs.Disable != nil:
		if len(cs.Disable) == 0 {
			c.val(cp+".disable", "disable lists no state", "name cpuidle states, e.g. [C1] (see /sys/devices/system/cpu/cpu0/cpuidle/state*/name)")
			return nil
		}
		for i, n := range cs.Disable {
			if n == "POLL" {
				c.val(fmt.Sprintf("%s.disable[%d]", cp, i), "POLL cannot be disabled: it is where a CPU with no other state idles", "list only the states to turn off, e.g. [C1E, C6]")
				return nil
			}
			if strings.TrimSpace(n) == "" {
				c.val(fmt.Sprintf("%s.disable[%d]", cp, i), "empty state name", "")
				return nil
			}
		}
		out.Disable = slices.Compact(slices.Clone(cs.Disable))
	case cs.Poll != nil:
		if !*cs.Poll {
			c.val(cp+".poll", "poll: false changes nothing", "use poll: true, or leave cstate out")
			return nil
		}
		out.Poll = true
	}
	return out
}

// power checks the power knobs of one arm (or defaults) in the file.
func (c *checker) power(pp string, r *rawPower) *Power {
	out := &Power{MinPerfPct: r.MinPerfPct, MaxPerfPct: r.MaxPerfPct}
	if r.CPUs != nil {
		if l, ok := c.cpuList(pp+".cpus", r.CPUs); ok {
			out.CPUs = l
		}
	}
	if r.Governor != nil {
		if g := strings.TrimSpace(*r.Governor); g == "" || strings.ContainsAny(g, " /\t\n") {
			c.val(pp+".governor", fmt.Sprintf("governor %q is not a governor name", *r.Governor), "e.g. performance, powersave, schedutil (scaling_available_governors lists the host's)")
		} else {
			out.Governor = &g
		}
	}
	if r.Turbo != nil {
		switch v := r.Turbo.(type) {
		case bool:
			out.Turbo = &v
		case string:
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "on":
				out.Turbo = ptrTo(true)
			case "off":
				out.Turbo = ptrTo(false)
			}
		}
		if out.Turbo == nil {
			c.val(pp+".turbo", fmt.Sprintf("turbo: %v is neither on nor off", r.Turbo), "write turbo: on or turbo: off")
		}
	}
	for _, x := range []struct {
		name string
		v    **int
	}{{"min-perf-pct", &out.MinPerfPct}, {"max-perf-pct", &out.MaxPerfPct}} {
		if *x.v != nil && (**x.v < 1 || **x.v > 100) {
			c.val(pp+"."+x.name, fmt.Sprintf("%s %d is out of range", x.name, **x.v), "use 1..100 (percent of the highest, turbo, performance)")
			*x.v = nil
		}
	}
	for _, x := range []struct {
		name string
		raw  any
		dst  **int64
	}{{"min-freq", r.MinFreq, &out.MinFreqKHz}, {"max-freq", r.MaxFreq, &out.MaxFreqKHz}} {
		if x.raw == nil {
			continue
		}
		k, err := parseFreq(x.raw)
		if err != nil {
			c.val(pp+"."+x.name, fmt.Sprintf("%s: %v", x.name, err), "write a frequency with its unit, e.g. 2.6GHz, 2600MHz or 2600000kHz")
			continue
		}
		*x.dst = &k
	}
	if *r == (rawPower{}) {
		c.key(pp, "power sets nothing", "set one of governor, turbo, min-perf-pct, max-perf-pct, min-freq, max-freq, or delete it")
		return nil
	}
	return out
}

// parseFreq reads "2.6GHz", "2600 MHz" or "2600000kHz" as kHz, the unit
// of cpufreq's files. A bare number is refused: its unit would be a guess.
func parseFreq(v any) (int64, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("%v has no unit", v)
	}
	t := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), " ", ""))
	mult := 0.0
	for _, u := range []struct {
		suf string
		m   float64
	}{{"ghz", 1e6}, {"mhz", 1e3}, {"khz", 1}} {
		if num, ok := strings.CutSuffix(t, u.suf); ok {
			t, mult = num, u.m
			break
		}
	}
	if mult == 0 {
		return 0, fmt.Errorf("%q has no unit (GHz, MHz or kHz)", s)
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a frequency", s)
	}
	k := math.Round(f * mult)
	if k < 1000 || k > 100e6 {
		return 0, fmt.Errorf("%q is out of range (1 MHz..100 GHz)", s)
	}
	if math.Abs(f*mult-k) > 1e-3 {
		return 0, fmt.Errorf("%q is finer than 1 kHz, the unit of cpufreq", s)
	}
	return int64(k), nil
}

func ptrTo[T any](v T) *T { return &v }

func ptr64(p *int) *int64 {
	if p == nil {
		return nil
	}
	v := int64(*p)
	return &v
}

// stressArgs checks stress-ng arguments. rig adds --taskset and stops the
// child itself, so those belong to the scenario, not to the arguments.
func (c *checker) stressArgs(path, v, cpusField string) ([]string, bool) {
	f := strings.Fields(v)
	if len(f) > 0 && f[0] == "stress-ng" {
		f = f[1:]
	}
	if len(f) == 0 {
		c.val(path, "no stress-ng arguments", `give the stressors, e.g. "--cpu 1 --cpu-method fft"`)
		return nil, false
	}
	if strings.ContainsAny(v, "|;&$`<>\"'\\") {
		c.val(path, "stress-ng arguments have shell syntax; they are passed as plain arguments", "write only stress-ng options, e.g. \"--cpu 2 --cpu-method fft\"")
		return nil, false
	}
	for _, a := range f {
		name, _, _ := strings.Cut(a, "=")
		switch name {
		case "--taskset":
			c.val(path, "stress-ng arguments set --taskset", "use "+cpusField+" for the CPUs")
			return nil, false
		case "-t", "--timeout":
			c.val(path, "stress-ng arguments set a timeout", "rig runs the load for the whole arm and stops it; delete "+name)
			return nil, false
		}
	}
	if !strings.HasPrefix(f[0], "-") {
		c.val(path, fmt.Sprintf("%q is not a stress-ng option", f[0]), "stress-ng arguments start with options such as --cpu 1")
		return nil, false
	}
	return f, true
}

// merge applies an arm over the defaults. Scalars and NIC fields merge
// field by field; cstate, load and smt-sibling are replaced whole because
// their fields only make sense together; requires is the union.
func merge(d, a Knobs) Knobs {
	e := d
	// responder.cpu is one field in either form.
	if a.Responder.CPU != nil || a.Responder.Quietest != nil {
		e.Responder.CPU, e.Responder.Quietest = a.Responder.CPU, a.Responder.Quietest
	}
	if a.Responder.Sched != nil {
		e.Responder.Sched = a.Responder.Sched
	}
	if a.Responder.Poll != nil {
		e.Responder.Poll = a.Responder.Poll
	}
	if a.IRQ != nil {
		e.IRQ = a.IRQ
	}
	mc, dc := a.NIC.Coalesce, &e.NIC.Coalesce
	for _, f := range []struct{ dst, src **uint32 }{{&dc.RxUsecs, &mc.RxUsecs}, {&dc.TxUsecs, &mc.TxUsecs}, {&dc.RxFrames, &mc.RxFrames}, {&e.NIC.Ring.RX, &a.NIC.Ring.RX}, {&e.NIC.Ring.TX, &a.NIC.Ring.TX}, {&e.NIC.Channels, &a.NIC.Channels}} {
		if *f.src != nil {
			*f.dst = *f.src
		}
	}
	if mc.AdaptiveRx != nil {
		dc.AdaptiveRx = mc.AdaptiveRx
	}
	if mc.AdaptiveTx != nil {
		dc.AdaptiveTx = mc.AdaptiveTx
	}
	if a.CState != nil {
		e.CState = a.CState
	}
	if a.Load != nil {
		e.Load = a.Load
	}
	if a.SMTSibling != nil {
		e.SMTSibling = a.SMTSibling
	}
	e.Power = mergePower(d.Power, a.Power)
	if a.Tuned != nil {
		e.Tuned = a.Tuned
	}
	e.Requires = slices.Clone(d.Requires)
	for _, r := range a.Requires {
		if !slices.Contains(e.Requires, r) {
			e.Requires = append(e.Requires, r)
		}
	}
	return e
}

// mergePower merges the arm's power knobs over the defaults' field by
// field.
func mergePower(d, a *Power) *Power {
	switch {
	case a == nil:
		return d
	case d == nil:
		return a
	}
	e := *d
	if a.CPUs != nil {
		e.CPUs = a.CPUs
	}
	if a.Governor != nil {
		e.Governor = a.Governor
	}
	if a.Turbo != nil {
		e.Turbo = a.Turbo
	}
	if a.MinPerfPct != nil {
		e.MinPerfPct = a.MinPerfPct
	}
	if a.MaxPerfPct != nil {
		e.MaxPerfPct = a.MaxPerfPct
	}
	if a.MinFreqKHz != nil {
		e.MinFreqKHz = a.MinFreqKHz
	}
	if a.MaxFreqKHz != nil {
		e.MaxFreqKHz = a.MaxFreqKHz
	}
	return &e
}

// effective checks what only makes sense once defaults are merged. The
// error points at the arm (the knob may come from defaults).
func (c *checker) effective(p string, e Knobs) {
	// With quietest the CPU is chosen on the host before each round; what
	// is about that CPU is checked on every candidate, so the candidates
	// must be listed.
	anyCPU := e.Responder.Quietest != nil && e.Responder.Quietest.CPUs == nil
	if e.SMTSibling != nil && !e.Responder.HasCPU() {
		c.key(p+".smt-sibling", "smt-sibling load needs responder.cpu: the sibling is the responder CPU's", "set responder.cpu in the arm or in defaults")
	} else if e.SMTSibling != nil && anyCPU {
		c.key(p+".smt-sibling", "smt-sibling load with responder.cpu: quietest of every CPU rig may use: the sibling cannot be checked before the run", `list the candidates, e.g. responder: {cpu: {quietest: "2-5"}}, or give responder.cpu a number`)
	}
	if e.CState != nil && (e.CState.Disable != nil || e.CState.Poll) && !e.Responder.HasCPU() {
		c.key(p+".cstate", "cstate disable/poll acts on the responder CPU, and responder.cpu is not set", "set responder.cpu in the arm or in defaults, or use max-latency-us (all CPUs)")
	}
	if pw := e.Power; pw != nil {
		if pw.CPUs == nil && e.Responder.CPU == nil && (pw.Governor != nil || pw.MinFreqKHz != nil || pw.MaxFreqKHz != nil) {
			if e.Responder.Quietest != nil {
				c.key(p+".power", "power governor/min-freq/max-freq act on the responder CPU's cpufreq policy, and responder.cpu: quietest picks that CPU only when the round starts", "set power.cpus (e.g. the quietest candidates), or give responder.cpu a number")
			} else {
				c.key(p+".power", "power governor/min-freq/max-freq act on the responder CPU's cpufreq policy, and responder.cpu is not set", "set responder.cpu, or power.cpus, in the arm or in defaults")
			}
		}
		for _, x := range []struct {
			lo, hi     *int64
			what, unit string
		}{{ptr64(pw.MinPerfPct), ptr64(pw.MaxPerfPct), "perf-pct", "%"}, {pw.MinFreqKHz, pw.MaxFreqKHz, "freq", " kHz"}} {
			if x.lo != nil && x.hi != nil && *x.lo > *x.hi {
				c.key(p+".power", fmt.Sprintf("power min-%s (%d%s) is above max-%s (%d%s)", x.what, *x.lo, x.unit, x.what, *x.hi, x.unit), fmt.Sprintf("make min-%s at most max-%s (equal holds the CPU at one value)", x.what, x.what))
			}
		}
	}
	for _, q := range e.Requires {
		if q != RequireIsolated && q != RequireNohzFull && q != RequireSMT {
			continue
		}
		if !e.Responder.HasCPU() {
			c.key(p, fmt.Sprintf("requires %s is about the responder CPU, and responder.cpu is not set", q), "set responder.cpu in the arm or in defaults")
			break
		}
		if anyCPU {
			c.key(p, fmt.Sprintf("requires %s is about the responder CPU, and responder.cpu: quietest picks it from every CPU rig may use, unknown before the run", q), `list the candidates (every one is checked), e.g. responder: {cpu: {quietest: "2-5"}}`)
			break
		}
	}
}

// crossChecks are the whole-file rules.
func (c *checker) crossChecks(s *Scenario) {
	if s.Emulate != "" {
		for i, a := range s.Arms {
			e := a.Effective
			p := fmt.Sprintf("arms[%d]", i)
			if e.IRQ != nil || e.NIC != (NIC{}) {
				c.key(p, fmt.Sprintf("arm %s sets irq/nic knobs, which veth in the emulated topology does not have", a.Name), "use responder, cstate and load knobs with emulate: netns")
			}
			if slices.Contains(e.Requires, RequireHWTimestamps) {
				c.key(p, fmt.Sprintf("arm %s requires hw-timestamps, which veth never has", a.Name), "drop the requirement or use real hosts")
			}
		}
		return
	}
	rsp := s.HostWith(RoleResponder)
	if rsp == nil || rsp.Iface != "" {
		return
	}
	for i, a := range s.Arms {
		if a.Effective.IRQ != nil || a.Effective.NIC != (NIC{}) {
			c.key("hosts."+rsp.Name, fmt.Sprintf("arm %s (line %d) sets irq/nic knobs, and the responder host %s has no iface:", a.Name, c.x.m[fmt.Sprintf("arms[%d]", i)].val.line, rsp.Name), "add iface: NAME (the NIC that receives the requests) to the responder host")
			return
		}
	}
}
