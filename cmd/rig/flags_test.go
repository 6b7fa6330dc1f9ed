package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rig-project/rig/internal/cli"
)

// TestParseFlagsAnywhere: flags before, between and after positional
// arguments; "--" ends the flags.
func TestParseFlagsAnywhere(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	x := fs.Int("x", 0, "")
	csv := fs.Bool("csv", false, "")
	if err := parseFlags(fs, []string{"a", "-x", "3", "b", "--csv", "--", "-c", "d"}); err != nil {
		t.Fatal(err)
	}
	if *x != 3 || !*csv || !slices.Equal(fs.Args(), []string{"a", "b", "-c", "d"}) {
		t.Fatalf("x=%d csv=%v args=%q", *x, *csv, fs.Args())
	}
	fs = flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(nopWriter{})
	if err := parseFlags(fs, []string{"a", "--bogus"}); err == nil {
		t.Fatal("an unknown flag after an argument was accepted")
	} else if !errors.Is(err, cli.ErrUsage) {
		t.Fatalf("unknown flag: %T %v, want a usage error", err, err)
	}
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }

// TestEveryCommandTakesFlagsLast runs every registered command with its
// positional arguments first and -h last: each must parse the flag (and
// print its help, exit 0) rather than take "-h" for an argument.
func TestEveryCommandTakesFlagsLast(t *testing.T) {
	pos := map[string][]string{
		"agent": {"x"}, "capture": {"x"}, "check": {"x"}, "compare": {"a", "b"},
		"env": {"x"}, "lab": {"up", "lab1"}, "nicctl": {"show", "eth0"}, "report": {"dir"},
		"respond": {"x"}, "restore": {"x"}, "run": {"x.yaml"}, "samples": {"dir"}, "send": {"x"},
		"version": {"x"}, "completion": {"bash"}, "man": {"dir"}, "noise": {"x"},
	}
	for name := range commands {
		args, ok := pos[name]
		if !ok {
			t.Errorf("command %q is not covered by this test: add its positional arguments", name)
			continue
		}
		args = append(append([]string{name}, args...), "-h")
		if code := run(args); code != 0 {
			t.Errorf("rig %q: exit %d, want 0 (help): a flag after the arguments was not parsed", args, code)
		}
	}
}

// TestSamplesCSVLast is docs/probes.md's `rig samples DIR --csv`.
func TestSamplesCSVLast(t *testing.T) {
	dir := filepath.Join("..", "..", "analysis", "testdata", "run", "arms", "base", "round-0")
	for _, args := range [][]string{{"samples", dir, "--csv"}, {"samples", "--csv", dir}} {
		if code := run(args); code != 0 {
			t.Errorf("rig %q: exit %d, want 0", args, code)
		}
	}
	if code := run([]string{"samples", dir, "extra"}); code != 2 {
		t.Errorf("two arguments: exit %d, want 2", code)
	}
}

// TestDescribeRunsNothing: help, completion and man pages read a command's
// flags from its definitions without running it; rig runs it with the
// arguments parsed into them, positional ones in fs.Args().
func TestDescribeRunsNothing(t *testing.T) {
	var ran []string
	c := &command{name: "t", usage: "ARG [--n N]", flags: func(fs *flag.FlagSet) func(context.Context) error {
		n := fs.Int("n", 1, "a number")
		return func(context.Context) error {
			ran = append(ran, fmt.Sprint(*n, fs.Args()))
			return nil
		}
	}}
	d := describe(leaf{"t", c})
	if f := d.fs.Lookup("n"); f == nil || f.DefValue != "1" || d.synopsis() != "ARG [--n N]" || len(ran) != 0 {
		t.Fatalf("describe: flag %v, synopsis %q, ran %q", f, d.synopsis(), ran)
	}
	if err := c.exec(context.Background(), "t", []string{"a", "--n", "3"}); err != nil || !slices.Equal(ran, []string{"3 [a]"}) {
		t.Fatalf("exec: %v, ran %q", err, ran)
	}
	for _, l := range leaves() { // every command: its flags, nothing run
		if describe(l).fs.NFlag() != 0 {
			t.Errorf("rig %s: describing it set flags", l.path)
		}
	}
}
