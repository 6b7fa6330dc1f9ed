// Package netlab builds the emulated two-host topology rig runs on one
// machine and in CI: network namespaces for a sender, a responder and a
// capture host, joined by veths to a Linux bridge in a fourth "switch"
// namespace, with a tc mirror (SPAN) port that copies both directions of
// traffic to the capture host.
//
//	<name>-snd  [<name>-snd] ──veth── [<name>-psnd] ┐
//	                                                ├─ <name>-br (bridge, hub mode)   in <name>-sw
//	<name>-rsp  [<name>-rsp] ──veth── [<name>-prsp] ┘
//	                            tc ingress mirred mirror on psnd and prsp ──▶ [<name>-pcap]
//	<name>-cap  [<name>-cap] ──veth────────────────────────────────────────────┘ (not a bridge port)
//
// Nothing is created in the host's own network namespace: every veth is
// created directly inside the namespaces, so the host's interfaces and routes
// are never touched. The description of a lab is persisted as JSON (see Dir)
// so that `rig lab down` and other rig processes find it by name.
//
// This file holds the portable part: names, addresses and the JSON
// description. The Linux implementation lives in netlab_linux.go.
package netlab

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rig-project/rig/internal/owner"
	"github.com/rig-project/rig/internal/rundir"
)

const (
	// DefaultName is the lab name `rig lab up` uses without --name.
	DefaultName = "rig"
	// MaxNameLen keeps the longest interface name, "<name>-psnd", within
	// the kernel's 15-byte IFNAMSIZ limit.
	MaxNameLen = 10
	// EnvDir names the environment variable that overrides DefaultDir.
	EnvDir = "RIG_LAB_DIR"
	// DefaultDir holds one <name>.json description per lab.
	DefaultDir = "/run/rig/lab"
	// FormatVersion is the version of the JSON description.
	FormatVersion = 1
	// DefaultMTU is the MTU of every lab interface unless Options.MTU says otherwise.
	DefaultMTU = 1500
	// MaxQueues bounds Options.RxQueues/TxQueues; the responder veth is an
	// emulation of a multi-queue NIC, not a scalability test.
	MaxQueues = 64
	// MaxResponders bounds Options.Responders: responder i > 0 is
	// "<name>-r<i>" and its switch port "<name>-pr<i>", within IFNAMSIZ
	// for one digit.
	MaxResponders = 9
)

// Role names one part of a lab.
type Role string

// The roles of a lab. Sender, Responder and Capture are hosts with an
// interface; Switch is the namespace holding the bridge and the mirror.
const (
	Sender    Role = "sender"
	Responder Role = "responder"
	Capture   Role = "capture"
	Switch    Role = "switch"
)

// Roles lists every role in a fixed order (hosts first, switch last).
var Roles = []Role{Sender, Responder, Capture, Switch}

// ResponderRole is the role of responder i of a fan-out lab: Responder
// for 0, "responder<i>" for the others.
func ResponderRole(i int) Role {
	if i == 0 {
		return Responder
	}
	return Role(fmt.Sprintf("%s%d", Responder, i))
}

// ResponderIndex returns i for ResponderRole(i), and false for any other
// role.
func (r Role) ResponderIndex() (int, bool) {
	if r == Responder {
		return 0, true
	}
	rest, ok := strings.CutPrefix(string(r), string(Responder))
	if !ok || len(rest) != 1 || rest[0] < '1' || rest[0] > '0'+MaxResponders-1 {
		return 0, false
	}
	return int(rest[0] - '0'), true
}

// suffix is the short tag of a role used in namespace and interface names.
func (r Role) suffix() string {
	if i, ok := r.ResponderIndex(); ok && i > 0 {
		return fmt.Sprintf("r%d", i)
	}
	switch r {
	case Sender:
		return "snd"
	case Responder:
		return "rsp"
	case Capture:
		return "cap"
	case Switch:
		return "sw"
	}
	return ""
}

// Options shape a lab. The zero value is a valid default.
type Options struct {
	// RxQueues and TxQueues are the queue counts of the responder's veth
	// (both ends), so that nicctl has a multi-queue device to steer.
	// 0 means 1; TxQueues 0 means the same as RxQueues.
	RxQueues int
	TxQueues int
	// MTU of every lab interface and the bridge; 0 means DefaultMTU.
	MTU int
	// Subnet is the IPv4 prefix of the lab; the zero value means
	// DefaultSubnet(name). The sender gets .1, the responder .2.
	Subnet netip.Prefix
	// DynamicNeighbors leaves ARP resolution to the kernel. By default the
	// sender and responder get PERMANENT neighbour entries for each other,
	// so no ARP request or re-probe lands in the middle of a measurement
	// (and none shows up in the capture).
	DynamicNeighbors bool
	// TxChecksumOffload keeps the veth default of leaving UDP/TCP
	// checksums unfilled (CHECKSUM_PARTIAL). By default it is turned off on
	// the sender and responder so captured frames carry valid checksums.
	TxChecksumOffload bool
	// MirrorVXLAN delivers the mirror's copies VXLAN-encapsulated, as AWS
	// VPC Traffic Mirroring does: the switch sends them through a vxlan
	// device (VNI MirrorVNI, UDP 4789) to the capture host's address.
	MirrorVXLAN bool
	// Owner is the process the lab lives for (a rig run, a test): once it
	// no longer runs the lab is stale and RemoveStale removes it. nil: the
	// lab stays until `rig lab down` (one built by hand).
	Owner *owner.Process
	// Responders is how many responder hosts share the bridge (fan-out:
	// every one hears every multicast request), each mirrored to the
	// capture; 0 means 1, at most MaxResponders. Responder i > 0 gets the
	// address after responder i−1's.
	Responders int
}

// normalize fills defaults and validates; name must already be valid.
func (o Options) normalize(name string) (Options, error) {
	if o.RxQueues == 0 {
		o.RxQueues = 1
	}
	if o.TxQueues == 0 {
		o.TxQueues = o.RxQueues
	}
	if o.RxQueues < 1 || o.RxQueues > MaxQueues || o.TxQueues < 1 || o.TxQueues > MaxQueues {
		return o, fmt.Errorf("netlab: responder queues rx=%d tx=%d out of range: want 1..%d", o.RxQueues, o.TxQueues, MaxQueues)
	}
	if o.MTU == 0 {
		o.MTU = DefaultMTU
	}
	if o.MTU < 68 || o.MTU > 65535 {
		return o, fmt.Errorf("netlab: MTU %d out of range: want 68..65535", o.MTU)
	}
	if o.Responders == 0 {
		o.Responders = 1
	}
	if o.Responders < 1 || o.Responders > MaxResponders {
		return o, fmt.Errorf("netlab: %d responders out of range: want 1..%d", o.Responders, MaxResponders)
	}
	if !o.Subnet.IsValid() {
		o.Subnet = DefaultSubnet(name)
	}
	if err := checkSubnet(o.Subnet); err != nil {
		return o, err
	}
	if hosts := 1 + o.Responders; hosts > 1<<(32-o.Subnet.Bits())-2 {
		return o, fmt.Errorf("netlab: subnet %v has no room for a sender and %d responders: use a shorter prefix", o.Subnet, o.Responders)
	}
	return o, nil
}

func checkSubnet(p netip.Prefix) error {
	if !p.IsValid() || !p.Addr().Is4() {
		return fmt.Errorf("netlab: subnet %v is not an IPv4 prefix (e.g. 10.99.7.0/24)", p)
	}
	if p.Bits() < 8 || p.Bits() > 30 {
		return fmt.Errorf("netlab: subnet %v: prefix length must be 8..30 so the hosts get .1 and .2", p)
	}
	if p != p.Masked() {
		return fmt.Errorf("netlab: subnet %v has host bits set; did you mean %v?", p, p.Masked())
	}
	return nil
}

// kindError is an error with a clean message that still matches a
// sentinel (os.ErrNotExist, os.ErrExist, os.ErrPermission) under errors.Is,
// without appending the sentinel's own text to what the user reads.
type kindError struct {
	msg  string
	kind error
}

func (e *kindError) Error() string        { return e.msg }
func (e *kindError) Is(target error) bool { return target == e.kind }

func errorKind(kind error, format string, a ...any) error {
	return &kindError{msg: fmt.Sprintf(format, a...), kind: kind}
}

// ValidateName checks a lab name: 1..MaxNameLen characters of [a-z0-9-],
// starting with a letter or digit (a leading '-' would read as a flag to
// ip(8)). The name prefixes every namespace and interface of the lab.
func ValidateName(name string) error {
	if name == "" {
		return errors.New("netlab: empty lab name")
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("netlab: lab name %q is %d characters; at most %d keep interface names within 15 bytes", name, len(name), MaxNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0:
		default:
			return fmt.Errorf("netlab: lab name %q: character %q at %d not allowed: use a-z, 0-9 and '-' (not first)", name, c, i)
		}
	}
	return nil
}

// UniqueName returns a fresh valid lab name "<prefix>-xxxxx" with a random
// suffix, for tests. prefix must itself be a valid name of at most 4
// characters; anything else is a programming error and panics.
func UniqueName(prefix string) string {
	if err := ValidateName(prefix); err != nil || len(prefix) > 4 {
		panic(fmt.Sprintf("netlab.UniqueName: prefix %q must be a valid name of at most 4 characters", prefix))
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return prefix + "-" + string(b[:])
}

// DefaultSubnet is 10.99.X.0/24 with X a hash of the name, so that labs of
// different names read differently in captures and logs. Labs are isolated
// from each other and from the host whatever their subnets; set
// Options.Subnet to choose one explicitly.
func DefaultSubnet(name string) netip.Prefix {
	h := fnv.New32a()
	h.Write([]byte(name))
	x := byte(h.Sum32())
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 99, x, 0}), 24)
}

// NetnsName is the network namespace of a role in lab name.
func NetnsName(name string, r Role) string { return name + "-" + r.suffix() }

// Namespaces lists every network namespace lab name may have: the four
// of every lab and those of responders 1..MaxResponders-1.
func Namespaces(name string) []string {
	out := make([]string, 0, len(Roles)+MaxResponders-1)
	for _, r := range Roles {
		out = append(out, NetnsName(name, r))
	}
	for i := 1; i < MaxResponders; i++ {
		out = append(out, NetnsName(name, ResponderRole(i)))
	}
	return out
}

// Host is one end host of the lab: a namespace with one veth.
type Host struct {
	Role      Role   `json:"role"`
	Netns     string `json:"netns"`
	Interface string `json:"interface"`
	Ifindex   int    `json:"ifindex"` // inside Netns
	MAC       string `json:"mac"`
	// Addr is the host's IPv4 address in Topology.Subnet; zero for the
	// capture host, which is passive and has no address.
	Addr netip.Addr `json:"addr,omitzero"`
	// Port is the switch-side peer of Interface, in the switch namespace.
	Port        string `json:"switch_port"`
	PortIfindex int    `json:"switch_port_ifindex"`
}

// SwitchInfo is the switch namespace: a bridge with the sender and
// responder ports, and the capture port outside the bridge fed by tc mirred.
type SwitchInfo struct {
	Netns         string `json:"netns"`
	Bridge        string `json:"bridge"`
	BridgeIfindex int    `json:"bridge_ifindex"`
}

// Topology describes a lab. It is what Up returns and what Load reads back.
type Topology struct {
	Format          int          `json:"format"`
	Name            string       `json:"name"`
	Subnet          netip.Prefix `json:"subnet"`
	MTU             int          `json:"mtu"`
	RxQueues        int          `json:"rx_queues"` // of the responder veth
	TxQueues        int          `json:"tx_queues"`
	StaticNeighbors bool         `json:"static_neighbors"`
	// TxChecksumOffload is the sender's and responder's veth setting.
	TxChecksumOffload bool `json:"tx_checksum_offload"`
	Sender            Host `json:"sender"`
	Responder         Host `json:"responder"`
	// More are the responders 1..N-1 of a fan-out lab (Options.Responders).
	More      []Host     `json:"more_responders,omitempty"`
	Capture   Host       `json:"capture"`
	Switch    SwitchInfo `json:"switch"`
	CreatedAt time.Time  `json:"created_at"`
	// VXLAN is the encapsulating mirror (Options.MirrorVXLAN); nil: the
	// mirror copies frames to the capture port as they are.
	VXLAN *VXLANMirror `json:"vxlan_mirror,omitempty"`
	// Owner is Options.Owner (absent in descriptions of labs built by hand
	// and by older rigs).
	Owner *owner.Process `json:"owner,omitempty"`
}

// Stale reports a lab whose owner no longer runs (a rig run killed with
// SIGKILL): nothing but RemoveStale will remove it.
func (t *Topology) Stale() bool { return t.Owner != nil && !t.Owner.Alive() }

// VXLANMirror is the switch's vxlan device that encapsulates the mirror's
// copies and sends them over the capture port (Local, in the switch) to
// the capture host (Remote, a static neighbour there: the capture
// interface itself keeps no address and answers nothing).
type VXLANMirror struct {
	Device  string     `json:"device"`
	Ifindex int        `json:"ifindex"`
	VNI     uint32     `json:"vni"`
	Local   netip.Addr `json:"local"`
	Remote  netip.Addr `json:"remote"`
}

// MirrorVNI is the VNI of an emulated VXLAN mirror session.
const MirrorVNI = 4242

// VXLAN mirror underlay: a link-local /30 between the switch's capture
// port and the capture host.
var (
	vxlanLocal  = netip.AddrFrom4([4]byte{169, 254, 89, 1})
	vxlanRemote = netip.AddrFrom4([4]byte{169, 254, 89, 2})
)

// plan lays out a lab's names and addresses; ifindexes and MACs are filled
// in when it is built.
func plan(name string, o Options) *Topology {
	first := o.Subnet.Addr().Next()
	host := func(r Role, a netip.Addr) Host {
		return Host{Role: r, Netns: NetnsName(name, r), Interface: name + "-" + r.suffix(),
			Addr: a, Port: name + "-p" + r.suffix()}
	}
	return &Topology{
		Format: FormatVersion, Name: name, Subnet: o.Subnet, MTU: o.MTU,
		RxQueues: o.RxQueues, TxQueues: o.TxQueues, StaticNeighbors: !o.DynamicNeighbors,
		TxChecksumOffload: o.TxChecksumOffload, Owner: o.Owner,
		Sender:    host(Sender, first),
		Responder: host(Responder, first.Next()),
		More:      more(o.Responders, func(i int) Host { return host(ResponderRole(i), addrAfter(first, 1+i)) }),
		Capture:   host(Capture, netip.Addr{}),
		Switch:    SwitchInfo{Netns: NetnsName(name, Switch), Bridge: name + "-br"},
		VXLAN:     vxlanPlan(name, o.MirrorVXLAN),
	}
}

// more lays out responders 1..n-1 (nil for one responder).
func more(n int, host func(int) Host) []Host {
	var out []Host
	for i := 1; i < n; i++ {
		out = append(out, host(i))
	}
	return out
}

func addrAfter(a netip.Addr, n int) netip.Addr {
	for range n {
		a = a.Next()
	}
	return a
}

// Responders is the number of responder hosts (1 + len(More)).
func (t *Topology) Responders() int { return 1 + len(t.More) }

// ResponderHosts are the responder hosts, responder 0 first.
func (t *Topology) ResponderHosts() []*Host {
	out := []*Host{&t.Responder}
	for i := range t.More {
		out = append(out, &t.More[i])
	}
	return out
}

// hostRoles are the roles with a host interface: sender, every responder,
// capture.
func (t *Topology) hostRoles() []Role {
	out := []Role{Sender}
	for i := range t.Responders() {
		out = append(out, ResponderRole(i))
	}
	return append(out, Capture)
}

// roles are hostRoles and the switch.
func (t *Topology) roles() []Role { return append(t.hostRoles(), Switch) }

func vxlanPlan(name string, on bool) *VXLANMirror {
	if !on {
		return nil
	}
	return &VXLANMirror{Device: name + "-vx", VNI: MirrorVNI, Local: vxlanLocal, Remote: vxlanRemote}
}

// Host returns the host of a role. It fails for Switch and unknown roles.
func (t *Topology) Host(r Role) (*Host, error) {
	switch r {
	case Sender:
		return &t.Sender, nil
	case Responder:
		return &t.Responder, nil
	case Capture:
		return &t.Capture, nil
	}
	if i, ok := r.ResponderIndex(); ok && i <= len(t.More) {
		return &t.More[i-1], nil
	}
	return nil, fmt.Errorf("netlab: role %q has no host interface", r)
}

// Netns returns the namespace of a role, or "" for an unknown role.
func (t *Topology) Netns(r Role) string {
	if r == Switch {
		return t.Switch.Netns
	}
	if h, err := t.Host(r); err == nil {
		return h.Netns
	}
	return ""
}

// Exec returns the argv prefix that runs a command in the role's namespace:
// append the command, e.g. append(t.Exec(netlab.Sender), "rig", "send").
// ip-netns-exec also remounts /sys for the namespace, so /sys/class/net
// shows the lab's interfaces to the child. Nil for an unknown role.
func (t *Topology) Exec(r Role) []string {
	ns := t.Netns(r)
	if ns == "" {
		return nil
	}
	return []string{"ip", "netns", "exec", ns}
}

// Namespaces lists the lab's namespaces: sender, responders, capture,
// switch.
func (t *Topology) Namespaces() []string {
	var out []string
	for _, r := range t.roles() {
		out = append(out, t.Netns(r))
	}
	return out
}

// sameShape reports whether two topologies were built from the same options.
func (t *Topology) sameShape(o *Topology) bool {
	return t.Name == o.Name && t.Subnet == o.Subnet && t.MTU == o.MTU &&
		t.RxQueues == o.RxQueues && t.TxQueues == o.TxQueues && t.StaticNeighbors == o.StaticNeighbors &&
		t.TxChecksumOffload == o.TxChecksumOffload && (t.VXLAN == nil) == (o.VXLAN == nil) &&
		t.Responders() == o.Responders()
}

// shape prints the options a topology was built with.
func (t *Topology) shape() string {
	return fmt.Sprintf("subnet %v, mtu %d, responder queues rx %d tx %d, static neighbours %v, tx checksum offload %v, vxlan mirror %v, responders %d",
		t.Subnet, t.MTU, t.RxQueues, t.TxQueues, t.StaticNeighbors, t.TxChecksumOffload, t.VXLAN != nil, t.Responders())
}

// Validate checks that a description is self-consistent: the names follow
// from the lab name, the addresses lie in the subnet, the indexes are set.
func (t *Topology) Validate() error {
	if t.Format != FormatVersion {
		return fmt.Errorf("netlab: description format %d, this rig reads %d: rebuild the lab (rig lab down; rig lab up)", t.Format, FormatVersion)
	}
	if err := ValidateName(t.Name); err != nil {
		return err
	}
	if err := checkSubnet(t.Subnet); err != nil {
		return err
	}
	if len(t.More) >= MaxResponders {
		return fmt.Errorf("netlab: lab %q description: %d responders, at most %d", t.Name, t.Responders(), MaxResponders)
	}
	want := plan(t.Name, Options{Subnet: t.Subnet, Responders: t.Responders()})
	var errs []error
	for _, r := range t.hostRoles() {
		h, _ := t.Host(r)
		w, _ := want.Host(r)
		if h.Role != r || h.Netns != w.Netns || h.Interface != w.Interface || h.Port != w.Port {
			errs = append(errs, fmt.Errorf("%s: names %q/%q/%q/%q, want %q/%q/%q/%q", r, h.Role, h.Netns, h.Interface, h.Port, r, w.Netns, w.Interface, w.Port))
		}
		if h.Addr != w.Addr {
			errs = append(errs, fmt.Errorf("%s: address %v, want %v", r, h.Addr, w.Addr))
		}
		if h.Ifindex <= 0 || h.PortIfindex <= 0 {
			errs = append(errs, fmt.Errorf("%s: ifindex %d / switch port ifindex %d not set", r, h.Ifindex, h.PortIfindex))
		}
		if _, err := net.ParseMAC(h.MAC); err != nil {
			errs = append(errs, fmt.Errorf("%s: mac: %v", r, err))
		}
	}
	if t.Switch.Netns != want.Switch.Netns || t.Switch.Bridge != want.Switch.Bridge || t.Switch.BridgeIfindex <= 0 {
		errs = append(errs, fmt.Errorf("switch: %+v, want netns %q bridge %q with an ifindex", t.Switch, want.Switch.Netns, want.Switch.Bridge))
	}
	if t.MTU < 68 || t.MTU > 65535 {
		errs = append(errs, fmt.Errorf("mtu %d out of range", t.MTU))
	}
	if t.RxQueues < 1 || t.RxQueues > MaxQueues || t.TxQueues < 1 || t.TxQueues > MaxQueues {
		errs = append(errs, fmt.Errorf("queues rx %d tx %d out of range 1..%d", t.RxQueues, t.TxQueues, MaxQueues))
	}
	if len(errs) > 0 {
		return fmt.Errorf("netlab: lab %q description: %w", t.Name, errors.Join(errs...))
	}
	return nil
}

// ParseTopology decodes and validates a JSON description. Unknown fields
// are errors, so a description from another rig version is not misread.
func ParseTopology(b []byte) (*Topology, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var t Topology
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("netlab: lab description: %w", err)
	}
	if dec.More() {
		return nil, errors.New("netlab: lab description: trailing data after the JSON object")
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return &t, nil
}

// MarshalIndent renders the description as it is stored.
func (t *Topology) MarshalIndent() ([]byte, error) {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Dir is where lab descriptions live: $RIG_LAB_DIR, else DefaultDir.
func Dir() string {
	if d := os.Getenv(EnvDir); d != "" {
		return d
	}
	return DefaultDir
}

// Path is the description file of lab name.
func Path(name string) string { return filepath.Join(Dir(), name+".json") }

// Load reads the description of lab name from Dir. It does not look at the
// live namespaces; see (*Topology).Check. A lab that was never brought up
// (or was brought down) gives an error matching os.ErrNotExist.
func Load(name string) (*Topology, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(Path(name))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errorKind(os.ErrNotExist, "netlab: lab %q is not up (no %s); run rig lab up --name %s", name, Path(name), name)
		}
		return nil, fmt.Errorf("netlab: %w", err)
	}
	t, err := ParseTopology(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Path(name), err)
	}
	if t.Name != name {
		return nil, fmt.Errorf("netlab: %s describes lab %q, not %q", Path(name), t.Name, name)
	}
	return t, nil
}

// save writes the description atomically so a reader never sees half a
// file, and ends the building record.
func (t *Topology) save() error {
	b, err := t.MarshalIndent()
	if err != nil {
		return err
	}
	if err := rundir.WriteFileAtomic(Path(t.Name), b); err != nil {
		return fmt.Errorf("netlab: writing %s: %w", Path(t.Name), err)
	}
	os.Remove(buildingPath(t.Name))
	return nil
}

// buildingPath records the owner of a lab being built (see Up).
func buildingPath(name string) string { return filepath.Join(Dir(), name+".building") }

// writeBuilding writes the record atomically: an owner killed while
// writing it must leave no record or a whole one, since an unreadable
// record names no owner and so can never be found stale.
func writeBuilding(name string, o owner.Process) error {
	b, _ := json.Marshal(o)
	if err := rundir.WriteFileAtomic(buildingPath(name), b); err != nil {
		return fmt.Errorf("netlab: %w", err)
	}
	return nil
}

// Listed is one lab found in Dir.
type Listed struct {
	Name     string
	Topology *Topology // nil when the description cannot be read (Err says why)
	Err      error
	// Building is the owner of a lab whose build never finished (its
	// owner was killed while building it, or is building it now); its
	// namespaces may exist without a description.
	Building *owner.Process
	// Netns are the namespaces RemoveStale removed (those that existed).
	Netns []string
}

// Stale reports a lab whose owner no longer runs.
func (l Listed) Stale() bool {
	if l.Building != nil {
		return !l.Building.Alive()
	}
	return l.Topology != nil && l.Topology.Stale()
}

// List returns every lab described in Dir, and every lab whose build never
// finished, by name. It does not look at the live namespaces; see
// (*Topology).Check.
func List() ([]Listed, error) {
	ents, err := os.ReadDir(Dir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("netlab: %w", err)
	}
	var out []Listed
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || strings.HasPrefix(n, ".") {
			continue
		}
		switch {
		case strings.HasSuffix(n, ".json"):
			name := strings.TrimSuffix(n, ".json")
			t, err := Load(name)
			out = append(out, Listed{Name: name, Topology: t, Err: err})
		case strings.HasSuffix(n, ".building"):
			name := strings.TrimSuffix(n, ".building")
			if _, err := os.Stat(Path(name)); err == nil || ValidateName(name) != nil {
				continue // built after all (or not a lab name)
			}
			var o owner.Process
			b, err := os.ReadFile(filepath.Join(Dir(), n))
			if err == nil {
				err = json.Unmarshal(b, &o)
			}
			l := Listed{Name: name, Building: &o, Err: errors.New("its build never finished")}
			if err != nil {
				l.Building, l.Err = nil, fmt.Errorf("%s: %w", n, err)
			}
			out = append(out, l)
		}
	}
	return out, nil
}
