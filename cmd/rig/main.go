// Command rig is the CLI of the rig latency test rig. It stays thin: each
// subcommand parses its flags in its own file and calls into the packages.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// command is one `rig NAME` subcommand.
type command struct {
	name    string
	summary string
	// run gets the arguments after the subcommand name. Return a usageError
	// for bad input (exit 2); any other error exits 1.
	run func(ctx context.Context, args []string) error
}

var commands = map[string]*command{}

func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("duplicate command " + c.name)
	}
	commands[c.name] = c
}

// usageError marks bad input: wrong flags, malformed values, unknown names.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// exitCoder lets an error choose the process exit code (e.g. rig check).
type exitCoder interface{ ExitCode() int }

// newFlagSet returns a FlagSet whose parse errors become usage errors.
func newFlagSet(name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet("rig "+name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: rig %s %s\n", name, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args and maps errors to usage errors (exit 2). Flags
// may come before, between and after the positional arguments (`rig
// samples DIR --csv`), which fs.Args() then holds in order; "--" ends the
// flags.
func parseFlags(fs *flag.FlagSet, args []string) error {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return usageError{err}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	// Leave exactly the positional arguments in fs.Args().
	return fs.Parse(append([]string{"--"}, pos...))
}

// noArgs refuses positional arguments for a command that takes none.
func noArgs(fs *flag.FlagSet) error {
	if fs.NArg() > 0 {
		return usagef("%s takes no arguments, got %q", fs.Name(), fs.Args())
	}
	return nil
}

func mainUsage(w io.Writer) {
	fmt.Fprintln(w, "rig: hardware-timestamped round-trip latency test rig")
	fmt.Fprintln(w, "\nusage: rig COMMAND [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nrun 'rig COMMAND -h' for the flags of one command")
}

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		mainUsage(os.Stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(os.Stderr, "rig: unknown command %q\n\n", args[0])
		mainUsage(os.Stderr)
		return 2
	}
	// SIGHUP (the terminal or the ssh session went away) stops a command
	// like Ctrl-C does: whatever it changed is put back.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	err := c.run(ctx, args[1:])
	return exitCode(err)
}

// surviveEPIPE is for commands that must finish their work after whoever
// reads their output is gone (kill -9 of rig run, a dropped ssh): the
// agent, which must take its arm back, and the probes, which must write
// their files and put back what they changed. Without a SIGPIPE handler
// Go ends the process at its first write to a stdout or stderr pipe
// without a reader; with one, the write fails with EPIPE and the process
// carries on. The handler is not inherited across exec.
func surviveEPIPE() { signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE) }

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var ec exitCoder
	if errors.As(err, &ec) {
		if msg := strings.TrimSpace(err.Error()); msg != "" {
			fmt.Fprintln(os.Stderr, "rig:", msg)
		}
		return ec.ExitCode()
	}
	// Missing privilege is bad input like a wrong flag: exit 2, with a
	// message that names the capability or says to run as root.
	if errors.Is(err, os.ErrPermission) {
		if msg := err.Error(); !strings.Contains(msg, "CAP_") && !strings.Contains(msg, "as root") {
			err = fmt.Errorf("%w: run it as root (sudo)", err)
		}
		fmt.Fprintln(os.Stderr, "rig:", err)
		return 2
	}
	fmt.Fprintln(os.Stderr, "rig:", err)
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}
