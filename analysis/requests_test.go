package analysis

import (
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/samples"
)

// Every table caption says where the requests went: once when the arms
// agree, per arm when they differ; nothing when the files do not say.
func TestRequestsCaption(t *testing.T) {
	r := &Report{Arms: []*ArmReport{{Name: "a"}, {Name: "b"}, {Name: "s", Skipped: "no SMT"}}}
	if c := requestsCaption(r); c != "" {
		t.Fatalf("no requests known: %q", c)
	}
	r.Arms[0].addRequests("multicast 239.1.1.1:9000")
	r.Arms[0].addRequests("multicast 239.1.1.1:9000")
	r.Arms[1].addRequests("multicast 239.1.1.1:9000")
	if c := requestsCaption(r); c != " Requests: multicast 239.1.1.1:9000." {
		t.Fatalf("agreeing arms: %q", c)
	}
	r.Arms[1].Requests = ""
	r.Arms[1].addRequests("unicast to 10.0.0.2:9000")
	want := " Requests: arm a: multicast 239.1.1.1:9000; arm b: unicast to 10.0.0.2:9000."
	if c := requestsCaption(r); c != want {
		t.Fatalf("mixed arms: %q", c)
	}
	for _, tb := range []table{metricTable(r, RTT), threadsTable(r)} {
		if !strings.HasSuffix(tb.Caption, want) {
			t.Errorf("%s caption lacks the requests: %q", tb.Title, tb.Caption)
		}
	}
	var b strings.Builder
	if err := WriteTablesMD(&b, r); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), want); n < 1 {
		t.Errorf("tables.md carries the requests sentence %d times (comparison table):\n%s", n, b.String())
	}
	r.Arms[0].addRequests("unicast to 10.0.0.3:9000")
	if r.Arms[0].Requests != "multicast 239.1.1.1:9000; unicast to 10.0.0.3:9000" {
		t.Fatalf("rounds that disagree: %q", r.Arms[0].Requests)
	}
}

// Every caption names each arm's responder socket stack, and the sender's,
// from the sample headers, once an arm ran that program on a kernel-bypass
// stack; kernel-only runs (and files from before stacks, and the Go
// sender's, which name none) say nothing.
func TestStacksCaption(t *testing.T) {
	r := &Report{Arms: []*ArmReport{{Name: "kernel"}, {Name: "onload"}}}
	build := func(stacks ...string) {
		facts := map[string]*armFacts{}
		for i, st := range stacks {
			rsp, snd, _ := strings.Cut(st, "/")
			h := map[samples.Role]samples.Header{samples.RoleResponder: {Settings: map[string]any{"stack": rsp}}, samples.RoleSender: {Settings: map[string]any{}}}
			if snd != "" {
				h[samples.RoleSender].Settings["stack"] = snd
			}
			f := &armFacts{}
			f.add(&samples.Joined{Headers: h})
			facts[r.Arms[i].Name] = f
		}
		(&analyzer{in: &Input{}, rep: r}).buildSummary(facts)
	}
	build("kernel", "kernel/kernel")
	if c := requestsCaption(r); c != "" {
		t.Errorf("kernel only: %q", c)
	}
	build("kernel", "onload/vma")
	if c, want := requestsCaption(r), " Responder socket stack: arm kernel: kernel; arm onload: onload. Sender socket stack: arm onload: vma."; c != want {
		t.Errorf("onload and a vma sender: %q, want %q", c, want)
	}
	build("kernel", "kernel")
	if c := requestsCaption(r); c != "" {
		t.Errorf("kernel only: %q", c)
	}
	build("kernel", "onload")
	want := " Responder socket stack: arm kernel: kernel; arm onload: onload."
	if c := requestsCaption(r); c != want {
		t.Errorf("kernel and onload: %q, want %q", c, want)
	}
	if tb := metricTable(r, RTT); !strings.HasSuffix(tb.Caption, want) {
		t.Errorf("RTT caption lacks the stacks: %q", tb.Caption)
	}
}

// Every caption names each arm's sender and responder engines, from the
// sample headers (the Go probes write none), once an arm ran another than
// the Go engine on either end; Go-only runs say nothing.
func TestEnginesCaption(t *testing.T) {
	r := &Report{Arms: []*ArmReport{{Name: "go"}, {Name: "native"}}}
	build := func(engines ...map[string]any) {
		facts := map[string]*armFacts{}
		for i, snd := range engines {
			f := &armFacts{}
			f.add(&samples.Joined{Headers: map[samples.Role]samples.Header{samples.RoleSender: {Settings: snd},
				samples.RoleResponder: {Settings: map[string]any{"engine": "native"}}, samples.RoleCapture: {}}})
			facts[r.Arms[i].Name] = f
		}
		(&analyzer{in: &Input{}, rep: r}).buildSummary(facts)
	}
	build(map[string]any{}, map[string]any{"engine": "native"})
	want := " Engines (sender/responder): arm go: go/native; arm native: native/native."
	if c := requestsCaption(r); c != want {
		t.Errorf("caption %q, want %q", c, want)
	}
	if tb := metricTable(r, RTT); !strings.HasSuffix(tb.Caption, want) {
		t.Errorf("RTT caption lacks the engines: %q", tb.Caption)
	}
	if e := r.Summary.Arms[0].Roles["capture"].Engine; e != "" {
		t.Errorf("the capture's engine: %q", e)
	}
	r = &Report{Arms: []*ArmReport{{Name: "go"}}}
	f := &armFacts{}
	f.add(&samples.Joined{Headers: map[samples.Role]samples.Header{samples.RoleSender: {}, samples.RoleResponder: {}}})
	(&analyzer{in: &Input{}, rep: r}).buildSummary(map[string]*armFacts{"go": f})
	if c := requestsCaption(r); c != "" {
		t.Errorf("Go only: %q", c)
	}
}
