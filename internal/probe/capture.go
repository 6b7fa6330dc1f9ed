package probe

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/rig-project/rig/internal/tstamp"
)

// Capture is rig capture's command line.
type Capture struct {
	Common // Unicast is --to
	// ReplyPort is the replies' UDP port when it differs from the
	// requests' (--reply-port; 0: the same).
	ReplyPort int
	VXLAN     bool   // --vxlan: the port receives VXLAN-encapsulated copies
	VXLANPort int    // --vxlan-port: their outer UDP port
	VNI       int    // --vni: their VNI only (-1: any)
	Pcap      string // --pcap: also write the frames here ("": no)
	Capacity  int    // --capacity: sequences recorded
	// Responders is how many responders answer every request
	// (--responders, 1..MaxResponders; their --id 0..Responders-1): each
	// reply is paired with its request per responder.
	Responders int
	Duration   time.Duration // --duration: stop after this long (0: until stopped)
	CPU        int           // --cpu: the capture loop's CPU (-1: not pinned)
}

// DefaultCapture is rig capture's command line with every flag at its
// default (Iface, which has none, empty).
func DefaultCapture() Capture {
	return Capture{Common: defaultCommon(), Capacity: 100000, Responders: 1, VXLANPort: tstamp.VXLANPort, VNI: -1, CPU: -1}
}

// Register defines rig capture's flags on fs, bound to c and set to their
// defaults. After fs.Parse, Parse completes c.
func (c *Capture) Register(fs *flag.FlagSet) {
	d := DefaultCapture()
	c.Common.register(fs, "to", "unicast requests: the responder's IPv4 address:port (the sender's --to); its port is captured instead of --group's")
	fs.IntVar(&c.ReplyPort, "reply-port", d.ReplyPort, "UDP port of the replies when it differs from the group port (rig send uses the group port as its source port by default)")
	fs.BoolVar(&c.VXLAN, "vxlan", d.VXLAN, "the port receives VXLAN-encapsulated copies (UDP 4789: AWS VPC Traffic Mirroring, rig lab up --mirror vxlan): filter and pair the frames inside; the stamps are the copies' arrival here, not the wire at the responder")
	fs.IntVar(&c.VXLANPort, "vxlan-port", d.VXLANPort, "with --vxlan: the copies' UDP port (AWS VPC Traffic Mirroring: 4789; a Linux vxlan device made without dstport sends to 8472)")
	fs.IntVar(&c.VNI, "vni", d.VNI, "with --vxlan: take only the copies of this VXLAN network identifier (the mirror session's --virtual-network-id; -1: any)")
	fs.StringVar(&c.Pcap, "pcap", d.Pcap, "also write the frames as pcap with nanosecond stamps, the sample file's: the NIC's where granted, else the kernel's")
	fs.IntVar(&c.Capacity, "capacity", d.Capacity, "sequences recorded (0..capacity-1)")
	fs.IntVar(&c.Responders, "responders", d.Responders, fmt.Sprintf("how many responders answer every request (their --id 0..N-1; 1..%d): each reply is paired with its request per responder", MaxResponders))
	fs.DurationVar(&c.Duration, "duration", d.Duration, "stop after this long (0: until Ctrl-C)")
	fs.IntVar(&c.CPU, "cpu", d.CPU, "CPU to pin the capture loop to (-1: no pinning)")
}

// Parse completes c from fs, the FlagSet Register defined the flags on,
// after fs.Parse, and checks it. Every error is bad input.
func (c *Capture) Parse(fs *flag.FlagSet) error {
	if err := c.Common.parse(fs, "to"); err != nil {
		return err
	}
	return c.Check()
}

// Check checks c as Parse does: capture.New refuses what it refuses.
func (c Capture) Check() error {
	if err := c.Common.check(); err != nil {
		return err
	}
	if err := requireRunID("capture", c.RunID); err != nil {
		return err
	}
	switch {
	case c.ReplyPort < 0 || c.ReplyPort > 65535:
		return fmt.Errorf("--reply-port %d: want 1..65535", c.ReplyPort)
	case c.Responders < 1 || c.Responders > MaxResponders:
		return fmt.Errorf("--responders %d: want 1..%d", c.Responders, MaxResponders)
	case c.VXLANPort < 1 || c.VXLANPort > 65535:
		return fmt.Errorf("--vxlan-port %d: want 1..65535", c.VXLANPort)
	case c.CPU < -1:
		return fmt.Errorf("--cpu %d: want a CPU number, or -1 for no pinning", c.CPU)
	case c.VNI < -1 || c.VNI > tstamp.MaxVNI:
		return fmt.Errorf("--vni %d: want 0..%d (a VNI has 24 bits), or -1 for any", c.VNI, tstamp.MaxVNI)
	case !c.VXLAN && (c.VXLANPort != tstamp.VXLANPort || c.VNI != -1):
		return fmt.Errorf("--vxlan-port and --vni select VXLAN copies: add --vxlan")
	case c.Capacity < 1:
		return fmt.Errorf("--capacity %d: want 1 or more", c.Capacity)
	case c.Timestamps == tstamp.Off:
		return errors.New("--timestamps off: a capture records nothing but stamps; use hardware, software or auto")
	}
	return nil
}

// VXLANMatch is which VXLAN copies --vxlan-port and --vni select.
func (c Capture) VXLANMatch() tstamp.VXLANMatch {
	m := tstamp.VXLANMatch{Port: uint16(c.VXLANPort)}
	if c.VNI >= 0 {
		v := uint32(c.VNI)
		m.VNI = &v
	}
	return m
}

// Ports are the UDP ports to capture: the requests' and, when it differs,
// the replies'.
func (c Capture) Ports() []uint16 {
	ports := []uint16{c.Dest().Port()}
	if c.ReplyPort > 0 {
		ports = append(ports, uint16(c.ReplyPort))
	}
	return ports
}

// Snaplen is how much of a frame the pcap copy keeps: the rig's headers
// and the payload's start, a VXLAN copy's outer headers on top.
func (c Capture) Snaplen() int {
	if c.VXLAN {
		return 128 + tstamp.VXLANOverhead
	}
	return 128
}

// PcapBytes is the most a round's --pcap file takes with payload bytes a
// request: a 24-byte file header and, for every request and reply of
// Capacity sequences, a 16-byte record header and the frame up to Snaplen
// (Ethernet, IPv4, UDP, payload; an 802.1Q tag is not counted).
func (c Capture) PcapBytes(payload int) int64 {
	frame := 14 + 20 + 8 + payload
	if c.VXLAN {
		frame += tstamp.VXLANOverhead
	}
	return 24 + int64((1+c.Responders)*c.Capacity)*int64(16+min(frame, c.Snaplen()))
}

// Args is c as rig capture's arguments (without the command name):
// registered and parsed, they give back c.
func (c Capture) Args() []string { return args(c, (*Capture).Register) }
