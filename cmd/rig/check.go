package main

import (
	"context"
	"encoding/json"
	"os"
	"time"

	"github.com/rig-project/rig/internal/check"
)

const checkUsage = `[--cpu N] [--iface IF] [--multicast] [--format text|json] [--window D] [--host-root DIR]

Preflight checks of the responder CPU and NIC. Each check prints ok, warn,
FAIL or skip, the observed value and the exact fix.

exit status: 0 every check ok or skipped, 3 worst is warn, 4 at least one
FAIL, 1 the checks could not run, 2 bad input.`

// checkExit carries rig check's exit code; the report is already printed.
type checkExit int

func (c checkExit) Error() string { return "" }
func (c checkExit) ExitCode() int { return int(c) }

func init() {
	register(&command{name: "check", summary: "preflight: is the responder CPU isolated and quiet, can the NIC stamp (exit 0/3/4)", run: runCheck})
}

func runCheck(ctx context.Context, args []string) error {
	fs := newFlagSet("check", checkUsage)
	cpu := fs.Int("cpu", -1, "responder CPU (default: first isolated CPU, else the last online CPU)")
	iface := fs.String("iface", "", "interface for the NIC checks (timestamping, PHC, ptp4l)")
	multicast := fs.Bool("multicast", false, "the requests will be multicast on --iface: check what the network needs for it (on EC2: IGMPv2 for a Transit Gateway multicast domain)")
	format := addFormat(fs, "", "text", "json")
	window := fs.Duration("window", 250*time.Millisecond, "how long to measure CPU use of the responder CPU and its SMT sibling")
	root := addHostRoot(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if *cpu < -1 {
		return usagef("--cpu %d: want a CPU number", *cpu)
	}
	if *window <= 0 {
		return usagef("--window %v: want a positive duration such as 250ms", *window)
	}
	rep, err := check.Run(ctx, *root, check.Options{CPU: *cpu, Iface: *iface, Multicast: *multicast, BusyWindow: *window})
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
