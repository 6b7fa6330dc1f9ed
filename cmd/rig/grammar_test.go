package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rig-project/rig/analysis"
	"github.com/rig-project/rig/internal/agent"
	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/clidoc"
	"github.com/rig-project/rig/internal/cpurank"
	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/scenario"
	"github.com/rig-project/rig/nicctl"
)

// leaves returns every runnable command in the order rig -h lists them.
func leaves() []leaf {
	var l []leaf
	for _, n := range commandNames() {
		c := commands[n]
		if c.subs == nil {
			l = append(l, leaf{n, c})
		}
		for _, s := range c.subs {
			l = append(l, leaf{n + " " + s.name, s})
		}
	}
	return l
}

// rigIn runs `rig ARGS...` in this process as main does, with its stdout
// and stderr captured. Tests that use it do not run in parallel.
func rigIn(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	dir := t.TempDir()
	o, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	so, se := os.Stdout, os.Stderr
	os.Stdout, os.Stderr = o, e
	func() {
		defer func() { os.Stdout, os.Stderr = so, se }()
		code = run(args)
	}()
	o.Close()
	e.Close()
	ob, _ := os.ReadFile(o.Name())
	eb, _ := os.ReadFile(e.Name())
	return code, string(ob), string(eb)
}

const (
	testRun   = "../../analysis/testdata/run"
	testRound = "../../analysis/testdata/run/arms/base/round-0"
)

// TestFlagsAfterArguments: every runnable command, its positional
// arguments first and a flag after them that changes what it does. The
// flag must be parsed (not taken for an argument). Commands without
// positional arguments refuse a stray one (exit 2) instead.
func TestFlagsAfterArguments(t *testing.T) {
	t.Setenv(netlab.EnvDir, t.TempDir())
	t.Setenv(journal.EnvDir, t.TempDir())
	isJSON := func(s string) error {
		var v any
		return json.Unmarshal([]byte(s), &v)
	}
	csvHead := func(want []string) func(string) error {
		return func(s string) error {
			got, err := csv.NewReader(strings.NewReader(s)).Read()
			if err != nil || !slices.Equal(got, want) {
				return fmt.Errorf("CSV header %q (%v), want %q", got, err, want)
			}
			return nil
		}
	}
	type tcase struct {
		args   []string
		code   int
		stderr string             // in the error line
		stdout func(string) error // checks stdout
	}
	cases := map[string][]tcase{
		"compare": {
			{args: []string{testRun, testRun, "--format", "json"}, stdout: isJSON},
			{args: []string{testRun, "--metric", "rtt", testRun, "--format", "csv"}, stdout: csvHead(analysis.ComparisonCSVHeader)},
		},
		"completion": {{args: []string{"bash", "-h"}, stdout: contains("usage: rig completion bash|zsh")}},
		"lab up":     {{args: []string{"lab1", "--format", "yaml"}, code: 2, stderr: `invalid value "yaml" for flag --format: want text or json`}},
		"lab down":   {{args: []string{"lab1", "--name", "lab2"}, code: 2, stderr: "name given twice (--name lab2 and lab1)"}},
		"lab show":   {{args: []string{"lab1", "--name", "lab2"}, code: 2, stderr: "name given twice (--name lab2 and lab1)"}},
		"man":        {{args: []string{t.TempDir(), "--help"}, stdout: contains("usage: rig man DIR")}},
		"nicctl show": {
			{args: []string{"eth9", "--host-root", "/nonexistent"}, code: 2, stderr: `"/nonexistent" is not a directory`},
		},
		"nicctl set":   {{args: []string{"eth9", "--rx-usecs", "lots"}, code: 2, stderr: "for flag --rx-usecs"}},
		"nicctl probe": {{args: []string{"eth9", "--count", "x"}, code: 2, stderr: "for flag --count"}},
		"report": {
			{args: []string{testRun, "--format", "json"}, stdout: isJSON},
			{args: []string{testRun, "--format", "csv"}, stdout: csvHead(analysis.CSVHeader)},
			{args: []string{testRun, "--json"}, stdout: isJSON},
			{args: []string{testRun, "--warmup", "-7"}, code: 2, stderr: "--warmup -7"},
		},
		"run":     {{args: []string{"../../scenarios/demo.yaml", "--dry-run"}, stdout: contains("scenario demo")}},
		"samples": {{args: []string{testRound, "--csv"}, stdout: contains("seq,flags,due_ns")}, {args: []string{testRound, "--format", "csv"}, stdout: contains("seq,flags,due_ns")}},
	}
	for _, l := range leaves() {
		tcs, ok := cases[l.path]
		if !ok {
			// No positional arguments: a stray one is refused before
			// anything is done.
			tcs = []tcase{{args: []string{"stray", "--help"}, stdout: contains("usage: rig " + l.path)},
				{args: []string{"stray"}, code: 2, stderr: `unexpected arguments ["stray"]: it takes none`}}
		}
		delete(cases, l.path)
		for _, c := range tcs {
			args := append(strings.Fields(l.path), c.args...)
			code, stdout, stderr := rigIn(t, args...)
			if code != c.code {
				t.Errorf("rig %q: exit %d, want %d\nstderr: %s", args, code, c.code, stderr)
				continue
			}
			if c.stderr != "" && !strings.Contains(stderr, c.stderr) {
				t.Errorf("rig %q: stderr lacks %q:\n%s", args, c.stderr, stderr)
			}
			if c.stdout != nil {
				if err := c.stdout(stdout); err != nil {
					t.Errorf("rig %q: stdout: %v\n%.500s", args, err, stdout)
				}
			}
		}
	}
	for p := range cases {
		t.Errorf("case for %q, which is no runnable command", p)
	}
}

func contains(want string) func(string) error {
	return func(s string) error {
		if !strings.Contains(s, want) {
			return fmt.Errorf("lacks %q", want)
		}
		return nil
	}
}

// TestFormatEverywhere: every --format refuses a form it does not have
// (exit 2, naming the ones it has); wherever json is a form, --json is
// short for it and conflicts with another --format.
func TestFormatEverywhere(t *testing.T) {
	withFormat := 0
	for _, l := range leaves() {
		d := describe(l)
		f := d.fs.Lookup("format")
		if f == nil {
			continue
		}
		withFormat++
		ff := f.Value.(*formatFlag)
		args := append(strings.Fields(l.path), "--format", "bogus")
		code, _, stderr := rigIn(t, args...)
		if code != 2 || !strings.Contains(stderr, "want "+orList(ff.forms)) {
			t.Errorf("rig %q: exit %d, want 2 naming %s:\n%s", args, code, orList(ff.forms), stderr)
		}
		if !strings.Contains(d.synopsis(), "--format "+strings.Join(ff.forms, "|")) {
			t.Errorf("rig %s: synopsis %q does not show --format %s", l.path, d.synopsis(), strings.Join(ff.forms, "|"))
		}
		j := d.fs.Lookup("json")
		if slices.Contains(ff.forms, "json") != (j != nil) {
			t.Errorf("rig %s: forms %v but --json defined: %v", l.path, ff.forms, j != nil)
		}
		if j == nil || ff.forms[0] == "json" {
			continue
		}
		args = append(strings.Fields(l.path), "--json", "--format", ff.forms[0])
		code, _, stderr = rigIn(t, args...)
		if code != 2 || !strings.Contains(stderr, "--json and --format "+ff.forms[0]+" exclude each other") {
			t.Errorf("rig %q: exit %d, want 2 (conflict):\n%s", args, code, stderr)
		}
	}
	if withFormat < 12 {
		t.Errorf("only %d commands have --format", withFormat)
	}
	// --json is --format json.
	_, a, _ := rigIn(t, "report", testRun, "--json")
	_, b, _ := rigIn(t, "report", "--format=json", testRun)
	if a != b || a == "" {
		t.Errorf("rig report --json and --format json differ")
	}
}

// TestVersionFlag: rig --version is rig version.
func TestVersionFlag(t *testing.T) {
	c0, v0, _ := rigIn(t, "version")
	for _, args := range [][]string{{"--version"}, {"-version"}} {
		c, v, e := rigIn(t, args...)
		if c != 0 || c0 != 0 || v != v0 || !strings.Contains(v, "wire format") {
			t.Errorf("rig %q: exit %d %q %s, rig version: exit %d %q", args, c, v, e, c0, v0)
		}
	}
	c, out, _ := rigIn(t, "--version", "--format", "json")
	var v versions
	if err := json.Unmarshal([]byte(out), &v); c != 0 || err != nil || v.Rig == "" || v.WireFormat == 0 || !strings.Contains(v0, v.Rig) {
		t.Errorf("rig --version --format json: exit %d, %v, %+v", c, err, v)
	}
}

// TestUsageErrorsOnce: bad input exits 2 and prints one line with one
// "rig: COMMAND:" prefix, never the command's name twice.
func TestUsageErrorsOnce(t *testing.T) {
	t.Setenv(netlab.EnvDir, t.TempDir())
	for _, args := range [][]string{
		{"check", "extra"}, {"check", "--cpu", "-5"}, {"report"}, {"report", testRun, "--metric", "nope"}, {"samples", "a", "b"},
		{"compare", testRun}, {"lab", "bogus"}, {"lab", "up", "--mirror", "x"}, {"lab", "show", "-bad"}, {"nicctl", "set"},
		{"nicctl", "--json"}, {"completion", "tcsh"}, {"man"}, {"agent"}, {"agent", "--stdio", "--lane", "a/b"},
		{"send", "--iface", "lo", "--quiet", "--format", "json"}, {"send", "--iface", "lo", "--count", "x"},
		{"run", "--dry-run", "../../internal/scenario/testdata/bad/wrong-type-count.yaml"}, {"version", "--format", "md"},
		{"run", "../../scenarios/demo.yaml", "--dry-run", "--format", "json"},
		{"env", "--host-root", "/nonexistent"},
	} {
		code, _, stderr := rigIn(t, args...)
		path := args[0]
		if commands[path].subs != nil && len(args) > 1 && commands[path].sub(args[1]) != nil {
			path += " " + args[1]
		}
		if code != 2 {
			t.Errorf("rig %q: exit %d, want 2\n%s", args, code, stderr)
		}
		first, _, _ := strings.Cut(stderr, "\n")
		if !strings.HasPrefix(first, "rig: "+path+": ") || strings.Contains(stderr, "rig: rig") ||
			strings.Count(stderr, "rig: ") != 1 || strings.Contains(first, path+": "+path+":") ||
			strings.Contains(first, "rig "+path+":") {
			t.Errorf("rig %q: want one line \"rig: %s: ...\", got:\n%s", args, path, stderr)
		}
	}
	code, _, stderr := rigIn(t, "bogus")
	if code != 2 || stderr != "rig: unknown command \"bogus\" (rig -h lists them)\n" {
		t.Errorf("rig bogus: exit %d %q", code, stderr)
	}
}

// TestExitCode: bad input is exit 2 wherever it was found, by cmd/rig or
// by a package's documented error value; a command chooses its own code
// (rig check, rig report); anything else is 1.
func TestExitCode(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, 0}, {flag.ErrHelp, 0}, {errors.New("boom"), 1}, {fmt.Errorf("x: %w", os.ErrNotExist), 1},
		{cli.Usagef("bad"), 2}, {fmt.Errorf("wrapped: %w", cli.Usagef("bad")), 2},
		{fmt.Errorf("x: %w", os.ErrPermission), 2}, {fmt.Errorf("x: %w", facts.ErrNoDevice), 2},
		{fmt.Errorf("x: %w", nicctl.ErrTimestamping), 2}, {&cpurank.Error{}, 2},
		{scenario.ErrorList{}, 2}, {&journal.PendingError{}, 2},
		{&agent.RemoteError{Usage: true}, 2}, {&agent.RemoteError{}, 1},
		{checkExit(4), 4}, {problemsError{1}, 3},
	} {
		if got := exitCode(c.err); got != c.want {
			t.Errorf("exitCode(%T %v) = %d, want %d", c.err, c.err, got, c.want)
		}
	}
	for _, c := range []struct{ path, err, want string }{
		{"check", "no /proc", "rig: check: no /proc"},
		{"nicctl set", "no such network interface", "rig: nicctl set: no such network interface"},
		{"report", "samples: bad", "rig: report: samples: bad"},
	} {
		if got := message(c.path, errors.New(c.err)); got != c.want {
			t.Errorf("message(%q, %q) = %q, want %q", c.path, c.err, got, c.want)
		}
	}
	if got := message("restore", fmt.Errorf("write x: %w", os.ErrPermission)); !strings.HasSuffix(got, "run it as root (sudo)") {
		t.Errorf("permission message %q", got)
	}
}

// placeholder is what may stand in backquotes in a flag's usage: the
// name of its value, which the flag package moves to the flag's line.
var placeholder = regexp.MustCompile("^[A-Za-z][A-Za-z0-9_|,.-]*$")

// TestHelpRendersAsWritten: every flag's usage reads in rig CMD -h as
// written: backquotes only around the value's placeholder (the flag
// package takes the first `x` for it and drops the quotes, so `rig
// restore` in a usage came out as "rig restore" with the flag's value
// named "rig restore"), every usage and the synopsis in the help text.
func TestHelpRendersAsWritten(t *testing.T) {
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	for _, l := range leaves() {
		d := describe(l)
		code, help, stderr := rigIn(t, append(strings.Fields(l.path), "-h")...)
		if code != 0 || stderr != "" {
			t.Errorf("rig %s -h: exit %d, stderr %q", l.path, code, stderr)
		}
		if !strings.HasPrefix(help, "usage: rig "+l.path+" ") || !strings.Contains(norm(help), d.synopsis()) {
			t.Errorf("rig %s -h does not start with its synopsis:\n%s", l.path, help)
		}
		d.fs.VisitAll(func(f *flag.Flag) {
			quoted := strings.Split(f.Usage, "`")
			switch {
			case len(quoted) == 1:
			case len(quoted) != 3 || !placeholder.MatchString(quoted[1]):
				t.Errorf("rig %s --%s: backquotes around %q, which the flag package would eat: %q", l.path, f.Name, quoted[1:], f.Usage)
			}
			if !strings.Contains(norm(help), norm(strings.ReplaceAll(f.Usage, "`", ""))) {
				t.Errorf("rig %s -h lacks --%s's usage as written: %q", l.path, f.Name, f.Usage)
			}
			if name, _, _, _ := clidoc.Flag(f); !strings.Contains(help, "\n  "+name) {
				t.Errorf("rig %s -h lacks %s", l.path, name)
			}
		})
	}
	for _, args := range [][]string{{"-h"}, {"help"}, {"--help"}} {
		if code, out, _ := rigIn(t, args...); code != 0 || !strings.Contains(out, "exit status:") {
			t.Errorf("rig %q: exit %d\n%s", args, code, out)
		}
	}
	if code, out, _ := rigIn(t, "help", "nicctl", "set"); code != 0 || !strings.HasPrefix(out, "usage: rig nicctl set IFACE") {
		t.Errorf("rig help nicctl set: exit %d\n%s", code, out)
	}
	if code, out, _ := rigIn(t, "lab", "-h"); code != 0 || !strings.Contains(out, "usage: rig lab up|down|show|list") {
		t.Errorf("rig lab -h: exit %d\n%s", code, out)
	}
}

// TestExitStatusDoc: the package doc repeats the exit status table that
// rig -h prints.
func TestExitStatusDoc(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	writeExitStatus(&b, "\t")
	if !strings.Contains(f.Doc.Text(), b.String()) {
		t.Errorf("doc.go's exit status table is not rig -h's; want\n%s", b.String())
	}
}

// TestHostRootOneFlag: --host-root is one flag with one meaning wherever
// it is defined, and it is honoured (rig env and check read the fake tree).
func TestHostRootOneFlag(t *testing.T) {
	var with []string
	for _, l := range leaves() {
		f := describe(l).fs.Lookup("host-root")
		if f == nil {
			continue
		}
		with = append(with, l.path)
		if _, ok := f.Value.(*hostRoot); !ok {
			t.Errorf("rig %s --host-root is %T, not addHostRoot's", l.path, f.Value)
		}
	}
	if want := []string{"check", "env", "nicctl show", "nicctl set", "restore"}; !slices.Equal(with, want) {
		t.Errorf("--host-root on %q, want %q", with, want)
	}
	root := "../../internal/hostinfo/testdata/c7i"
	code, out, stderr := rigIn(t, "env", "--format", "json", "--host-root", root)
	if code != 0 || !strings.Contains(out, "c7i") {
		t.Errorf("rig env --host-root %s: exit %d, no c7i in the snapshot\n%s%.400s", root, code, stderr, out)
	}
}

// TestSendSummaryJSON: rig send --format json prints its summary as one
// JSON object with every counter and the metrics' round statistics, the
// same numbers as the text form.
func TestSendSummaryJSON(t *testing.T) {
	j, err := samples.JoinDir(testRound, 0)
	if err != nil {
		t.Fatal(err)
	}
	j.Counters[samples.RoleSender] = samples.Counters{Sent: 10, Received: 9, Lost: 1, Late: 2}
	var jb, tb bytes.Buffer
	if err := printSendSummary(&jb, "json", j, 2); err != nil {
		t.Fatal(err)
	}
	if err := printSendSummary(&tb, "text", j, 2); err != nil {
		t.Fatal(err)
	}
	s := decodeSendSummary(t, jb.Bytes())
	if s.Format != "rig-send-summary" || s.FormatVersion != sendSummaryVersion || s.Warmup != 2 || s.Count != j.Header.Count ||
		s.Counters != (sendCounters{Sent: 10, Received: 9, Lost: 1, Late: 2}) || s.Rules.Percentile == "" {
		t.Errorf("summary %+v", s)
	}
	if !strings.HasPrefix(tb.String(), "sent 10  received 9  lost 1  duplicated 0  reordered 0  late 2") {
		t.Errorf("text summary:\n%s", tb.String())
	}
	var names []string
	for _, m := range s.Metrics {
		names = append(names, m.Name)
		if !m.Available {
			continue
		}
		if m.RoundStats == nil || m.N == 0 || m.MedianNS == nil || m.Source == "" || m.Clock == "" {
			t.Errorf("metric %s: %+v", m.Name, m)
			continue
		}
		// The text form prints the same median.
		if !strings.Contains(tb.String(), analysis.FormatUS(*m.MedianNS)) {
			t.Errorf("text summary lacks %s's median %s:\n%s", m.Name, analysis.FormatUS(*m.MedianNS), tb.String())
		}
	}
	if !slices.Equal(names, []string{analysis.RTT, analysis.RTTFromDue, analysis.Lateness}) {
		t.Errorf("metrics %q", names)
	}
	// With fan-out each responder's object names it.
	j.Responder = 3
	jb.Reset()
	if err := printSendSummary(&jb, "json", j, 2); err != nil {
		t.Fatal(err)
	}
	if s := decodeSendSummary(t, jb.Bytes()); s.Responder != 3 {
		t.Errorf("responder %d in the summary of responder 3's join", s.Responder)
	}
}

// decodeSendSummary decodes b strictly: one object, nothing after it.
func decodeSendSummary(t *testing.T, b []byte) sendSummary {
	t.Helper()
	var s sendSummary
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(&s); err != nil {
		t.Fatalf("summary is not JSON: %v\n%s", err, b)
	}
	if d.More() {
		t.Fatalf("more after the summary object:\n%s", b)
	}
	return s
}

// TestFormatDoc: docs/cli.md lists every command with --format and its
// forms, in order.
func TestFormatDoc(t *testing.T) {
	b, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if _, rest, ok := strings.Cut(line, "| `rig "); ok {
			cmd, cells, _ := strings.Cut(rest, "` | ")
			rows[cmd] = cells
		}
	}
	for _, l := range leaves() {
		f := describe(l).fs.Lookup("format")
		if f == nil {
			if _, ok := rows[l.path]; ok {
				t.Errorf("docs/cli.md lists rig %s, which has no --format", l.path)
			}
			continue
		}
		forms := strings.Join(f.Value.(*formatFlag).forms, ", ")
		if !strings.HasPrefix(rows[l.path], forms+" ") && !strings.HasPrefix(rows[l.path], forms+"|") {
			t.Errorf("docs/cli.md: rig %s has forms %q, the table says %q", l.path, forms, rows[l.path])
		}
	}
}

// TestDocExamplesParse: every rig command line in the README's and
// docs/'s code blocks names a command that exists and flags it has.
func TestDocExamplesParse(t *testing.T) {
	files, _ := filepath.Glob("../../docs/*.md")
	files = append(files, "../../README.md")
	n := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		inBlock := false
		for i, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inBlock = !inBlock
				continue
			}
			if !inBlock {
				continue
			}
			args := docCommand(line)
			if args == nil {
				continue
			}
			where := fmt.Sprintf("%s:%d: %s", filepath.Base(file), i+1, strings.TrimSpace(line))
			c := commands[args[0]]
			if c == nil {
				t.Errorf("%s: no command %q", where, args[0])
				continue
			}
			path := args[0]
			args = args[1:]
			if c.subs != nil {
				if len(args) == 0 || c.sub(args[0]) == nil {
					t.Errorf("%s: rig %s needs a subcommand", where, path)
					continue
				}
				c, path, args = c.sub(args[0]), path+" "+args[0], args[1:]
			}
			d := describe(leaf{path, c})
			d.fs.SetOutput(io.Discard)
			err := parseFlags(d.fs, args)
			if err != nil && !strings.Contains(err.Error(), "invalid value") { // values may be placeholders
				t.Errorf("%s: %v", where, err)
			}
			n++
		}
	}
	t.Logf("%d rig command lines in the docs parse", n)
	if n < 20 {
		t.Errorf("only %d rig command lines found in the docs", n)
	}
}

var commandWord = regexp.MustCompile(`^([a-z]+|--version)$`)

// docCommand returns the arguments after "rig" of a documented command
// line ("sudo rig ...", "$ rig ...", "ip netns exec NS rig ..."), up to
// a pipe, redirection, comment or the next command; nil when the line
// runs no rig command.
func docCommand(line string) []string {
	f := strings.Fields(line)
	if len(f) == 0 || f[0] == "#" {
		return nil
	}
	i := slices.IndexFunc(f, func(w string) bool { return w == "rig" || strings.HasSuffix(w, "/rig") })
	if i < 0 || i+1 >= len(f) || (i > 0 && !slices.Contains([]string{"sudo", "$", "exec", "--", "-i"}, f[i-1]) && !strings.HasPrefix(f[i-1], "NS")) {
		return nil
	}
	var out []string
	for _, w := range f[i+1:] {
		if strings.ContainsAny(w[:1], "|#>&;<") || w == "\\" {
			break
		}
		out = append(out, strings.Trim(w, `"'`))
	}
	if len(out) == 0 || !commandWord.MatchString(out[0]) {
		return nil // output ("rig check: ..."), a placeholder (COMMAND)
	}
	if out[0] == "--version" {
		return []string{"version"}
	}
	return out
}
