package round

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
)

// TestUnicastVXLANRound runs a round as a cloud run does: unicast
// requests (--to, --listen) and a capture host that receives the mirror's
// copies VXLAN-encapsulated (probe.Capture.VXLAN: --vxlan), on a lab whose mirror
// encapsulates like AWS Traffic Mirroring. The capture pairs every request
// and reply from the copies.
func TestUnicastVXLANRound(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	topo := netlabtest.New(t, netlab.Options{MirrorVXLAN: true})
	var log bytes.Buffer
	ag := agents(t, topo, &log)
	to := netip.AddrPortFrom(topo.Responder.Addr, 9105)
	spec := labSpec(t, topo, ag, true)
	spec.Capture.VXLAN, spec.Send.Group, spec.Send.Unicast = true, netip.AddrPort{}, to
	spec.Send.Count, spec.Send.Interval, spec.Send.Timestamps, spec.Send.Arm = 200, time.Millisecond, tstamp.Software, "vxlan"
	res, err := Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("round: %v\nlog:\n%s", err, log.String())
	}
	j, err := samples.JoinDir(res.Dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	paired := 0
	for _, r := range j.Records {
		if r.T[samples.CapReqSW] != 0 && r.T[samples.CapRepSW] != 0 && r.T[samples.RxSW] != 0 {
			paired++
		}
	}
	if c := j.Counters[samples.RoleSender]; c.Received != 200 || paired != 200 {
		t.Errorf("sender %+v, %d of 200 paired by the VXLAN capture\nlog:\n%s", c, paired, log.String())
	}
	f, err := samples.ReadFile(res.Files[samples.RoleCapture])
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := f.Header.Settings["mirror"].(string); !strings.HasPrefix(m, "vxlan") || f.Header.Requests() != "unicast to "+to.String() {
		t.Errorf("capture header: mirror %q, requests %q", m, f.Header.Requests())
	}
	if _, err := os.Stat(res.Files[samples.RoleResponder]); err != nil {
		t.Error(err)
	}
}
