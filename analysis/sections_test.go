package analysis

import (
	"bytes"
	"html"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/samples"
)

// TestSectionsInEveryFile: tables.md, report.md and report.html show the
// tables of one list (sections), in its order, each once.
func TestSectionsInEveryFile(t *testing.T) {
	golden, err := Run(goldenRun, Options{})
	if err != nil {
		t.Fatal(err)
	}
	with := joined(map[string]samples.Clock{}, samples.RoleSender, samples.RoleResponder)
	with.Threads = map[samples.Role]samples.ThreadUsage{samples.RoleSender: {WallNS: 4e9, CPUNS: 1e9}}
	fan := &Input{Run: "fanout", Responders: []string{"r0", "r1"}, Baseline: ArmResponderName("a", "r0")}
	for id, h := range fan.Responders {
		j := fanoutJoin(uint32(id), 100, func(int) int64 { return 20_000 })
		fan.Arms = append(fan.Arms, InputArm{Name: ArmResponderName("a", h), Arm: "a", Responder: h,
			Rounds: []InputRound{{Load: func() (*samples.Joined, error) { return j, nil }}}})
	}
	paired, err := Analyze(fan, Options{})
	if err != nil || len(paired.Paired) != 1 {
		t.Fatalf("%v, %d paired", err, len(paired.Paired))
	}
	for name, rep := range map[string]*Report{"golden": golden, "threads": analyzeJoined(t, with), "paired": paired} {
		var titles []string
		for _, s := range rep.sections() {
			titles = append(titles, s.Title)
		}
		if len(titles) < 3 {
			t.Fatalf("%s: sections %q", name, titles)
		}
		var md, rmd, page bytes.Buffer
		if err := WriteTablesMD(&md, rep); err != nil {
			t.Fatal(err)
		}
		if err := WriteReportMD(&rmd, rep, nil); err != nil {
			t.Fatal(err)
		}
		if err := WriteReportHTML(&page, rep, nil); err != nil {
			t.Fatal(err)
		}
		for file, heading := range map[string]func(string) string{
			"tables.md":   func(s string) string { return "\n## " + s + "\n" },
			"report.md":   func(s string) string { return "\n## " + s + "\n" },
			"report.html": func(s string) string { return "<h2>" + html.EscapeString(plain(s)) + "</h2>" },
		} {
			out := map[string]string{"tables.md": md.String(), "report.md": rmd.String(), "report.html": page.String()}[file]
			at := 0
			for _, title := range titles {
				h := heading(title)
				i := strings.Index(out[at:], h)
				if i < 0 || strings.Count(out, h) != 1 {
					t.Errorf("%s %s: table %q missing, repeated or out of order (sections %q)", name, file, title, titles)
					break
				}
				at += i + len(h)
			}
		}
	}
}
