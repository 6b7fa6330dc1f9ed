package main

import (
	"context"
	"flag"
	"os"
	"strings"
	"sync/atomic"

	"github.com/rig-project/rig/internal/agent"
	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/journal"
)

func init() {
	register(&command{name: "agent", summary: "serve a rig controller on stdin/stdout (started by rig run on each host)",
		usage: "--stdio [--lane NAME] [--run ID]", flags: agentFlags})
}

func agentFlags(fs *flag.FlagSet) func(context.Context) error {
	stdio := fs.Bool("stdio", false, "speak the rig agent protocol on stdin/stdout (the only mode)")
	lane := fs.String("lane", "", "journal lane (the scenario's host name): agents on one machine journal side by side")
	runID := fs.String("run", "", "the run this agent serves: it shares that run's host lock on this machine")
	return func(ctx context.Context) error {
		if err := noArgs(fs); err != nil {
			return err
		}
		if !*stdio {
			return cli.Usagef("--stdio is required; rig run starts agents itself (e.g. via ssh HOST rig agent --stdio)")
		}
		s := &agent.Server{FS: hostfs.Default(), LockDir: journal.Dir(), RunID: *runID}
		if *lane != "" {
			if strings.ContainsAny(*lane, "/.") || len(*lane) > 64 {
				return cli.Usagef("--lane %q: want a plain name", *lane)
			}
			s.StateDir = journal.LaneDir(journal.Dir(), *lane)
		}
		// Its cleanup starts on stdin's EOF, when writes to stdout already fail.
		surviveEPIPE()
		// Work directories of agents that were killed on this host.
		agent.RemoveStaleWorkDirs("")
		// A signal (SIGINT, SIGTERM, SIGHUP: see main) ends the agent like a
		// closed stdin does: its processes are stopped and its knobs taken back
		// before it exits 1. ctx is also cancelled when runAgent returns: that
		// is no signal, and the agent then exits with Serve's result.
		var served atomic.Bool
		go func() {
			<-ctx.Done()
			if served.Load() {
				return
			}
			s.Shutdown()
			os.Exit(1)
		}()
		err := s.Serve(context.WithoutCancel(ctx), os.Stdin, os.Stdout)
		served.Store(true)
		return err
	}
}
