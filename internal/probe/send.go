package probe

import (
	"flag"
	"fmt"
	"net/netip"
	"time"

	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/wire"
)

// Send is rig send's command line.
type Send struct {
	Common                  // Unicast is --to
	Count    int            // --count: requests in the round
	Interval time.Duration  // --interval
	Size     int            // --size: UDP payload bytes
	Spin     time.Duration  // --spin
	CPU      int            // --cpu: the pacing thread's CPU (-1: not pinned)
	Sched    cpusched.Sched // --sched
	Poll     PollMode       // --poll: block or busy
	Engine   Engine         // --engine: go or native
	Stack    Stack          // --stack, --stack-launcher, --stack-preload, --stack-env (as Respond's)
	// Port is the local UDP port (--port); -1: the port of Group or
	// Unicast. ReplyGroup's port, when set, takes its place.
	Port int
	// ReplyGroup is the group:port joined for replies (--reply-group, the
	// responder's --reply); zero: replies come back by unicast.
	ReplyGroup netip.AddrPort
	// Responders is how many responders answer every request (--responders,
	// 1..MaxResponders; their --id 0..Responders-1): each reply is filed
	// under its responder.
	Responders    int
	Warmup        int           // --warmup
	ReplyTimeout  time.Duration // --reply-timeout
	TxWait        time.Duration // --tx-wait
	Quiet         bool          // --quiet: no summary
	ProgressLines bool          // --progress-lines: FormatProgress lines on stderr every second
}

// DefaultSend is rig send's command line with every flag at its default
// (Iface, which has none, empty). It is the one table of the traffic
// defaults: a scenario's rounds (internal/scenario) start from it too.
func DefaultSend() Send {
	return Send{Common: defaultCommon(), Count: 10000, Interval: time.Millisecond, Size: wire.DefaultSize, Spin: 50 * time.Microsecond,
		CPU: -1, Port: -1, Responders: 1, Warmup: 2, ReplyTimeout: 500 * time.Millisecond, TxWait: 500 * time.Millisecond, Stack: Stack{Name: StackKernel}}
}

// MaxCount bounds --count: a sequence and a reply slot's index fit 31 bits.
const MaxCount = 1 << 31

// Register defines rig send's flags on fs, bound to s and set to their
// defaults. After fs.Parse, Parse completes s.
func (s *Send) Register(fs *flag.FlagSet) {
	d := DefaultSend()
	s.Common.register(fs, "to", "unicast requests: the responder's IPv4 address:port on its interface (instead of --group; the responder's --listen)")
	fs.IntVar(&s.Count, "count", d.Count, "requests in the round")
	fs.DurationVar(&s.Interval, "interval", d.Interval, "request k is due at start + k·interval")
	fs.IntVar(&s.Size, "size", d.Size, "UDP payload bytes (44..1472)")
	fs.DurationVar(&s.Spin, "spin", d.Spin, "spin this long before each due time instead of sleeping (0: sleep only); a reply being awaited is still slept for in ppoll, so --spin ≥ --interval is sockperf's client: block for the reply, busy-wait to the next send")
	fs.IntVar(&s.CPU, "cpu", d.CPU, "CPU to pin the pacing thread to (-1: no pinning)")
	fs.TextVar(&s.Sched, "sched", d.Sched, "scheduling policy of the pacing thread: other | fifo:N")
	fs.TextVar(&s.Poll, "poll", d.Poll, "how the sending thread waits for replies and TX stamps between sends: block (sleeps in ppoll: one wake-up per reply) | busy (polls the socket without blocking: no wake-up, one CPU at 100 %)")
	fs.TextVar(&s.Engine, "engine", d.Engine, "go (rig's own loop) | native (rig-send-native, beside rig: the same loop in C, no runtime to interrupt it, which kernel-bypass stacks can accelerate; one responder)")
	s.Stack.register(fs, d.Stack)
	fs.IntVar(&s.Port, "port", d.Port, "local UDP port; replies come back to it (-1: the port of --group or --to)")
	fs.TextVar((*group)(&s.ReplyGroup), "reply-group", group(d.ReplyGroup), "join this group:port for replies (the responder's --reply); its port becomes the local port")
	fs.IntVar(&s.Responders, "responders", d.Responders, fmt.Sprintf("how many responders answer every request (their --id 0..N-1; 1..%d): each reply is filed under its responder", MaxResponders))
	fs.IntVar(&s.Warmup, "warmup", d.Warmup, "leading sequences excluded from the summary (recorded anyway)")
	fs.DurationVar(&s.ReplyTimeout, "reply-timeout", d.ReplyTimeout, "a reply more than this after its request left (kernel stamps where taken) counts as late, apart from lost; the round waits this long for the last replies")
	fs.DurationVar(&s.TxWait, "tx-wait", d.TxWait, "how long to wait for TX stamps after the last send")
	fs.BoolVar(&s.Quiet, "quiet", d.Quiet, "do not print the summary")
	fs.BoolVar(&s.ProgressLines, "progress-lines", d.ProgressLines, "print 'progress SENT RECEIVED' lines on stderr every second (for rig run)")
}

// Parse completes s from fs, the FlagSet Register defined the flags on,
// after fs.Parse, and checks it. Every error is bad input.
func (s *Send) Parse(fs *flag.FlagSet) error {
	if err := s.Common.parse(fs, "to"); err != nil {
		return err
	}
	return s.Check()
}

// Check checks s as Parse does: sender.New refuses what it refuses.
func (s Send) Check() error {
	if err := s.Common.check(); err != nil {
		return err
	}
	switch {
	case s.Count < 1 || s.Count > MaxCount:
		return fmt.Errorf("--count %d: want 1..%d", s.Count, MaxCount)
	case s.Interval <= 0:
		return fmt.Errorf("--interval %v: want a positive duration such as 1ms", s.Interval)
	case s.Spin < 0:
		return fmt.Errorf("--spin %v: want 0 or more", s.Spin)
	case s.Poll != Block && s.Poll != Busy:
		return fmt.Errorf("--poll %v: want block or busy", s.Poll)
	case s.Port < -1 || s.Port > 65535:
		return fmt.Errorf("--port %d: want 0..65535", s.Port)
	case s.ReplyGroup.IsValid() && !isGroup(s.ReplyGroup):
		return fmt.Errorf("--reply-group %v: want an IPv4 multicast group:port", s.ReplyGroup)
	case s.Engine != EngineGo && s.Engine != EngineNative:
		return fmt.Errorf("--engine %s: rig send runs go or native (%s answers requests, it does not send them)", s.Engine, s.Engine)
	case s.Engine == EngineNative && s.Responders > 1:
		return fmt.Errorf("--responders %d with --engine native: the native sender files one responder's replies; use --engine go for several", s.Responders)
	case s.Responders < 1 || s.Responders > MaxResponders:
		return fmt.Errorf("--responders %d: want 1..%d", s.Responders, MaxResponders)
	case s.Count*s.Responders > MaxCount:
		return fmt.Errorf("--count %d × --responders %d: more than %d reply slots", s.Count, s.Responders, MaxCount)
	case s.Warmup < 0 || s.Warmup >= s.Count:
		return fmt.Errorf("--warmup %d: want 0..count-1", s.Warmup)
	case s.ReplyTimeout <= 0:
		return fmt.Errorf("--reply-timeout %v: want a positive duration such as 500ms", s.ReplyTimeout)
	case s.TxWait < 0:
		return fmt.Errorf("--tx-wait %v: want 0 or more", s.TxWait)
	}
	if err := wire.CheckSize(s.Size); err != nil {
		return fmt.Errorf("--size %d: %w", s.Size, err)
	}
	return s.Stack.check(s.Engine)
}

// LocalPort is the sender's UDP port: ReplyGroup's, else Port, else the
// port requests go to.
func (s Send) LocalPort() uint16 {
	switch {
	case s.ReplyGroup.IsValid():
		return s.ReplyGroup.Port()
	case s.Port >= 0:
		return uint16(s.Port)
	}
	return s.Dest().Port()
}

// Args is s as rig send's arguments (without the command name):
// registered and parsed, they give back s.
func (s Send) Args() []string { return args(s, (*Send).Register) }
