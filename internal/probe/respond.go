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
}

// DefaultRespond is rig respond's command line with every flag at its
// default (Iface, which has none, empty).
func DefaultRespond() Respond {
	return Respond{Common: defaultCommon(), CPU: -1, Capacity: 100000, TxWait: 500 * time.Millisecond}
}

// Register defines rig respond's flags on fs, bound to r and set to their
// defaults. After fs.Parse, Parse completes r.
func (r *Respond) Register(fs *flag.FlagSet) {
	d := DefaultRespond()
	r.Common.register(fs, "listen", "unicast requests: bind this IPv4 address of --iface and port, join no group (instead of --group; the sender's --to)")
	fs.String("reply", replyText(d.Reply), "where replies go: unicast (back to the sender) or a multicast group:port")
	fs.IntVar(&r.ID, "id", d.ID, fmt.Sprintf("responder id carried in every reply: give each responder of one request stream its own (0..%d)", MaxResponderID))
	fs.IntVar(&r.CPU, "cpu", d.CPU, "CPU to pin the responder loop to (-1: no pinning)")
	fs.String("poll", d.Poll.String(), "block (sleep in recvmsg) | busy (spin, one CPU at 100%) | busy-poll:µs (SO_BUSY_POLL); --engine native also: prefer-busy-poll:µs[:budget] | epoll | io-uring | io-uring-sqpoll")
	fs.String("sched", d.Sched.String(), "scheduling policy of the loop: other | fifo:N (needs CAP_SYS_NICE)")
	fs.IntVar(&r.Count, "count", d.Count, "stop after answering this many requests (0: until Ctrl-C)")
	fs.IntVar(&r.Capacity, "capacity", d.Capacity, "sequences recorded (0..capacity-1); more are answered but not recorded")
	fs.DurationVar(&r.TxWait, "tx-wait", d.TxWait, "how long to wait for the last replies' TX stamps")
	fs.String("engine", d.Engine.String(), "go (rig's own loop) | native (rig-respond-native, beside rig: a C loop no runtime interrupts, which kernel-bypass stacks can accelerate; more --poll backends)")
}

// Parse completes r from fs, the FlagSet Register defined the flags on,
// after fs.Parse: it reads the typed flags with their parsers and checks
// the command line. Every error is bad input.
func (r *Respond) Parse(fs *flag.FlagSet) error {
	if err := r.Common.parse(fs, "listen"); err != nil {
		return err
	}
	if err := requireRunID("respond", r.RunID); err != nil {
		return err
	}
	if r.ID < 0 || r.ID > MaxResponderID {
		return fmt.Errorf("--id %d: want 0..%d", r.ID, MaxResponderID)
	}
	var err error
	if r.Reply, err = parseReply(text(fs, "reply")); err != nil {
		return err
	}
	if r.Engine, err = ParseEngine(text(fs, "engine")); err != nil {
		return fmt.Errorf("--engine: %w", err)
	}
	if r.Poll, err = ParseEnginePoll(text(fs, "poll"), r.Engine); err != nil {
		return err
	}
	r.Sched, err = cpusched.ParseSched(text(fs, "sched"))
	return err
}

// Args is r as rig respond's arguments (without the command name):
// registered and parsed, they give back r.
func (r Respond) Args() []string {
	var a argv
	r.Common.args(&a, "listen")
	a.str("reply", replyText(r.Reply))
	a.int("id", r.ID)
	a.int("cpu", r.CPU)
	a.str("poll", r.Poll.String())
	a.str("sched", r.Sched.String())
	a.int("count", r.Count)
	a.int("capacity", r.Capacity)
	a.dur("tx-wait", r.TxWait)
	if r.Engine != EngineGo {
		a.str("engine", r.Engine.String())
	}
	return a
}

func replyText(reply netip.AddrPort) string {
	if !reply.IsValid() {
		return "unicast"
	}
	return reply.String()
}

// parseReply parses --reply: "unicast" (or "") or a multicast group:port.
func parseReply(s string) (netip.AddrPort, error) {
	if s == "" || s == "unicast" {
		return netip.AddrPort{}, nil
	}
	ap, err := parseGroup(s)
	if err != nil {
		return ap, fmt.Errorf("--reply %q: want unicast or an IPv4 multicast group:port such as 239.1.1.2:9001", s)
	}
	return ap, nil
}
