package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/scenario"
)

func init() {
	register(&command{name: "run", summary: "run a scenario file (--dry-run: check it and print the plan)", run: runCmd})
}

func runCmd(ctx context.Context, args []string) error {
	fs := newFlagSet("run", "[--dry-run] FILE")
	dry := fs.Bool("dry-run", false, "check the scenario against this host and print the plan; change nothing")
	results := fs.String("results", "results", "directory that receives the run directory")
	verbose := fs.Bool("v", false, "log every step, knob change and process line on stderr")
	remoteRig := fs.String("remote-rig", "rig", "the rig binary on hosts reached by ssh or kubectl (a path, or a name on their PATH)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("run: want one scenario FILE, got %d arguments (usage: rig run [--dry-run] FILE)", fs.NArg())
	}
	if !*dry {
		return execRun(ctx, fs.Arg(0), *results, *remoteRig, *verbose)
	}
	return dryRun(os.Stdout, fs.Arg(0), hostfs.Default())
}

// dryRun loads, validates and prints the plan of the scenario at path.
// Problems in the file are usage errors (exit 2).
func dryRun(w io.Writer, path string, root hostfs.FS) error {
	s, facts, err := loadAndValidate(path, root)
	if err != nil {
		return err
	}
	var localFS *hostfs.FS
	if h := s.HostWith(scenario.RoleResponder); h != nil && facts[h.Name] != nil {
		localFS = &root
	}
	return scenario.WriteDryRun(w, s, s.Plan(), scenario.DryRunOptions{Local: localFS, Unchecked: s.Unchecked(facts), Timestamping: s.TimestampPlans(facts)})
}

// loadAndValidate loads a scenario and checks it against the hosts this
// process can read itself (this machine and its namespaces); `rig run`
// checks every host again through its agent. Problems in the file are
// usage errors (exit 2).
func loadAndValidate(path string, root hostfs.FS) (*scenario.Scenario, map[string]scenario.HostFacts, error) {
	s, err := scenario.Load(path)
	if err != nil {
		return nil, nil, usageError{err}
	}
	facts := map[string]scenario.HostFacts{}
	local := scenario.LocalFacts{FS: root}
	for _, h := range s.Hosts {
		// Emulated hosts and netns hosts are namespaces of this machine:
		// same CPUs (their interfaces are checked by the agents).
		if s.Emulate != "" || h.Local() || (len(h.Command) == 4 && h.Command[0] == "ip") {
			facts[h.Name] = local
		}
	}
	if err := scenario.Validate(s, facts); err != nil {
		var list scenario.ErrorList
		if errors.As(err, &list) {
			return nil, nil, usageError{err}
		}
		return nil, nil, fmt.Errorf("run: %w", err)
	}
	return s, facts, nil
}
