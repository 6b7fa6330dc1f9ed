package runner

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/testbin"
)

const mixedRequests = `name: itest-unicast
emulate: netns
traffic:
  group: 239.66.0.2:7610
  interval: 1ms
  count: 400
  warmup: 2
timestamps: software
rounds: 1
baseline: multicast
arms:
  - name: multicast
    responder: {cpu: 1}
  - name: unicast
    request: unicast
    responder: {cpu: 1}
`

// TestRunUnicastBesideMulticast runs one multicast and one unicast arm
// through the runner on the emulated topology: every request of both is
// answered and captured, the unicast requests went to the responder's veth
// address (from its agent's facts), and the manifest, the sample headers
// and every table caption say so.
func TestRunUnicastBesideMulticast(t *testing.T) {
	testbin.Integration(t)
	dir := t.TempDir()
	res, log, err := runYAML(t, dir, "unicast.yaml", mixedRequests)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log)
	}
	m, err := rundir.ReadManifest(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	requests := map[string]string{}
	for _, a := range m.Arms {
		requests[a.Name] = a.Requests
	}
	uni, ok := strings.CutPrefix(requests["unicast"], "unicast to ")
	to, perr := netip.ParseAddrPort(uni)
	if requests["multicast"] != "multicast 239.66.0.2:7610" || !ok || perr != nil || to.Port() != 7610 || !to.Addr().Is4() || to.Addr().IsMulticast() {
		t.Fatalf("manifest requests %q", requests)
	}
	for _, arm := range []string{"multicast", "unicast"} {
		j, err := samples.JoinDir(rundir.RoundDir(res.Dir, arm, 0), 0)
		if err != nil {
			t.Fatalf("arm %s: %v", arm, err)
		}
		if c := j.Counters[samples.RoleSender]; c.Sent != 400 || c.Received != 400 || len(j.Roles) != 3 {
			t.Errorf("arm %s: sender %+v roles %v: want all 400 answered", arm, c, j.Roles)
		}
		paired := 0
		for _, r := range j.Records {
			if r.T[samples.CapReqSW] != 0 && r.T[samples.CapRepSW] != 0 {
				paired++
			}
		}
		if paired != 400 {
			t.Errorf("arm %s: the capture paired %d of 400", arm, paired)
		}
		if j.Header.Requests() != requests[arm] {
			t.Errorf("arm %s: sample header says %q, manifest %q", arm, j.Header.Requests(), requests[arm])
		}
	}
	tables, err := os.ReadFile(filepath.Join(res.Dir, "tables.md"))
	if err != nil {
		t.Fatal(err)
	}
	caption := fmt.Sprintf("Requests: arm multicast: multicast 239.66.0.2:7610; arm unicast: unicast to %s.", to)
	// One per metric table, the comparison and the measuring threads.
	tablesN := strings.Count(string(tables), "\n## ") - strings.Count(string(tables), "\n## Notes") - strings.Count(string(tables), "\n## Problems")
	if n := strings.Count(string(tables), caption); n == 0 || n != tablesN {
		t.Errorf("%d of %d tables carry %q:\n%s", n, tablesN, caption, tables)
	}
	if err := journal.CheckPending(filepath.Join(dir, "state")); err != nil {
		t.Errorf("journal left open entries: %v", err)
	}
}
