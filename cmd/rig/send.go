package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/internal/wire"
	"github.com/rig-project/rig/responder"
	"github.com/rig-project/rig/sender"
)

func init() {
	register(&command{name: "send", summary: "send paced multicast requests, receive replies, print the RTT summary", run: runSend})
}

func runSend(ctx context.Context, args []string) error {
	fs := newFlagSet("send", "--iface IF [--format text|json] [flags]\n\n"+sendSummaryHelp)
	var pf probeFlags
	pf.register(fs)
	pf.registerUnicast(fs, "to", "unicast requests: the responder's IPv4 address:port on its interface (instead of --group; the responder's --listen)")
	count := fs.Int("count", 10000, "requests in the round")
	interval := fs.Duration("interval", time.Millisecond, "request k is due at start + k·interval")
	size := fs.Int("size", 64, "UDP payload bytes (40..1472)")
	spin := fs.Duration("spin", 50*time.Microsecond, "spin this long before each due time instead of sleeping (0: sleep only); a reply being awaited is still slept for in ppoll, so --spin ≥ --interval is sockperf's client: block for the reply, busy-wait to the next send")
	cpu := fs.Int("cpu", -1, "CPU to pin the pacing thread to (-1: no pinning)")
	sched := fs.String("sched", "other", "scheduling policy of the pacing thread: other | fifo:N")
	poll := fs.String("poll", "block", "how the sending thread waits for replies and TX stamps between sends: block (sleeps in ppoll: one wake-up per reply) | busy (polls the socket without blocking: no wake-up, one CPU at 100 %)")
	port := fs.Int("port", -1, "local UDP port; replies come back to it (-1: the port of --group or --to)")
	replyGroup := fs.String("reply-group", "", "join this group:port for replies (the responder's --reply); its port becomes the local port")
	warmup := fs.Int("warmup", 2, "leading sequences excluded from the summary (recorded anyway)")
	replyTimeout := fs.Duration("reply-timeout", time.Second, "a reply more than this after its request left (kernel stamps where taken) counts as late, apart from lost; the round waits this long for the last replies")
	txWait := fs.Duration("tx-wait", 500*time.Millisecond, "how long to wait for TX stamps after the last send")
	quiet := fs.Bool("quiet", false, "do not print the summary")
	format := addFormat(fs, "of the summary; json: one object for scripts, see above", "text", "json")
	progressLines := fs.Bool("progress-lines", false, "print 'progress SENT RECEIVED' lines on stderr every second (for rig run)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if *quiet && format.by != "" {
		return usagef("--quiet prints no summary, %s asks for one: drop one of them", format.by)
	}
	surviveEPIPE()
	group, mode, runID, err := pf.parse()
	if err != nil {
		return err
	}
	sc, err := parseSched(*sched)
	if err != nil {
		return err
	}
	pm, busyPollUS, err := responder.ParsePoll(*poll)
	if err != nil || busyPollUS != 0 {
		return usagef("--poll %q: want block or busy", *poll)
	}
	cfg := sender.Config{Poll: pm, Iface: pf.iface, Group: group, To: pf.unicast.addr, Interval: *interval, Count: *count, Size: *size,
		Spin: *spin, CPU: *cpu, Sched: sc, Timestamps: mode, RunID: runID, Arm: pf.arm,
		ArmIndex: pf.armIndex, Round: pf.round, Warmup: *warmup, ReplyTimeout: *replyTimeout, TxWait: *txWait}
	switch {
	case *port > 65535:
		return usagef("--port %d: want 0..65535", *port)
	case *port >= 0:
		cfg.Port = uint16(*port)
	default:
		cfg.Port = pf.dest(group).Port()
	}
	if *replyGroup != "" {
		rg, err := parseReply(*replyGroup)
		if err != nil || !rg.IsValid() {
			return usagef("--reply-group %q: want an IPv4 multicast group:port", *replyGroup)
		}
		cfg.ReplyGroup, cfg.Port = rg.Addr(), rg.Port()
	}
	if *warmup < 0 || *warmup >= *count {
		return usagef("--warmup %d: want 0..count-1", *warmup)
	}
	// Bad input is refused before the NIC is touched.
	if *cpu >= 0 {
		if err := cpusched.CheckCPU(hostfs.Default(), *cpu); err != nil {
			return setupError(err)
		}
	}
	undo, err := prepareNIC(ctx, "send", &pf, mode, tstamp.NeedProbe)
	if err != nil {
		return err
	}
	defer undo()
	s, err := sender.New(cfg)
	if err != nil {
		if errors.Is(err, sender.ErrConfig) {
			return usageError{err}
		}
		return setupError(err)
	}
	defer s.Close()
	if !*quiet {
		logf("rig send: run id %s: %d requests, %s, every %v from %s, timestamps %s", wire.FormatRunID(s.RunID()), *count, pf.requests(group), *interval, pf.iface, s.Granted())
	}
	ctx, cancel := pf.bound(ctx)
	defer cancel()
	stopProgress := startProgress(ctx, s, *count, *progressLines)
	runErr := s.Run(ctx)
	stopProgress()
	if pf.out != "" {
		if err := s.WriteFile(pf.out); err != nil {
			return err
		}
		if !*quiet {
			logf("rig send: wrote %s", pf.out)
		}
	}
	if !*quiet {
		if u := s.Thread(); u != nil {
			logf("rig send: pacing thread %s", u)
		}
		j, err := samples.Join(&samples.File{Header: s.Header(), Records: s.Records()})
		if err == nil {
			j.Counters[samples.RoleSender] = s.Counters()
			err = printSendSummary(os.Stdout, format.value, j, *warmup)
		}
		if err != nil {
			return err
		}
	}
	if err := pf.expired(ctx); err != nil {
		return err
	}
	if runErr != nil && ctx.Err() == nil {
		return runErr
	}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted after %d requests", s.Counters().Sent)
	}
	return nil
}
