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

	"github.com/rig-project/rig/internal/cli"
)

// command is one `rig NAME` subcommand, or one `rig NAME SUB` of a command
// that has subcommands (rig lab up, rig nicctl set).
type command struct {
	name    string
	summary string
	// usage is what follows "rig NAME" in the synopsis (its lines up to
	// the first blank one), then optionally a description.
	usage string
	// flags defines the command's flags on fs and returns its run, bound
	// to them. Help, completion and man pages call it to read the flags
	// and run nothing; rig parses the arguments into fs, then runs, and
	// the positional arguments are fs.Args(). Return a usage error
	// (cli.Usage) for bad input; exitCode maps every error to the exit
	// status.
	flags func(fs *flag.FlagSet) (run func(context.Context) error)
	// subs, when set, are the subcommands; flags is then nil.
	subs []*command
}

var commands = map[string]*command{}

func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("duplicate command " + c.name)
	}
	if (c.flags == nil) == (c.subs == nil) {
		panic("command " + c.name + ": want either flags or subcommands")
	}
	commands[c.name] = c
}

// commandNames returns the registered command names, sorted.
func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// sub returns c's subcommand named name, or nil.
func (c *command) sub(name string) *command {
	for _, s := range c.subs {
		if s.name == name {
			return s
		}
	}
	return nil
}

func (c *command) subNames() []string {
	var n []string
	for _, s := range c.subs {
		n = append(n, s.name)
	}
	return n
}

// leaf is a runnable command: `rig NAME` or `rig NAME SUB`.
type leaf struct {
	path string // "run", "nicctl set"
	c    *command
}

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		args = append([]string{"version"}, args[1:]...)
	}
	if len(args) > 0 && args[0] == "help" && len(args) > 1 {
		args = append(args[1:], "-h") // rig help CMD [SUB] is rig CMD [SUB] -h
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) == 0 {
			mainUsage(os.Stderr)
			return 2
		}
		mainUsage(os.Stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok && args[0] == "bench" {
		fmt.Fprintln(os.Stderr, benchMoved(args[1:]))
		return 2
	}
	if !ok {
		fmt.Fprintf(os.Stderr, "rig: unknown command %q (rig -h lists them)\n", args[0])
		return 2
	}
	// SIGHUP (the terminal or the ssh session went away) stops a command
	// like Ctrl-C does: whatever it changed is put back.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	path, err := dispatch(ctx, c, args[1:])
	return finish(os.Stderr, path, err)
}

// dispatch runs c, or the subcommand its first argument names, and
// returns the command's path for messages ("nicctl set") and its error.
func dispatch(ctx context.Context, c *command, args []string) (string, error) {
	if c.subs == nil {
		return c.name, c.exec(ctx, c.name, args)
	}
	want := strings.Join(c.subNames(), ", ")
	switch {
	case len(args) == 0:
		subUsage(os.Stderr, c)
		return c.name, cli.Usagef("missing subcommand: want %s", want)
	case args[0] == "-h" || args[0] == "--help" || args[0] == "help":
		subUsage(os.Stdout, c)
		return c.name, nil
	}
	s := c.sub(args[0])
	if s == nil {
		if strings.HasPrefix(args[0], "-") {
			return c.name, cli.Usagef("the subcommand (%s) comes before the flags: rig %s SUB %s", want, c.name, strings.Join(args, " "))
		}
		return c.name, cli.Usagef("unknown subcommand %q: want %s", args[0], want)
	}
	path := c.name + " " + s.name
	return path, s.exec(ctx, path, args[1:])
}

// exec runs c as `rig path`: its flags defined, args parsed into them.
func (c *command) exec(ctx context.Context, path string, args []string) error {
	fs := newFlagSet(path, c.usage)
	run := c.flags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return run(ctx)
}

// surviveEPIPE is for commands that must finish their work after whoever
// reads their output is gone (kill -9 of rig run, a dropped ssh): the
// agent, which must take its arm back, and the probes, which must write
// their files and put back what they changed. Without a SIGPIPE handler
// Go ends the process at its first write to a stdout or stderr pipe
// without a reader; with one, the write fails with EPIPE and the process
// carries on. The handler is not inherited across exec.
func surviveEPIPE() { signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE) }

// finish prints err once, as "rig: PATH: what", and returns the exit
// status for it.
func finish(w io.Writer, path string, err error) int {
	code := exitCode(err)
	if code != 0 {
		if msg := message(path, err); msg != "" {
			fmt.Fprintln(w, msg)
		}
	}
	return code
}

// message is the line rig prints for err from the command at path, or ""
// when the command already said everything (rig check's verdict).
func message(path string, err error) string {
	msg := strings.TrimSpace(err.Error())
	if msg == "" {
		return ""
	}
	// Missing privilege: say how to get it.
	if errors.Is(err, os.ErrPermission) && !strings.Contains(msg, "CAP_") && !strings.Contains(msg, "as root") {
		msg += ": run it as root (sudo)"
	}
	return "rig: " + path + ": " + msg
}

// exitStatus is rig's table of exit statuses: exitCode implements it, rig
// -h and the man page print it, and the package doc repeats it (a test
// keeps them equal).
var exitStatus = []struct {
	code    int
	meaning string
}{
	{0, "success; rig check: every check ok or skipped; -h and --version"},
	{1, "failure: the command could not do its work (a host, a probe, a file); what it changed is put back"},
	{2, "bad input: flags, arguments, a scenario the file or the hosts refute, a missing interface or CPU, no hardware stamps where demanded, a missing privilege, a pending journal (run rig restore)"},
	{3, "done, with problems: rig report and rig compare read a damaged or incomplete run directory (what could be read is printed); rig check's worst result is warn"},
	{4, "rig check: at least one check FAILed"},
}

// exitCoder lets an error choose the exit status (rig check's verdict, rig
// report's problems).
type exitCoder interface{ ExitCode() int }

// exitCode maps an error to rig's exit status (see exitStatus). Bad input
// is 2 whether cmd/rig found it or a package did: an error that matches
// cli.ErrUsage, or a missing privilege (os.ErrPermission).
func exitCode(err error) int {
	var ec exitCoder
	switch {
	case err == nil || isHelp(err):
		return 0
	case errors.As(err, &ec):
		return ec.ExitCode()
	case errors.Is(err, cli.ErrUsage), errors.Is(err, os.ErrPermission):
		return 2
	}
	return 1
}
