// Package docs holds the tests of rig's documentation: README.md and the
// pages of this directory. They keep three promises: every link between
// the pages (and every docs/ page the code or a report names) leads to a
// page and a section that exist; nothing in the repository cites a
// document outside it; and README.md stays the short page a newcomer
// reads, with the two commands it promises.
package docs

import (
	"bytes"
	"html"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository, seen from this package's directory.
const root = ".."

// tracked lists the files git tracks, relative to the repository root. The
// tests must see what a clone holds, not what a build left in the tree.
func tracked(t *testing.T) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files in %s: %v (these tests read the files of a git checkout)", root, err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	if len(files) < 100 {
		t.Fatalf("git ls-files lists %d files: not the rig repository", len(files))
	}
	return files
}

// text reads a tracked regular file; binary files (a NUL byte), symlinks
// and files deleted in the work tree give nil.
func text(t *testing.T, name string) []byte {
	t.Helper()
	st, err := os.Lstat(filepath.Join(root, name))
	if os.IsNotExist(err) || err == nil && !st.Mode().IsRegular() {
		return nil // deleted in the work tree; a symlink (the fake /sys trees)
	}
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return nil
	}
	return b
}

// outside are citations of documents a reader of the repository cannot
// open. They are spelled in pieces so that this file does not match them.
var outside = []struct {
	re   *regexp.Regexp
	what string
}{
	{regexp.MustCompile(regexp.QuoteMeta("DESIGN" + " §")), "a section of a design document outside the repository"},
	{regexp.MustCompile(regexp.QuoteMeta("../" + "shared")), "a path outside the repository"},
	{regexp.MustCompile(`(?i)\bissue` + ` #?[0-9]+`), "an issue number (say the why itself)"},
	{regexp.MustCompile(`(?i)\bseed` + ` 0[0-9][0-9]\b`), "an experiment by its seed number (describe it)"},
	{regexp.MustCompile(`(?i)\bthe lead` + ` wires`), "work someone else will do later"},
}

// TestNoCitationOutsideTheRepository: no tracked file cites a document, an
// issue or a plan that a user of the repository cannot open.
func TestNoCitationOutsideTheRepository(t *testing.T) {
	for _, f := range tracked(t) {
		b := text(t, f)
		for i, line := range strings.Split(string(b), "\n") {
			for _, o := range outside {
				if m := o.re.FindString(line); m != "" {
					t.Errorf("%s:%d: %q cites %s: %s", f, i+1, m, o.what, strings.TrimSpace(line))
				}
			}
		}
	}
}

// TestOutsideCitationsAreCaught: each pattern catches what it is for.
func TestOutsideCitationsAreCaught(t *testing.T) {
	for i, s := range []string{
		"the rules (DESIGN" + " §2)",
		"see ../" + "shared/notes.md",
		"// tails in issue" + " 7's bench",
		"(seed" + " 002's placements)",
		"which the lead" + " wires later",
	} {
		if !outside[i].re.MatchString(s) {
			t.Errorf("%q is not caught by %s", s, outside[i].re)
		}
	}
	for _, s := range []string{"an issue with the NIC", "random:SEED", "the lead (2 s)"} {
		for _, o := range outside {
			if o.re.MatchString(s) {
				t.Errorf("%q is caught by %s", s, o.re)
			}
		}
	}
}

// slug is the anchor GitHub gives a heading: lower case, everything but
// letters, digits, spaces, hyphens and underscores dropped, spaces turned
// into hyphens.
func slug(heading string) string {
	heading = html.UnescapeString(heading)
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var fence = regexp.MustCompile("^\\s*(```|~~~)")

// prose returns the lines of a Markdown file outside fenced code blocks,
// with their line numbers.
func prose(b []byte) (lines []string, numbers []int) {
	in := false
	for i, l := range strings.Split(string(b), "\n") {
		if fence.MatchString(l) {
			in = !in
			continue
		}
		if !in {
			lines = append(lines, l)
			numbers = append(numbers, i+1)
		}
	}
	return lines, numbers
}

var headingRE = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)

// anchors are the section anchors of a Markdown file, as GitHub makes them
// (a repeated heading gets -1, -2, …).
func anchors(b []byte) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	lines, _ := prose(b)
	for _, l := range lines {
		m := headingRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"The quietest CPU: `rig check --rank-cpus`":     "the-quietest-cpu-rig-check---rank-cpus",
		"env/&lt;host&gt;.json":                         "envhostjson",
		"1. The node: kubelet settings":                 "1-the-node-kubelet-settings",
		"Sample files (format 2)":                       "sample-files-format-2",
		"Telemetry: what else ran on the responder CPU": "telemetry-what-else-ran-on-the-responder-cpu",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}

// check reports whether target (a repository path, with an optional
// #anchor) names a file that exists and, for Markdown, a section of it.
func check(t *testing.T, target string, cache map[string]map[string]bool) string {
	file, anchor, _ := strings.Cut(target, "#")
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		return "no such file"
	}
	if anchor == "" || !strings.HasSuffix(file, ".md") {
		return ""
	}
	a, ok := cache[file]
	if !ok {
		a = anchors(b)
		cache[file] = a
	}
	if !a[anchor] {
		return "no section #" + anchor + " in " + file
	}
	return ""
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestMarkdownLinks: every relative link in README.md and docs/*.md leads
// to a file of the repository and, with #anchor, to a section of it.
func TestMarkdownLinks(t *testing.T) {
	cache := map[string]map[string]bool{}
	n := 0
	for _, f := range tracked(t) {
		if f != "README.md" && !(strings.HasPrefix(f, "docs/") && strings.HasSuffix(f, ".md")) {
			continue
		}
		lines, numbers := prose(text(t, f))
		for i, l := range lines {
			for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				n++
				if strings.HasPrefix(target, "#") {
					target = f + target
				} else {
					target = path.Join(path.Dir(f), target)
				}
				if why := check(t, target, cache); why != "" {
					t.Errorf("%s:%d: link %s: %s", f, numbers[i], m[1], why)
				}
			}
		}
	}
	if n < 50 {
		t.Errorf("only %d links checked: the link pattern no longer finds them", n)
	}
}

var docsCite = regexp.MustCompile(`(?:^|[^A-Za-z0-9_./-])((?:\.\./)*docs/[a-z0-9-]+\.md)(#[a-z0-9-]+)?`)

// TestDocsCitations: every docs/NAME.md[#section] that a tracked file
// names (code comments, error hints, report text, golden files, scenario
// headers) exists.
func TestDocsCitations(t *testing.T) {
	cache := map[string]map[string]bool{}
	n := 0
	for _, f := range tracked(t) {
		for i, line := range strings.Split(string(text(t, f)), "\n") {
			for _, m := range docsCite.FindAllStringSubmatch(line, -1) {
				target := m[1] // from the repository root, as code and prose name them
				if strings.HasPrefix(target, "../") {
					target = path.Join(path.Dir(f), target) // a test's path to the file
				}
				n++
				if why := check(t, target+m[2], cache); why != "" {
					t.Errorf("%s:%d: %s%s: %s", f, i+1, m[1], m[2], why)
				}
			}
		}
	}
	if n < 20 {
		t.Errorf("only %d citations of docs/ checked: the pattern no longer finds them", n)
	}
}

// TestREADMEIsShort: README.md is the page a newcomer reads in five
// minutes, and it gives the two commands CI and the demo run (.ci/run
// calls make test); the reference lives in docs/.
func TestREADMEIsShort(t *testing.T) {
	b := text(t, "README.md")
	if n := bytes.Count(b, []byte("\n")); n > 300 {
		t.Errorf("README.md has %d lines: move reference material to docs/ (a newcomer reads ~250)", n)
	}
	for _, want := range []string{"sudo make demo", "sudo make test"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("README.md lacks %q", want)
		}
	}
	lines, _ := prose(b)
	linked := map[string]bool{}
	for _, l := range lines {
		for _, m := range mdLink.FindAllStringSubmatch(l, -1) {
			file, _, _ := strings.Cut(m[1], "#")
			linked[file] = true
		}
	}
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		if !linked["docs/"+p] {
			t.Errorf("README.md does not link docs/%s: a newcomer would not find it", p)
		}
	}
}
