package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
)

// numaFacts are the facts of the two-node fixture host (CPUs 0-3 on node
// 0, 4-7 on node 1; ens1 on node 1, ens2 on none; RT bandwidth limited),
// read as rig run --dry-run reads this machine.
func numaFacts(t *testing.T, s *Scenario) map[string]*facts.Facts {
	t.Helper()
	f, err := facts.Read(hostfs.FS{Root: "../hostinfo/testdata/numa2"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(s.Source), "# facts: no boot id") {
		f.BootID = "" // an older rig on the host
	}
	m := map[string]*facts.Facts{}
	for _, h := range s.Hosts {
		if h.Local() || s.Emulate != "" {
			m[h.Name] = f
		}
	}
	return m
}

var warnRE = regexp.MustCompile(`(?m)^# (want|warn): (\d+):(\d+) (.+)$`)

// TestNUMAScenarios runs testdata/numa against the two-node host: each
// file lists the warnings it must get (# warn:, in file order, nothing
// else) or the refusal it must get first (# want:), at file:line:col.
func TestNUMAScenarios(t *testing.T) {
	files, _ := filepath.Glob("testdata/numa/*.yaml")
	if len(files) < 10 {
		t.Fatalf("only %d files", len(files))
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			wants := warnRE.FindAllStringSubmatch(string(src), -1)
			s, err := Parse(file, src)
			if err == nil {
				err = Validate(s, numaFacts(t, s))
			}
			var got ErrorList
			if s != nil {
				got = s.Warnings
			}
			if len(wants) > 0 && wants[0][1] == "want" {
				var list ErrorList
				if !errors.As(err, &list) {
					t.Fatalf("want a refusal, got %v", err)
				}
				got, wants = list[:1], wants[:1]
			} else if err != nil {
				t.Fatalf("want warnings only, got %v", err)
			}
			if len(got) != len(wants) {
				t.Fatalf("%d problems, want %d: %v", len(got), len(wants), got)
			}
			for i, w := range wants {
				msg := got[i].Error()
				if !strings.HasPrefix(msg, fmt.Sprintf("%s:%s:%s: ", file, w[2], w[3])) {
					t.Errorf("not at %s:%s:\n%s", w[2], w[3], msg)
				}
				for _, part := range strings.Split(w[4], "; ") {
					if !strings.Contains(msg, part) {
						t.Errorf("lacks %q:\n%s", part, msg)
					}
				}
			}
		})
	}
}

// numa: nic keeps the candidates on the NIC's node: the runner ranks
// those (QuietestCPUs), and the dry run says so.
func TestQuietestOnNICNode(t *testing.T) {
	for _, c := range []struct {
		cpu  string
		want []int
	}{{"{quietest: allowed, numa: nic}", []int{4, 5, 6, 7}}, {`{quietest: "2-5", numa: nic}`, []int{4, 5}}} {
		s := load(t, "name: t\nhosts:\n  rsp: {via: local, roles: [responder], iface: ens1}\n  snd: {via: ssh snd, roles: [sender]}\n"+
			"traffic: {group: \"239.1.1.1:5000\"}\narms:\n  - name: a\n    responder: {cpu: "+c.cpu+"}\n")
		if err := Validate(s, numaFacts(t, s)); err != nil {
			t.Fatal(err)
		}
		got, err := s.QuietestCPUs("rsp", *s.Arms[0].Effective.Responder.Quietest)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: candidates %v %v, want %v", c.cpu, got, err, c.want)
		}
		var out bytes.Buffer
		if err := WriteDryRun(&out, s, s.Plan(), DryRunOptions{}); err != nil || !strings.Contains(out.String(), "on the NUMA node of the responder's interface") {
			t.Errorf("dry run: %v\n%s", err, out.String())
		}
	}
	// Written once in defaults, refused once, not once per arm.
	e := load(t, "name: t\nemulate: netns\ntraffic: {group: \"239.1.1.1:5000\"}\ndefaults:\n  responder: {cpu: {quietest: allowed, numa: nic}}\narms: [{name: a}, {name: b}]\n")
	var list ErrorList
	if err := Validate(e, numaFacts(t, e)); !errors.As(err, &list) || len(list) != 1 {
		t.Errorf("numa: nic in defaults of an emulated scenario: %v", err)
	}
	// Not validated: the runner must not rank every CPU instead.
	s := load(t, "name: t\nemulate: netns\ntraffic: {group: \"239.1.1.1:5000\"}\narms:\n  - name: a\n    responder: {cpu: {quietest: allowed, numa: nic}}\n")
	if _, err := s.QuietestCPUs("responder", *s.Arms[0].Effective.Responder.Quietest); err == nil {
		t.Error("numa: nic without the node: no error")
	}
}

// The dry run prints the warnings with their place in the file.
func TestDryRunWarnings(t *testing.T) {
	s, err := Load("testdata/numa/warn-fifo-busy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(s, numaFacts(t, s)); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := WriteDryRun(&out, s, s.Plan(), DryRunOptions{}); err != nil || !strings.Contains(out.String(), "warning: testdata/numa/warn-fifo-busy.yaml:10:44: arm spin:") {
		t.Errorf("dry run: %v\n%s", err, out.String())
	}
}
