package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/hostfs"
)

// The probes' command lines (flags, defaults, help texts, checks) are
// internal/probe's Respond, Send and Capture: the round runner writes the
// same types as the arguments it starts the probes with.

// parseProbe reads a probe's command line with parse and refuses bad
// input, a --cpu this host lacks included, before the NIC is touched. A
// probe survives a closed stdout (EPIPE).
func parseProbe(fs *flag.FlagSet, parse func(*flag.FlagSet) error, cpu *int) error {
	if err := noArgs(fs); err != nil {
		return err
	}
	surviveEPIPE()
	if err := parse(fs); err != nil {
		return cli.Usage(err)
	}
	if *cpu < 0 {
		return nil
	}
	return setupError(cpusched.CheckCPU(hostfs.Default(), *cpu))
}

// setupError marks a probe's setup error that is bad input (unknown
// interface, CPU, no hardware stamps where demanded) as a usage error.
func setupError(err error) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, os.ErrNotExist), errors.Is(err, errors.ErrUnsupported):
		return cli.Usage(err)
	case errors.Is(err, os.ErrPermission):
		if !strings.Contains(err.Error(), "CAP_") {
			err = fmt.Errorf("%w (needs root or CAP_NET_RAW/CAP_NET_ADMIN)", err)
		}
	}
	return err
}

func logf(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }
