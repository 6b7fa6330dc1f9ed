// Package capture timestamps the rig's requests and replies on a mirror or
// tap port: one AF_PACKET socket receives both directions, so the
// responder's turnaround (reply − request) is taken on ONE clock. Every
// frame keeps both of its stamps, the capture NIC's (hardware, where
// granted and proven by the first frames) and the kernel's (software), in
// separate columns, so a missing hardware stamp never erases a
// measurement.
//
// Frames are filtered in the kernel (cBPF on the rig's UDP ports), parsed
// in place, and paired by (run id, sequence). Frames this host sent itself
// (PACKET_OUTGOING: a tap on a sending NIC) are dropped and counted: they
// carry no hardware RX stamp and are not what a mirror port sees. The
// per-packet path does not allocate; an optional pcap copy of each frame
// goes to preallocated memory and is written after the round, stamped as
// the sample file is.
//
// Run leaves the Go runtime as it finds it. rig capture runs it with the
// garbage collector off and at least two Ps (cpusched.TuneRuntime): a
// collection would stop the measured loop, and with one P the locked
// thread takes turns with every other goroutine. A program or a test that
// embeds the package and wants rig's numbers does the same.
package capture

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/internal/wire"
)

// Options are what New takes beside the command line: what is not one of
// rig capture's flags.
type Options struct {
	Host  string // names this host in the sample file
	Ready func() // called from the capture thread before the first frame
	// Device answers for the NIC (nil: the host's); tests pass driver
	// profiles.
	Device tstamp.Device
}

// Capture pairs requests and replies seen on a mirror port.
type Capture struct {
	cfg     probe.Capture
	opt     Options
	ports   []uint16          // the UDP ports captured (cfg.Ports)
	match   tstamp.VXLANMatch // the VXLAN copies taken (cfg.VXLANMatch)
	snaplen int               // bytes of a frame the pcap copy keeps
	conn    *tstamp.PacketConn
	granted tstamp.Granted
	hw      *tstamp.HWProof  // do the frames carry the NIC's stamps?
	recs    []samples.Record // per sequence: the request's stamps
	// reps holds the reply slots, Responders per sequence: sequence k's
	// reply from responder i is reps[k·Responders+i].
	reps    []samples.Record
	per     []samples.Counters // per responder: its replies' duplicates, unpaired
	cnt     samples.Counters
	runID   uint64
	buf     [2048]byte
	hdr     wire.Header
	stop    atomic.Bool
	frames  atomic.Int64
	started time.Time
	stopped string
	phc     *tstamp.PHCRecord
	rcvbuf  int // SO_RCVBUF granted

	pcap struct {
		data    []byte
		meta    []frameMeta
		n       int
		leftOut int // frames beyond the preallocated room
	}
}

// frameMeta is a kept frame's stamps (both: which one the pcap file takes
// is settled after the round) and lengths.
type frameMeta struct {
	st       tstamp.Stamps
	length   int
	captured int
}

// New opens the capture socket on Iface for cfg, rig capture's command
// line (probe.DefaultCapture and its changes): what cfg.Check refuses is
// bad input (cli.ErrUsage).
func New(cfg probe.Capture, o Options) (*Capture, error) {
	if err := cfg.Check(); err != nil {
		return nil, cli.Usage(err)
	}
	ifi, err := cfg.Host(cfg.CPU)
	if err != nil {
		return nil, err
	}
	conn, err := tstamp.ListenPacket(ifi.Index, true)
	if err != nil {
		return nil, err
	}
	c := &Capture{cfg: cfg, opt: o, conn: conn, runID: cfg.RunID, ports: cfg.Ports(), match: cfg.VXLANMatch(), snaplen: cfg.Snaplen()}
	c.allocate()
	if c.granted, err = conn.EnableTimestamping(cfg.Timestamps, tstamp.Options{Device: o.Device}); err != nil {
		conn.Close()
		return nil, err
	}
	c.hw = tstamp.NewHWProof(c.granted, 0, "the capture's AF_PACKET socket", "frames", "")
	// A SPAN/mirror port delivers frames addressed to other hosts: the NIC
	// drops them unless promiscuous. The kernel undoes this on close.
	if err := conn.SetPromiscuous(true); err != nil {
		conn.Close()
		return nil, err
	}
	attach := conn.AttachUDPPortFilter
	if cfg.VXLAN {
		attach = func(ports ...uint16) error { return conn.AttachVXLANPortFilter(c.match, ports...) }
	}
	if err := attach(c.ports...); err != nil {
		conn.Close()
		return nil, err
	}
	// A stalled sender's catch-up burst or a descheduled capture thread
	// must not overflow the default ~208 KiB buffer: sized like the UDP
	// sockets', and what the kernel still drops is counted (finish).
	if c.rcvbuf, err = conn.SetRcvBuf(tstamp.StallRcvBuf); err != nil {
		conn.Close()
		return nil, err
	}
	if _, _, err := conn.Stats(); err != nil { // reading resets: count from here
		conn.Close()
		return nil, err
	}
	return c, nil
}

// allocate makes the request records, reply slots and, with --pcap, the
// room for every request and reply of the round up front: the capture
// thread fills them and never allocates.
func (c *Capture) allocate() {
	c.recs = make([]samples.Record, c.cfg.Capacity)
	c.reps = make([]samples.Record, c.cfg.Capacity*c.cfg.Responders)
	c.per = make([]samples.Counters, c.cfg.Responders)
	if c.cfg.Pcap != "" {
		frames := (1 + c.cfg.Responders) * c.cfg.Capacity
		c.pcap.data = make([]byte, frames*c.snaplen)
		c.pcap.meta = make([]frameMeta, frames)
	}
}

// HardwareStamps says whether the NIC's stamps were requested and arrived,
// e.g. "rx delivered, tx not requested".
func (c *Capture) HardwareStamps() string { return c.hw.String() }

// Granted reports the timestamping granted on the capture port.
func (c *Capture) Granted() tstamp.Granted { return c.granted }

// Source is "hw" when the frames carry the NIC's stamps (requested, and
// not proven absent by the first frames), else "sw".
func (c *Capture) Source() string {
	if c.hw.RX() {
		return "hw"
	}
	return "sw"
}

// Stop ends Run (safe from any goroutine).
func (c *Capture) Stop() { c.stop.Store(true) }

// Frames is the number of rig frames seen so far.
func (c *Capture) Frames() int { return int(c.frames.Load()) }

// Run captures until ctx is done or Stop is called, on a locked OS thread
// (cpusched.RunLocked).
func (c *Capture) Run(ctx context.Context) error {
	var err error
	c.stopped, err = cpusched.RunLocked(ctx, cpusched.Thread{CPU: c.cfg.CPU}, c.loop, c.Stop)
	return err
}

func (c *Capture) loop() error {
	if c.phc = c.granted.PHC(); c.phc != nil {
		c.phc.Take()
		defer c.phc.Take()
	}
	c.started = time.Now()
	if c.opt.Ready != nil {
		c.opt.Ready()
	}
	for !c.stop.Load() {
		ok, err := c.conn.Poll(50 * time.Millisecond)
		if err != nil {
			return fmt.Errorf("poll: %w", err)
		}
		if !ok {
			continue
		}
		if err := c.drain(); err != nil {
			return err
		}
		if err := c.hw.Err(); err != nil {
			return err // timestamps: hardware, and the NIC's stamps do not come
		}
	}
	// What is queued arrived before the stop: it is the round's too.
	if err := c.drain(); err != nil {
		return err
	}
	return c.finish()
}

// drain reads every queued frame without blocking.
func (c *Capture) drain() error {
	for {
		n, pkttype, st, err := c.conn.RecvPacket(c.buf[:])
		switch {
		case err == nil:
		case errors.Is(err, tstamp.ErrWouldBlock):
			return nil
		case errors.Is(err, tstamp.ErrTruncated):
			c.cnt.Malformed++
			continue
		default:
			return fmt.Errorf("capture recvmsg: %w", err)
		}
		c.onFrame(c.buf[:n], pkttype, st)
	}
}

// onFrame files one Ethernet frame. It does not allocate.
func (c *Capture) onFrame(f []byte, pkttype uint8, st tstamp.Stamps) {
	if pkttype == tstamp.PacketOutgoing {
		c.cnt.Outgoing++
		return
	}
	in := f
	if c.cfg.VXLAN {
		var ok bool
		if in, ok = vxlanInner(f, c.match); !ok {
			c.cnt.Foreign++
			return
		}
	}
	payload, ep, ok := udpFrame(in)
	if !ok {
		c.cnt.Foreign++
		return
	}
	if err := wire.Decode(payload, c.runID, &c.hdr); err != nil {
		if err == wire.ErrShort || err == wire.ErrMagic || err == wire.ErrRunID {
			c.cnt.Foreign++
		} else {
			c.cnt.Malformed++
		}
		return
	}
	if c.hdr.Arm != uint32(c.cfg.ArmIndex) || c.hdr.Round != uint32(c.cfg.Round) || !c.rightWay(c.hdr.Type, ep) ||
		c.hdr.Responder >= uint32(c.cfg.Responders) {
		c.cnt.Foreign++ // another arm's or round's, a "reply" going where requests go, or no responder of ours
		return
	}
	c.frames.Add(1)
	st.HW = c.hw.Recv(st.HW, st.SW)
	c.keepFrame(f, st)
	if (c.hw.RX() && st.HW == 0) || st.SW == 0 {
		c.cnt.RxStampsMissing++
	}
	if c.hdr.Seq >= uint64(len(c.recs)) {
		c.cnt.OutOfRange++
		return
	}
	r := &c.recs[c.hdr.Seq]
	hw, sw := samples.CapReqHW, samples.CapReqSW
	var pc *samples.Counters // the responder's, for a reply
	if c.hdr.Type == wire.Reply {
		hw, sw = samples.CapRepHW, samples.CapRepSW
		r = &c.reps[c.hdr.Seq*uint64(c.cfg.Responders)+uint64(c.hdr.Responder)]
		pc = &c.per[c.hdr.Responder]
	}
	if r.T[hw] != 0 || r.T[sw] != 0 {
		r.Flags |= samples.FlagDuplicate
		c.cnt.Duplicated++
		if pc != nil {
			pc.Duplicated++
		}
		return
	}
	r.T[hw], r.T[sw] = st.HW, st.SW
	c.cnt.Received++
}

// rightWay is the direction check: a request goes to the group's (or, for
// unicast requests, the responder's) address and port; a reply comes from
// that port (the responder's socket) and goes anywhere but there (the
// sender, or a reply group).
func (c *Capture) rightWay(t wire.Type, ep endpoints) bool {
	g := c.cfg.Dest()
	if t == wire.Request {
		return ep.dst == g.Addr().As4() && ep.dport == g.Port()
	}
	return ep.sport == g.Port() && ep.dst != g.Addr().As4()
}

// endpoints are a frame's IPv4 destination and UDP ports.
type endpoints struct {
	dst          [4]byte
	sport, dport uint16
}

// udpFrame returns the UDP payload of an Ethernet (optionally 802.1Q)
// IPv4 frame and its endpoints, or false.
func udpFrame(f []byte) ([]byte, endpoints, bool) {
	var ep endpoints
	if len(f) < 14 {
		return nil, ep, false
	}
	et := binary.BigEndian.Uint16(f[12:14])
	off := 14
	if et == 0x8100 && len(f) >= 18 {
		et = binary.BigEndian.Uint16(f[16:18])
		off = 18
	}
	if et != 0x0800 || len(f) < off+20 {
		return nil, ep, false
	}
	ip := f[off:]
	ihl := int(ip[0]&0x0f) * 4
	if ip[0]>>4 != 4 || ihl < 20 || ip[9] != 17 || len(ip) < ihl+8 {
		return nil, ep, false
	}
	if binary.BigEndian.Uint16(ip[6:8])&0x1fff != 0 {
		return nil, ep, false // not a first fragment
	}
	total := int(binary.BigEndian.Uint16(ip[2:4]))
	if total > len(ip) || total < ihl+8 {
		return nil, ep, false
	}
	udp := ip[ihl:total]
	ulen := int(binary.BigEndian.Uint16(udp[4:6]))
	if ulen < 8 || ulen > len(udp) {
		return nil, ep, false
	}
	copy(ep.dst[:], ip[16:20])
	ep.sport, ep.dport = binary.BigEndian.Uint16(udp[0:2]), binary.BigEndian.Uint16(udp[2:4])
	return udp[8:ulen], ep, true
}

// keepFrame copies f and its stamps for the pcap file.
func (c *Capture) keepFrame(f []byte, st tstamp.Stamps) {
	if c.pcap.n >= len(c.pcap.meta) {
		if c.cfg.Pcap != "" {
			c.pcap.leftOut++ // duplicates and strays beyond the round's room
		}
		return
	}
	sl := c.snaplen
	k := copy(c.pcap.data[c.pcap.n*sl:(c.pcap.n+1)*sl], f)
	c.pcap.meta[c.pcap.n] = frameMeta{st: st, length: len(f), captured: k}
	c.pcap.n++
}

// finish counts the unpaired requests and replies, per responder, and the
// frames the kernel dropped for want of buffer (PACKET_STATISTICS since
// New): each is a sequence missing a capture stamp, never a silent gap. It
// settles the hardware stamps' proof, whose error (hardware demanded, none
// came) it returns.
func (c *Capture) finish() error {
	c.hw.Finish()
	c.countUnpaired()
	_, drops, err := c.conn.Stats()
	if err != nil {
		return err
	}
	c.cnt.KernelDrops += uint64(drops)
	c.settlePerResponder()
	return c.hw.Err()
}

// countUnpaired counts each responder's replies without their request and
// requests without that responder's reply.
func (c *Capture) countUnpaired() {
	n := c.cfg.Responders
	for k := range c.recs {
		req := c.recs[k].T[samples.CapReqHW]|c.recs[k].T[samples.CapReqSW] != 0
		for id := range n {
			r := &c.reps[k*n+id]
			if rep := r.T[samples.CapRepHW]|r.T[samples.CapRepSW] != 0; req != rep {
				c.cnt.Unpaired++
				c.per[id].Unpaired++
			}
		}
	}
}

// settlePerResponder completes each responder's counters with what no
// reply tells apart: the round's frames, garbage, drops and requests.
func (c *Capture) settlePerResponder() {
	for id := range c.per {
		p := &c.per[id]
		p.Received, p.Foreign, p.Malformed, p.Outgoing = c.cnt.Received, c.cnt.Foreign, c.cnt.Malformed, c.cnt.Outgoing
		p.KernelDrops, p.OutOfRange, p.RxStampsMissing = c.cnt.KernelDrops, c.cnt.OutOfRange, c.cnt.RxStampsMissing
	}
}

// PerResponder returns each responder's counters (nil with one responder,
// whose counters are Counters).
func (c *Capture) PerResponder() []samples.Counters {
	if c.cfg.Responders == 1 {
		return nil
	}
	return c.per
}

// Counters returns the capture's counts.
func (c *Capture) Counters() samples.Counters { return c.cnt }

// Records returns, per sequence seen in either direction and per
// responder, the request's stamps and that responder's reply's.
func (c *Capture) Records() []samples.Record {
	var out []samples.Record
	n := c.cfg.Responders
	for k := range c.recs {
		for id := range n {
			r := c.pair(k, id)
			if r.T[samples.CapReqHW]|r.T[samples.CapReqSW]|r.T[samples.CapRepHW]|r.T[samples.CapRepSW] != 0 || r.Flags != 0 {
				out = append(out, r)
			}
		}
	}
	return out
}

// pair is sequence k's request with responder id's reply.
func (c *Capture) pair(k, id int) samples.Record {
	q, p := &c.recs[k], &c.reps[k*c.cfg.Responders+id]
	r := samples.Record{Seq: uint64(k), Responder: uint32(id), Flags: q.Flags | p.Flags, T: q.T}
	r.T[samples.CapRepHW], r.T[samples.CapRepSW] = p.T[samples.CapRepHW], p.T[samples.CapRepSW]
	return r
}

// Header describes the capture's sample file: the kernel's stamps always,
// the NIC's only when they were requested and arrived.
func (c *Capture) Header(arm, round int) samples.Header {
	sw := samples.Clock{Source: "sw", Clock: "CLOCK_REALTIME", Iface: c.cfg.Iface, Note: c.hw.RxNote()}
	clocks := map[string]samples.Clock{"cap_req_sw": sw, "cap_rep_sw": sw}
	if c.hw.RX() {
		hw := samples.Clock{Source: "hw", Clock: "phc", Iface: c.cfg.Iface, PHCIndex: c.granted.NIC.Caps.PHCIndex}
		clocks["cap_req_hw"], clocks["cap_rep_hw"] = hw, hw
	}
	h := c.cfg.Header(samples.RoleCapture, c.runID, arm, round, c.opt.Host, c.started)
	h.Clocks = clocks
	h.Settings = map[string]any{"timestamps": c.granted.String(), "ports": c.ports, "phc": c.phc, "rcvbuf_bytes": c.rcvbuf,
		"hardware_stamps": c.hw.String(), "mirror": c.mirror()}
	if c.cfg.Pcap != "" { // which columns the pcap file's stamps are
		h.Settings["pcap"] = map[string]any{"stamps": "cap_*_" + c.Source(), "frames": c.pcap.n, "left_out": c.pcap.leftOut}
	}
	h.SetResponders(c.cfg.Responders)
	return h
}

// WriteFile writes the capture's sample file.
func (c *Capture) WriteFile(path string, arm, round int) error {
	return samples.WriteFile(path, c.Header(arm, round), c.Records(), samples.Footer{
		Counters: c.cnt, PerResponder: c.PerResponder(), EndedAt: samples.Time(time.Now()), Stopped: c.stopped,
	})
}

// WritePcap writes the kept frames as a pcap file with nanosecond stamps
// (magic a1b23c4d, link type Ethernet, snaplen bytes a frame): each
// frame's stamp is the one its sample file holds, the NIC's (raw PHC time,
// cap_*_hw) when its stamps were granted and came, else the kernel's
// CLOCK_REALTIME (cap_*_sw, as tcpdump's); a frame without that stamp has
// 1 ns. A failed or short write is an error naming path.
func (c *Capture) WritePcap(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	hw := c.hw.RX()
	b := bufio.NewWriterSize(f, 1<<16) // a short write is an error (io.ErrShortWrite)
	w := pcapgo.NewWriterNanos(b)
	err = w.WriteFileHeader(uint32(c.snaplen), layers.LinkTypeEthernet)
	sl := c.snaplen
	for i := 0; i < c.pcap.n && err == nil; i++ {
		m := c.pcap.meta[i]
		ts := m.st.SW
		if hw {
			ts = m.st.HW
		}
		// pcapgo would write time.Now() for a zero time.
		ci := gopacket.CaptureInfo{Timestamp: time.Unix(0, max(ts, 1)), CaptureLength: m.captured, Length: m.length}
		err = w.WritePacket(ci, c.pcap.data[i*sl:i*sl+m.captured])
	}
	if err = errors.Join(err, b.Flush(), f.Close()); err != nil {
		return fmt.Errorf("pcap %s: %w", path, err)
	}
	return nil
}

// Close releases the socket.
func (c *Capture) Close() error { return c.conn.Close() }
