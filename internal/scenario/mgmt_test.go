package scenario

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/tstamp"
)

// The management guard covers the run's NIC timestamping as well as the
// irq/nic arms: on a single-interface host whose NIC would need its
// stamping switched on, the dry run says rig will not change it (auto:
// software stamps, with the reason), timestamps: hardware is refused at
// its line with the fix, and allow-mgmt: true lets the run write it.
func TestDryRunMgmtTimestamping(t *testing.T) {
	const src = `name: t
hosts:
  h: {via: local, roles: [sender, responder], iface: eth0%s}
traffic: {group: "239.1.1.1:5000"}
timestamps: %s
arms: [{name: base}]
`
	off := hwNIC()
	off.Config = tstamp.HWTstampConfig{}
	f := smallHost()
	f.NICs = map[string]tstamp.NICState{"eth0": off}
	f.Mgmt = []string{"eth0"}
	dry := func(s *Scenario) string {
		facts := factsFor(s, f)
		var out bytes.Buffer
		if err := WriteDryRun(&out, s, s.Plan(), DryRunOptions{Timestamping: s.TimestampPlans(facts)}); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	s := load(t, strings.NewReplacer("%s", "").Replace(strings.Replace(src, "timestamps: %s", "timestamps: auto", 1)))
	if err := Validate(s, factsFor(s, f)); err != nil {
		t.Fatal(err)
	}
	if out := dry(s); !strings.Contains(out, "h eth0 (RX ALL + TX ON): software: eth0 is tx_type=OFF rx_filter=NONE; rig's probes need tx_type=ON rx_filter=ALL; it is the management interface (it carries the default route or the controller's connection), and rig does not change it: software stamps") {
		t.Errorf("auto on the management interface:\n%s", out)
	}
	s = load(t, strings.Replace(strings.Replace(src, "timestamps: %s", "timestamps: hardware", 1), "%s", "", 1))
	err := Validate(s, factsFor(s, f))
	if err == nil || !strings.Contains(err.Error(), "t.yaml:5:13: timestamps: hardware, and on host h (RX ALL + TX ON)") ||
		!strings.Contains(err.Error(), "carries the default route") || !strings.Contains(err.Error(), "allow-mgmt: true") {
		t.Fatalf("hardware on the management interface: %v", err)
	}
	s = load(t, strings.Replace(strings.Replace(src, "timestamps: %s", "timestamps: hardware", 1), "%s", ", allow-mgmt: true", 1))
	if err := Validate(s, factsFor(s, f)); err != nil {
		t.Fatal(err)
	}
	if out := dry(s); !strings.Contains(out, "h eth0 (RX ALL + TX ON): write: eth0: tx_type=OFF rx_filter=NONE → tx_type=ON rx_filter=ALL — journaled once for the run") {
		t.Errorf("allow-mgmt: true:\n%s", out)
	}
}
