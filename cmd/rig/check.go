package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/rig-project/rig/internal/check"
	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/cpurank"
)

const checkUsage = `[--cpu N | --rank-cpus[=LIST]] [--iface IF] [--multicast] [--format text|json] [--window D] [--host-root DIR]

Preflight checks of the responder CPU and NIC. Each check prints ok, warn,
FAIL or skip, the observed value and the exact fix. --rank-cpus first
watches the candidate CPUs (the ones rig may run on, or LIST) for --window
(default 1s), ranks them by measured noise and checks the quietest.

exit status: 0 every check ok or skipped, 3 worst is warn, 4 at least one
FAIL, 1 the checks could not run, 2 bad input.`

// checkExit carries rig check's exit code; the report is already printed.
type checkExit int

func (c checkExit) Error() string { return "" }
func (c checkExit) ExitCode() int { return int(c) }

func init() {
	register(&command{name: "check", summary: "preflight: is the responder CPU isolated and quiet, can the NIC stamp (exit 0/3/4)",
		usage: checkUsage, flags: checkFlags})
}

func checkFlags(fs *flag.FlagSet) func(context.Context) error {
	cpu := fs.Int("cpu", -1, "responder CPU (default: of the CPUs rig may run on, the first isolated one, else the last online one)")
	iface := fs.String("iface", "", "interface for the NIC checks (timestamping, PHC, ptp4l)")
	multicast := fs.Bool("multicast", false, "the requests will be multicast on --iface: check what the network needs for it (on EC2: IGMPv2 for a Transit Gateway multicast domain)")
	format := addFormat(fs, "", "text", "json")
	window := fs.Duration("window", 250*time.Millisecond, "how long to measure CPU use of the responder CPU and its SMT sibling (with --rank-cpus: how long to watch the candidates, default 1s)")
	var rank rankFlag
	fs.Var(&rank, "rank-cpus", "rank the CPUs rig may run on (or =LIST, e.g. --rank-cpus=2-5) by measured noise and check the quietest")
	root := addHostRoot(fs)
	return func(ctx context.Context) error {
		if fs.NArg() > 0 && rank.set {
			return cli.Usagef("unexpected arguments %q: it takes none (a CPU list for --rank-cpus is written --rank-cpus=%s)", fs.Args(), fs.Arg(0))
		}
		if err := noArgs(fs); err != nil {
			return err
		}
		if *cpu < -1 {
			return cli.Usagef("--cpu %d: want a CPU number", *cpu)
		}
		if *window <= 0 {
			return cli.Usagef("--window %v: want a positive duration such as 250ms", *window)
		}
		o := check.Options{CPU: *cpu, Iface: *iface, Multicast: *multicast, BusyWindow: *window}
		if rank.set {
			if *cpu >= 0 {
				return cli.Usagef("--cpu %d and --rank-cpus: choose the CPU or let the ranking choose it, not both", *cpu)
			}
			o.Rank = &cpurank.Options{CPUs: rank.cpus, Window: cpurank.DefaultWindow}
			fs.Visit(func(f *flag.Flag) {
				if f.Name == "window" {
					o.Rank.Window = *window
				}
			})
		}
		rep, err := check.Run(ctx, *root, o) // a cpurank error is bad input: exitCode
		if err != nil {
			return err
		}
		if format.value == "json" {
			enc := json.NewEncoder(os.Stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(rep); err != nil {
				return err
			}
		} else if err := rep.WriteText(os.Stdout); err != nil {
			return err
		}
		if code := rep.ExitCode(); code != 0 {
			return checkExit(code)
		}
		return nil
	}
}

// rankFlag is --rank-cpus (the CPUs rig may run on) or --rank-cpus=LIST.
type rankFlag struct {
	set  bool
	cpus []int
}

func (r *rankFlag) String() string {
	if r == nil || r.cpus == nil {
		return ""
	}
	return cpulist.Format(r.cpus)
}

func (r *rankFlag) IsBoolFlag() bool { return true }

func (r *rankFlag) Set(v string) error {
	r.set = true
	if v == "true" {
		r.cpus = nil
		return nil
	}
	l, err := cpulist.Parse(v)
	if err != nil || len(l) == 0 {
		return fmt.Errorf("want a CPU list such as 2-5 (written --rank-cpus=2-5), got %q", v)
	}
	r.cpus = l
	return nil
}
