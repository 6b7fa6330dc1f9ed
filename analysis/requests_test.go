package analysis

import (
	"strings"
	"testing"
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
