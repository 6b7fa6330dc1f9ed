package cli

import (
	"errors"
	"flag"
	"io"
	"net/netip"
	"os"
	"slices"
	"testing"
	"time"
)

// flags defines one flag of each kind on a fresh FlagSet.
func flags() (*flag.FlagSet, *int, *bool, *time.Duration, *netip.AddrPort) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	n := fs.Int("n", 3, "")
	b := fs.Bool("quiet", false, "")
	d := fs.Duration("wait", time.Second, "")
	var ap netip.AddrPort
	fs.TextVar(&ap, "to", netip.MustParseAddrPort("10.0.0.1:1"), "")
	return fs, n, b, d, &ap
}

// TestArgs: Args writes the values that differ from their defaults, by
// name, and a FlagSet with the same definitions parses them back.
func TestArgs(t *testing.T) {
	fs, n, b, d, ap := flags()
	if a := Args(fs); len(a) != 0 {
		t.Errorf("defaults: %q, want none", a)
	}
	*n, *b, *ap = 7, true, netip.AddrPort{}
	a := Args(fs)
	if want := []string{"--n=7", "--quiet=true", "--to="}; !slices.Equal(a, want) {
		t.Fatalf("Args = %q, want %q", a, want)
	}
	back, n2, b2, d2, ap2 := flags()
	if err := Parse(back, a); err != nil || *n2 != 7 || !*b2 || *d2 != *d || ap2.IsValid() {
		t.Errorf("%q parsed back: %d %v %v %v, %v", a, *n2, *b2, *d2, *ap2, err)
	}
}

// TestParse: a typed flag's refused value is named as rig writes flags,
// its cause kept; the flag package's other errors pass unchanged, and the
// FlagSet's values are its own again afterwards.
func TestParse(t *testing.T) {
	fs, _, _, _, _ := flags()
	err := Parse(fs, []string{"--n", "4", "--to", "10.0.0.2"})
	if err == nil || err.Error() != `invalid value --to "10.0.0.2": not an ip:port` || errors.Unwrap(err) == nil {
		t.Errorf("bad --to: %v", err)
	}
	if _, ok := fs.Lookup("to").Value.(named); ok {
		t.Error("--to's value is still wrapped after Parse")
	}
	if err := Parse(fs, []string{"--n", "x"}); err == nil || err.Error() != `invalid value "x" for flag -n: parse error` {
		t.Errorf("bad --n: %v", err)
	}
	if err := Parse(fs, []string{"--to", "10.0.0.2:9"}); err != nil || fs.Lookup("to").Value.String() != "10.0.0.2:9" {
		t.Errorf("good --to: %v", err)
	}
}

// TestUsage: a usage error reads as the error it marks and matches both
// ErrUsage and what that error matches.
func TestUsage(t *testing.T) {
	err := Usage(&os.PathError{Op: "open", Path: "x", Err: os.ErrNotExist})
	if err.Error() != "open x: file does not exist" || !errors.Is(err, ErrUsage) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Usage: %v", err)
	}
	if err := Usagef("--n %d: want 1..2", 3); err.Error() != "--n 3: want 1..2" || !errors.Is(err, ErrUsage) {
		t.Errorf("Usagef: %v", err)
	}
	if Usage(nil) != nil {
		t.Error("Usage(nil) is not nil")
	}
	if errors.Is(errors.New("x"), ErrUsage) {
		t.Error("a plain error matches ErrUsage")
	}
}
