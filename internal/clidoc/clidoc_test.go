package clidoc

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

type choice struct{ v string }

func (c *choice) String() string     { return c.v }
func (c *choice) Set(s string) error { c.v = s; return nil }
func (c *choice) Choices() []string  { return []string{"md", "json"} }

func toy() *Program {
	fs := flag.NewFlagSet("toy run", flag.ContinueOnError)
	fs.String("root", "/", "`DIR` to read; default /")
	fs.Int("n", 3, "rounds")
	fs.Bool("v", false, "talk")
	fs.Var(&choice{"md"}, "format", "output `FORMAT`")
	fs.Duration("wait", 0, ".5 µs - or more")
	return &Program{Name: "toy", Summary: "a toy", Version: "1.0", Synopsis: "COMMAND", Description: "Toy.\n\n    indented",
		Commands:   []Command{{Name: "run", Summary: "run it", Synopsis: "FILE [--n N]", Flags: fs}},
		ExitStatus: []ExitStatus{{0, "fine"}, {2, "bad input"}}}
}

func TestPrintFlags(t *testing.T) {
	var b bytes.Buffer
	PrintFlags(&b, toy().Commands[0].Flags)
	want := `  --format FORMAT
      output FORMAT (default md)
  -n int
      rounds (default 3)
  --root DIR
      DIR to read; default /
  -v
      talk
  --wait duration
      .5 µs - or more
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestCompletionAndMan(t *testing.T) {
	p := toy()
	var b bytes.Buffer
	if err := p.Bash(&b); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"_toy()", "'run --format'|'run -format') COMPREPLY=($(compgen -W 'md json'", "'run') flags='--help --format -n --root -v --wait'", "complete -o default -F _toy toy"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("bash script lacks %q:\n%s", w, b.String())
		}
	}
	b.Reset()
	if err := p.Zsh(&b); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"#compdef toy", "'run:run it'", "'--root:DIR to read'", "compdef _toy toy"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("zsh script lacks %q:\n%s", w, b.String())
		}
	}
	pages := p.ManPages()
	if len(pages) != 2 {
		t.Fatalf("pages %v", pages)
	}
	page := string(pages["toy-run.1"])
	for _, w := range []string{".TH TOY\\-RUN 1 \"\" \"toy 1.0\"", ".B toy run\nFILE [\\-\\-n N]", "\\fB\\-\\-root\\fR \\fIDIR\\fR\nDIR to read; default /\n",
		"\\fB\\-n\\fR \\fIint\\fR\nrounds (default 3)", "\\&.5 \\[u00B5]s \\- or more", "Run it."} {
		if !strings.Contains(page, w) {
			t.Errorf("toy-run.1 lacks %q:\n%s", w, page)
		}
	}
	top := string(pages["toy.1"])
	for _, w := range []string{".nf\n    indented\n.fi", ".B 2\nbad input", ".BR toy\\-run (1)"} {
		if !strings.Contains(top, w) {
			t.Errorf("toy.1 lacks %q:\n%s", w, top)
		}
	}
}
