package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/rig-project/rig/internal/agent"
	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/runner"
	"github.com/rig-project/rig/internal/scenario"
)

func init() {
	register(&command{name: "run", summary: "run a scenario file (--dry-run: check it and print the plan)",
		usage: "FILE [--dry-run] [--results DIR] [--remote-rig PATH] [--format md|csv|json] [-v]", flags: runFlags})
}

func runFlags(fs *flag.FlagSet) func(context.Context) error {
	dry := fs.Bool("dry-run", false, "check the scenario against this host and print the plan; change nothing")
	results := fs.String("results", "results", "directory that receives the run directory")
	verbose := fs.Bool("v", false, "log every step, knob change and process line on stderr")
	remoteRig := fs.String("remote-rig", "rig", "the rig binary on hosts reached by ssh or kubectl (a path, or a name on their PATH)")
	format := addFormat(fs, "of the tables printed after the run, as rig report prints them; the run directory holds all three", "md", "csv", "json")
	return func(ctx context.Context) error {
		if fs.NArg() != 1 {
			return cli.Usagef("want one scenario FILE, got %d arguments (usage: rig run FILE [--dry-run])", fs.NArg())
		}
		if !*dry {
			return execRun(ctx, fs.Arg(0), *results, *remoteRig, format.value, *verbose)
		}
		if format.by != "" {
			return cli.Usagef("%s: --dry-run prints the plan, not tables", format.by)
		}
		return dryRun(ctx, os.Stdout, fs.Arg(0), hostfs.Default())
	}
}

// dryRun loads, validates and prints the plan of the scenario at path.
// Hosts in a network namespace of this machine are checked against the
// facts of an agent started in that namespace, as rig run does; remote
// hosts are not reached. Problems in the file are usage errors (exit 2).
func dryRun(ctx context.Context, w io.Writer, path string, root hostfs.FS) error {
	s, byHost, err := loadAndValidate(path, root, func(h scenario.Host) (*facts.Facts, error) {
		return netnsFacts(ctx, h)
	})
	if err != nil {
		return err
	}
	var localFS *hostfs.FS
	// CPU facts of the responder (idle states, siblings) are this machine's
	// for every host but a remote one.
	if h := s.HostWith(scenario.RoleResponder); h != nil && byHost[h.Name] != nil && (s.Emulate != "" || h.Local() || runner.IsNetns(*h)) {
		localFS = &root
	}
	return scenario.WriteDryRun(w, s, s.Plan(), scenario.DryRunOptions{Local: localFS, Unchecked: s.Unchecked(byHost), Timestamping: s.TimestampPlans(byHost)})
}

// netnsFacts asks an agent started in the host's network namespace for
// its facts: its interfaces are those of the namespace, not this one's.
func netnsFacts(ctx context.Context, h scenario.Host) (*facts.Facts, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	c, err := agent.DialRig(ctx, h.Name, h.Command, exe, nil, nil)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Facts(ctx)
}

// loadAndValidate loads a scenario and checks it against the hosts that
// share this machine's view: this machine itself and the namespaces of an
// emulated topology (their CPUs; they have no interface in the file). A
// host in a network namespace is checked with the facts netns returns for
// it, or not at all when netns is nil (`rig run` checks every host again
// through its agent before anything changes). Problems in the file are
// usage errors (exit 2).
func loadAndValidate(path string, root hostfs.FS, netns func(scenario.Host) (*facts.Facts, error)) (*scenario.Scenario, map[string]*facts.Facts, error) {
	s, err := scenario.Load(path)
	if err != nil {
		return nil, nil, cli.Usage(err) // unreadable or malformed: the file is bad input
	}
	byHost := map[string]*facts.Facts{}
	var local *facts.Facts // read once, for the first host on this machine
	for _, h := range s.Hosts {
		switch {
		case s.Emulate != "" || h.Local():
			if local == nil {
				if local, err = facts.Read(root); err != nil {
					return nil, nil, &scenario.HostError{Host: h.Name, Err: err}
				}
			}
			byHost[h.Name] = local
		case netns != nil && runner.IsNetns(h):
			f, err := netns(h)
			if err != nil {
				return nil, nil, fmt.Errorf("host %s: %w", h.Name, err)
			}
			byHost[h.Name] = f
		}
	}
	if err := scenario.Validate(s, byHost); err != nil {
		return nil, nil, err // a scenario.ErrorList when the file is at fault: exit 2
	}
	return s, byHost, nil
}
