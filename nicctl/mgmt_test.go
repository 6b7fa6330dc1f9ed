package nicctl

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/journal"
)

// On EC2 with a second ENI both distributions put a default route through
// it in the main table — cloud-init on Ubuntu with route-metric 200,
// amazon-ec2-net-utils on AL2023 with metric 513 — besides its policy
// table. Only the lowest-metric one (ens5) is the management interface;
// ens6 has a default route and can be changed.
func TestMgmtEC2Trees(t *testing.T) {
	for _, tree := range []string{"c7i", "c7i-ubuntu", "c8g-ubuntu", "c8g"} {
		fs := hostfs.FS{Root: "../internal/hostinfo/testdata/" + tree}
		m, err := facts.ReadMgmt(fs)
		if err != nil || !slices.Equal(m.Ifaces(), []string{"ens5"}) {
			t.Errorf("%s: management %v %v, want [ens5]", tree, m.Ifaces(), err)
		}
		if tree == "c8g" {
			continue
		}
		if !m.HasDefault("ens6") || !strings.HasPrefix(m.Why["ens5"], "carries the default route (IPv4, metric ") {
			t.Errorf("%s: %+v", tree, m)
		}
		ctx := context.Background()
		j, err := journal.Open(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		// The guard lets ens6 through (the plan then needs CPUs, not the route)...
		if _, err := Set(ctx, &Env{NIC: facts.NIC{FS: fs}}, j, "ens6", Settings{IRQCPUs: []int{99}}); err == nil || strings.Contains(err.Error(), "management") {
			t.Errorf("%s: ens6: %v", tree, err)
		}
		// ...and refuses ens5, saying why.
		if _, err := Set(ctx, &Env{NIC: facts.NIC{FS: fs}}, j, "ens5", Settings{IRQCPUs: []int{1}}); err == nil ||
			!strings.Contains(err.Error(), "ens5 carries the default route (IPv4, metric ") || !strings.Contains(err.Error(), "--allow-mgmt") {
			t.Errorf("%s: ens5: %v", tree, err)
		}
		j.Close()
		in, err := facts.Show(ctx, &newEnv(fs, &fakeEthtool{}).NIC, "ens6")
		if err != nil || in.Mgmt != "" || !in.DefaultRoute || len(in.IRQs) != 9 {
			t.Errorf("%s: show ens6: mgmt %q default route %v, %d IRQs (%v)", tree, in.Mgmt, in.DefaultRoute, len(in.IRQs), err)
		}
	}
}
