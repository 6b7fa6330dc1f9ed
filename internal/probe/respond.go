package probe

import (
	"flag"
	"fmt"
	"net/netip"
	"time"

	"github.com/rig-project/rig/internal/cpusched"
)

// Respond is rig respond's command line.
type Respond struct {
	Common // Unicast is --listen
	// Reply is where replies go (--reply): zero = unicast, back to the
	// sender; else a multicast group:port.
	Reply netip.AddrPort
	// ID is the responder id carried in every reply (--id,
	// 0..MaxResponderID): each responder of one request stream has its own.
	ID       int
	CPU      int            // --cpu: the loop's CPU (-1: not pinned)
	Poll     Poll           // --poll
	Sched    cpusched.Sched // --sched
	Count    int            // --count: stop after answering this many (0: until stopped)
	Capacity int            // --capacity: sequences recorded
	TxWait   time.Duration  // --tx-wait
	Engine   Engine         // --engine
	Stack    Stack          // --stack, --stack-launcher, --stack-preload, --stack-env
}

// DefaultRespond is rig respond's command line with every flag at its
// default (Iface, which has none, empty).
func DefaultRespond() Respond {
	return Respond{Common: defaultCommon(), CPU: -1, Capacity: 100000, TxWait: 500 * time.Millisecond, Stack: Stack{Name: StackKernel}}
}

// Register defines rig respond's flags on fs, bound to r and set to their
// defaults. After fs.Parse, Parse completes r.
func (r *Respond) Register(fs *flag.FlagSet) {
	d := DefaultRespond()
	r.Common.register(fs, "listen", "unicast requests: bind this IPv4 address of --iface and port, join no group (instead of --group; the sender's --to)")
	fs.TextVar((*reply)(&r.Reply), "reply", reply(d.Reply), "where replies go: unicast (back to the sender) or a multicast group:port")
	fs.IntVar(&r.ID, "id", d.ID, fmt.Sprintf("responder id carried in every reply: give each responder of one request stream its own (0..%d)", MaxResponderID))
	fs.IntVar(&r.CPU, "cpu", d.CPU, "CPU to pin the responder loop to (-1: no pinning)")
	fs.TextVar(&r.Poll, "poll", d.Poll, "block (sleep in recvmsg) | busy (spin, one CPU at 100%) | busy-poll:µs (SO_BUSY_POLL); --engine native also: prefer-busy-poll:µs[:budget] | epoll | io-uring | io-uring-sqpoll")
	fs.TextVar(&r.Sched, "sched", d.Sched, "scheduling policy of the loop: other | fifo:N (needs CAP_SYS_NICE)")
	fs.IntVar(&r.Count, "count", d.Count, "stop after answering this many requests (0: until Ctrl-C)")
	fs.IntVar(&r.Capacity, "capacity", d.Capacity, "sequences recorded (0..capacity-1); more are answered but not recorded")
	fs.DurationVar(&r.TxWait, "tx-wait", d.TxWait, "how long to wait for the last replies' TX stamps")
	fs.TextVar(&r.Engine, "engine", d.Engine, "go (rig's own loop) | native (rig-respond-native, beside rig: a C loop no runtime interrupts, which kernel-bypass stacks can accelerate; more --poll backends) | xdp (the reflector: an XDP program answers in the driver, the path's floor) | xdp-generic (the same in the stack's receive path, for drivers without XDP) | tc (the same at tc ingress)")
	r.Stack.register(fs, d.Stack)
}

// Parse completes r from fs, the FlagSet Register defined the flags on,
// after fs.Parse, and checks it. Every error is bad input.
func (r *Respond) Parse(fs *flag.FlagSet) error {
	if err := r.Common.parse(fs, "listen"); err != nil {
		return err
	}
	return r.Check()
}

// Check checks r as Parse does: responder.New refuses what it refuses.
func (r Respond) Check() error {
	if err := r.Common.check(); err != nil {
		return err
	}
	if err := requireRunID("respond", r.RunID); err != nil {
		return err
	}
	switch {
	case r.ID < 0 || r.ID > MaxResponderID:
		return fmt.Errorf("--id %d: want 0..%d", r.ID, MaxResponderID)
	case r.Reply.IsValid() && !isGroup(r.Reply):
		return fmt.Errorf("--reply %v: want unicast or an IPv4 multicast group:port", r.Reply)
	case r.Count < 0:
		return fmt.Errorf("--count %d: want 0 (until stopped) or more", r.Count)
	case r.Capacity < 1:
		return fmt.Errorf("--capacity %d: want 1 or more", r.Capacity)
	case r.TxWait < 0:
		return fmt.Errorf("--tx-wait %v: want 0 or more", r.TxWait)
	}
	if err := checkReflector(r); err != nil {
		return err
	}
	if err := checkEnginePoll(r.Poll, r.Engine); err != nil {
		return err
	}
	return r.Stack.check(r.Engine)
}

// Args is r as rig respond's arguments (without the command name):
// registered and parsed, they give back r.
func (r Respond) Args() []string { return args(r, (*Respond).Register) }
