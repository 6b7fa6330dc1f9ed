package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/clidoc"
)

// TestCompletionCoversEverything: the bash and zsh scripts offer every
// command, subcommand and flag rig defines, and the values of --format.
func TestCompletionCoversEverything(t *testing.T) {
	for _, shell := range []string{"bash", "zsh"} {
		code, script, stderr := rigIn(t, "completion", shell)
		if code != 0 {
			t.Fatalf("rig completion %s: exit %d: %s", shell, code, stderr)
		}
		for _, n := range commandNames() {
			if !strings.Contains(script, n) {
				t.Errorf("%s completion lacks command %s", shell, n)
			}
		}
		for _, l := range leaves() {
			if !strings.Contains(script, "'"+l.path+"'") {
				t.Errorf("%s completion has no case for rig %s", shell, l.path)
			}
			describe(l).fs.VisitAll(func(f *flag.Flag) {
				if name, _, _, _ := clidoc.Flag(f); !strings.Contains(script, name) {
					t.Errorf("%s completion lacks rig %s %s", shell, l.path, name)
				}
				if ff, ok := f.Value.(*formatFlag); ok && !strings.Contains(script, "'"+l.path+" --format'") {
					t.Errorf("%s completion does not offer the forms %v of rig %s --format", shell, ff.forms, l.path)
				}
			})
		}
	}
}

// TestBashCompletion: bash -n accepts the script, and sourced in bash it
// completes commands, subcommands, flags after an argument and the values
// of --format.
func TestBashCompletion(t *testing.T) {
	bash, file := completionScript(t, "bash", "rig.bash")
	for _, c := range []struct {
		line string // the words typed, the last one being completed
		want []string
	}{
		{"rig re", []string{"report", "respond", "restore"}},
		{"rig nicctl s", []string{"set", "show"}},
		{"rig lab ", []string{"down", "list", "show", "up"}},
		{"rig report results/x --fo", []string{"--format"}},
		{"rig report results/x --format ", []string{"csv", "json", "md"}},
		{"rig compare a b --format j", []string{"json"}},
		{"rig nicctl set eth0 --rx-u", []string{"--rx-usecs"}},
		{"rig help sa", []string{"samples"}},
		{"rig check --host", []string{"--host-root"}},
	} {
		words := strings.Split(c.line, " ")
		var quoted []string
		for _, w := range words {
			quoted = append(quoted, "'"+w+"'")
		}
		prog := "source " + file + "\nCOMP_WORDS=(" + strings.Join(quoted, " ") + ")\nCOMP_CWORD=" +
			strconv.Itoa(len(words)-1) + "\n_rig\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
		got, ok := offered(t, exec.Command(bash, "--norc", "--noprofile", "-c", prog), c.line)
		if !ok {
			continue
		}
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("completing %q: %q, want %q", c.line, got, c.want)
		}
	}
}

// TestZshCompletion: zsh -n accepts the script, and with zsh's
// completion builtins stubbed to print what they are given, _rig offers
// commands, subcommands, flags after an argument, the forms of --format,
// and file names for arguments.
func TestZshCompletion(t *testing.T) {
	zsh, file := completionScript(t, "zsh", "_rig")
	stubs := `compdef() { :; }
compadd() { shift; print -rl -- "$@"; }
_describe() { local item; for item in ${(P)4}; do print -r -- ${item%%:*}; done; }
_files() { print -r -- FILES; }
`
	for _, c := range []struct {
		words []string
		want  []string // offered and starting with the last word (zsh filters the rest)
	}{
		{[]string{"rig", "re"}, []string{"report", "respond", "restore"}},
		{[]string{"rig", "lab", ""}, []string{"down", "list", "show", "up"}},
		{[]string{"rig", "report", "x", "--format", ""}, []string{"csv", "json", "md"}},
		{[]string{"rig", "report", "x", "--"}, []string{"--format", "--help", "--json", "--metric", "--warmup", "--write"}},
		{[]string{"rig", "report", ""}, []string{"FILES"}},
		{[]string{"rig", "nicctl", "set", "eth0", "--rx-u"}, []string{"--rx-usecs"}},
	} {
		var q []string
		for _, w := range c.words {
			q = append(q, "'"+w+"'")
		}
		prog := stubs + "source " + file + "\nwords=(" + strings.Join(q, " ") + ")\nCURRENT=" + strconv.Itoa(len(c.words)) + "\n_rig\n"
		out, ok := offered(t, exec.Command(zsh, "-f", "-c", prog), c.words)
		if !ok {
			continue
		}
		prefix := c.words[len(c.words)-1]
		var got []string
		for _, w := range out {
			if strings.HasPrefix(w, prefix) {
				got = append(got, w)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("completing %q: %q, want %q", c.words, got, c.want)
		}
	}
}

// TestFishCompletion: fish -n accepts the script, and sourced in fish
// (complete -C, what fish offers at the cursor) it completes commands,
// subcommands, flags after an argument, the values of --format, and every
// flag of every command.
func TestFishCompletion(t *testing.T) {
	fish, file := completionScript(t, "fish", "rig.fish", "--no-config")
	cases := []struct {
		line string
		want []string
	}{
		{"rig re", []string{"report", "respond", "restore"}},
		{"rig nicctl s", []string{"set", "show"}},
		{"rig lab ", []string{"down", "list", "show", "up"}},
		{"rig report results/x --fo", []string{"--format"}},
		{"rig report results/x --format ", []string{"csv", "json", "md"}},
		{"rig nicctl set eth0 --rx-u", []string{"--rx-usecs"}},
		{"rig help sa", []string{"samples"}},
		{"rig check --host", []string{"--host-root"}},
	}
	// Every flag of every command, completed from its first letters.
	for _, l := range leaves() {
		describe(l).fs.VisitAll(func(f *flag.Flag) {
			if len(f.Name) > 1 {
				cases = append(cases, struct {
					line string
					want []string
				}{"rig " + l.path + " --" + f.Name, []string{"--" + f.Name}})
			}
		})
	}
	var prog strings.Builder
	prog.WriteString("source " + file + "\n")
	for _, c := range cases {
		fmt.Fprintf(&prog, "complete -C %s; echo '@@'\n", strconv.Quote(c.line))
	}
	out, err := exec.Command(fish, "--no-config", "-c", prog.String()).CombinedOutput()
	if err != nil {
		t.Fatalf("fish: %v\n%s", err, out)
	}
	answers := strings.Split(string(out), "@@\n")
	if len(answers) != len(cases)+1 {
		t.Fatalf("%d answers for %d lines:\n%s", len(answers)-1, len(cases), out)
	}
	for i, c := range cases {
		var got []string
		for _, ln := range strings.Split(strings.TrimSpace(answers[i]), "\n") {
			if w, _, _ := strings.Cut(ln, "\t"); w != "" && !slices.Contains(got, w) {
				got = append(got, w)
			}
		}
		slices.Sort(got)
		if i < 8 && !slices.Equal(got, c.want) || i >= 8 && !slices.Contains(got, c.want[0]) {
			t.Errorf("completing %q: %q, want %q", c.line, got, c.want)
		}
	}
}

// completionScript writes rig's completion script for shell to a file
// named name and checks that the shell (run with flags) parses it; it
// returns the shell's path and the file. Without the shell it skips.
func completionScript(t *testing.T, shell, name string, flags ...string) (string, string) {
	t.Helper()
	bin, err := exec.LookPath(shell)
	if err != nil {
		t.Skipf("no %s on this machine (make deps installs it)", shell)
	}
	_, script, _ := rigIn(t, "completion", shell)
	file := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, append(flags, "-n", file)...).CombinedOutput(); err != nil {
		t.Fatalf("%s -n: %v\n%s", shell, err, out)
	}
	return bin, file
}

// offered runs cmd, a shell sourcing the completion for what was typed,
// and returns the words it printed; it failing or writing to stderr is an
// error (false).
func offered(t *testing.T, cmd *exec.Cmd, typed any) ([]string, bool) {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Errorf("%q: %v %s", typed, err, stderr.String())
		return nil, false
	}
	return strings.Fields(string(out)), true
}

// unroff is a man page with the escapes clidoc writes in plain text (\-,
// \e, \[uXXXX]) undone, to look for the words as written.
func unroff(page string) string {
	page = strings.NewReplacer(`\-`, "-", `\e`, `\`).Replace(page)
	return regexp.MustCompile(`\\\[u[0-9A-F]+\]`).ReplaceAllStringFunc(page, func(u string) string {
		r, _ := strconv.ParseUint(u[3:len(u)-1], 16, 32)
		return string(rune(r))
	})
}

// TestManPages: rig man DIR writes rig.1 and one page per command; each
// page names every flag of its command (and subcommands) and its synopsis;
// groff renders them without a warning.
func TestManPages(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man1")
	if code, out, stderr := rigIn(t, "man", dir); code != 0 {
		t.Fatalf("rig man: exit %d\n%s%s", code, out, stderr)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	top := unroff(read("rig.1"))
	for _, n := range commandNames() {
		if !strings.Contains(top, ".BR rig-"+n+" (1)") {
			t.Errorf("rig.1 does not list rig-%s(1)", n)
		}
	}
	for _, e := range exitStatus {
		if !strings.Contains(top, e.meaning) {
			t.Errorf("rig.1 lacks exit status %d", e.code)
		}
	}
	pages := []string{"rig.1"}
	for _, l := range leaves() {
		top, _, _ := strings.Cut(l.path, " ")
		page := unroff(read("rig-" + top + ".1"))
		pages = append(pages, "rig-"+top+".1")
		d := describe(l)
		if !strings.Contains(page, ".B rig "+l.path+"\n"+d.synopsis()) {
			t.Errorf("rig-%s.1 lacks the synopsis of rig %s", top, l.path)
		}
		d.fs.VisitAll(func(f *flag.Flag) {
			if name, _, _, _ := clidoc.Flag(f); !strings.Contains(page, `\fB`+name+`\fR`) {
				t.Errorf("rig-%s.1 lacks %s of rig %s", top, name, l.path)
			}
		})
	}
	// One-letter flags are -v, not --v; rig.1 says which variables and
	// files rig uses.
	if run := read("rig-run.1"); !strings.Contains(run, `\fB\-v\fR`) || strings.Contains(run, `\-\-v\fR`) {
		t.Errorf("rig-run.1 does not print -v as -v")
	}
	rig1 := read("rig.1")
	for _, w := range []string{".SH \"ENVIRONMENT\"", ".B RIG_STATE_DIR\n", ".B RIG_HOST_ROOT\n", ".B RIG_TUNED_ADM\n",
		".SH \"FILES\"", ".B /var/lib/rig/journal.jsonl\n", ".B /run/rig/lab\n"} {
		if !strings.Contains(rig1, w) {
			t.Errorf("rig.1 lacks %q", w)
		}
	}
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Log("no groff: pages not rendered")
		return
	}
	for _, p := range slices.Compact(pages) {
		cmd := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z", filepath.Join(dir, p))
		if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
			t.Errorf("groff %s: %v\n%s", p, err, out)
		}
	}
}
