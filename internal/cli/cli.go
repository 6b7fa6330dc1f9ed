// Package cli is what rig's packages share of its command lines: the one
// mark of bad input (ErrUsage: exit status 2), which any package wraps,
// and the helpers that read a flag.FlagSet's definitions — a value's
// command line (Args) and the message of a refused typed value (Parse).
//
// It is a leaf: it imports the standard library only.
package cli

import (
	"encoding"
	"errors"
	"flag"
	"fmt"
)

// ErrUsage marks bad input — flags, arguments, a file or a host that
// refutes what was asked — rather than a failure to do the work: rig
// exits 2 for an error that matches it.
var ErrUsage = errors.New("bad input")

// usage is an error marked as bad input: it reads as itself.
type usage struct{ error }

func (u usage) Unwrap() []error { return []error{u.error, ErrUsage} }

// Usage marks err as bad input: it reads as err and matches ErrUsage and
// whatever err matches. Usage(nil) is nil.
func Usage(err error) error {
	if err == nil {
		return nil
	}
	return usage{err}
}

// Usagef is Usage(fmt.Errorf(format, a...)).
func Usagef(format string, a ...any) error { return usage{fmt.Errorf(format, a...)} }

// Args is the command line of fs's values: every flag whose value differs
// from its default, as --NAME=VALUE, in the order of fs.VisitAll (by
// name). Parsed by a FlagSet with the same definitions, it gives back the
// values.
func Args(fs *flag.FlagSet) []string {
	var a []string
	fs.VisitAll(func(f *flag.Flag) {
		if v := f.Value.String(); v != f.DefValue {
			a = append(a, "--"+f.Name+"="+v)
		}
	})
	return a
}

// Parse is fs.Parse(args), except that a value a typed flag refuses (one
// registered with flag.TextVar) reads `invalid value --NAME "VALUE": why`,
// as rig writes a flag, rather than the flag package's "invalid value
// "VALUE" for flag -NAME: why".
func Parse(fs *flag.FlagSet, args []string) error {
	var refused error
	var typed []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if g, ok := f.Value.(flag.Getter); ok {
			if _, ok := g.Get().(encoding.TextUnmarshaler); ok {
				typed = append(typed, f)
				f.Value = named{f.Value, f.Name, &refused}
			}
		}
	})
	err := fs.Parse(args)
	for _, f := range typed {
		f.Value = f.Value.(named).Value
	}
	if err != nil && refused != nil {
		return refused
	}
	return err
}

// named records the refusal of its value's Set under the flag's name.
type named struct {
	flag.Value
	name    string
	refused *error
}

func (n named) Set(s string) error {
	err := n.Value.Set(s)
	if err != nil {
		*n.refused = fmt.Errorf("invalid value --%s %q: %w", n.name, s, err)
	}
	return err
}
