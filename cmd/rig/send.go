package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/internal/wire"
	"github.com/rig-project/rig/sender"
)

func init() {
	register(&command{name: "send", summary: "send paced multicast requests, receive replies, print the RTT summary",
		usage: "--iface IF [--format text|json] [flags]\n\n" + sendSummaryHelp, flags: sendFlags})
}

func sendFlags(fs *flag.FlagSet) func(context.Context) error {
	var f probe.Send
	f.Register(fs)
	format := addFormat(fs, "of the summary; json: one object for scripts, see above", "text", "json")
	return func(ctx context.Context) error {
		if err := parseProbe(fs, f.Parse, &f.CPU); err != nil {
			return err
		}
		if f.Quiet && format.by != "" {
			return cli.Usagef("--quiet prints no summary, %s asks for one: drop one of them", format.by)
		}
		prog, err := sender.FindEngine(f)
		if err != nil {
			return setupError(err)
		}
		undo, err := prepareNIC(ctx, "send", f.Common, tstamp.NeedProbe)
		if err != nil {
			return err
		}
		defer undo()
		owner, err := nicOwner(f.Common)
		if err != nil {
			return err
		}
		s, err := sender.Open(f, sender.Options{Owner: owner}, prog)
		if err != nil {
			return setupError(err)
		}
		defer s.Close()
		if !f.Quiet {
			logf("rig send: run id %s: %d requests, %s, every %v from %s, timestamps %s", wire.FormatRunID(s.RunID()), f.Count, f.Requests(), f.Interval, f.Iface, s.Granted())
		}
		ctx, cancel := f.Bound(ctx)
		defer cancel()
		stopProgress := startProgress(ctx, s, f.Count, f.ProgressLines)
		restore := cpusched.TuneRuntime() // GC off, ≥ 2 Ps: the round's
		runErr := s.Run(ctx)
		restore()
		stopProgress()
		if f.Out != "" {
			if err := s.WriteFile(f.Out); err != nil {
				return err
			}
			if !f.Quiet {
				logf("rig send: wrote %s", f.Out)
			}
		}
		if !f.Quiet {
			if u := s.Thread(); u != nil {
				logf("rig send: pacing thread %s", u)
			}
			file := &samples.File{Header: s.Header(), Records: s.Records(),
				Footer: &samples.Footer{Counters: s.Counters(), PerResponder: s.PerResponder()}}
			for id := range f.Responders {
				j, err := samples.JoinResponder(uint32(id), file)
				if err == nil {
					j.Counters[samples.RoleSender] = file.Footer.CountersOf(uint32(id))
					if f.Responders > 1 && format.value == "text" {
						fmt.Printf("responder %d:\n", id)
					}
					err = printSendSummary(os.Stdout, format.value, j, f.Warmup)
				}
				if err != nil {
					return err
				}
			}
		}
		if err := f.Ended(ctx, runErr); err != nil || ctx.Err() == nil {
			return err
		}
		return fmt.Errorf("interrupted after %d requests", s.Counters().Sent)
	}
}
