package main

import (
	"strings"

	"context"
	"github.com/rig-project/rig/internal/journal"
	"os"

	"github.com/rig-project/rig/internal/agent"
	"github.com/rig-project/rig/internal/hostfs"
)

func init() {
	register(&command{name: "agent", summary: "serve a rig controller on stdin/stdout (started by rig run on each host)", run: runAgent})
}

func runAgent(ctx context.Context, args []string) error {
	fs := newFlagSet("agent", "--stdio")
	stdio := fs.Bool("stdio", false, "speak the rig agent protocol on stdin/stdout (the only mode)")
	lane := fs.String("lane", "", "journal lane (the scenario's host name): agents on one machine journal side by side")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !*stdio {
		return usagef("agent: --stdio is required; rig run starts agents itself (e.g. via ssh HOST rig agent --stdio)")
	}
	s := &agent.Server{FS: hostfs.Default()}
	if *lane != "" {
		if strings.ContainsAny(*lane, "/.") || len(*lane) > 64 {
			return usagef("agent: --lane %q: want a plain name", *lane)
		}
		s.StateDir = journal.LaneDir(journal.Dir(), *lane)
	}
	// A signal ends the agent like a closed stdin does: its processes are
	// stopped and its knobs taken back before it exits.
	go func() {
		<-ctx.Done()
		s.Shutdown()
		os.Exit(1)
	}()
	return s.Serve(context.WithoutCancel(ctx), os.Stdin, os.Stdout)
}
