package nicctl

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
)

// TestNICStatsVeth reads veth's ethtool -S counters in a lab namespace:
// names once, values without allocating.
func TestNICStatsVeth(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	err := topo.Do(netlab.Responder, func() error {
		s, err := NewNICStats(topo.Responder.Interface)
		if err != nil {
			return err
		}
		defer s.Close()
		names := s.Names()
		if len(names) == 0 || !strings.Contains(strings.Join(names, " "), "drops") {
			t.Errorf("drop counters of veth: %v (all: %v)", names, s.names)
		}
		dst := make([]uint64, len(names))
		if err := s.Read(dst); err != nil {
			return err
		}
		if n := testing.AllocsPerRun(100, func() { _ = s.Read(dst) }); n != 0 {
			t.Errorf("Read allocated %v times", n)
		}
		if _, err := NewNICStats("nosuch0"); !errors.Is(err, os.ErrNotExist) && !strings.Contains(err.Error(), "nosuch0") {
			t.Errorf("unknown interface: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestDropCounterNames(t *testing.T) {
	for _, n := range []string{"rx_queue_0_drops", "rx_missed_errors", "rx_fifo_errors", "rx_no_buffer_count", "rx_over_runs", "tx_timeout_count", "rx_discards_phy"} {
		if !dropCounter.MatchString(n) {
			t.Errorf("%s not picked", n)
		}
	}
	for _, n := range []string{"rx_packets", "tx_bytes", "rx_queue_0_xdp_packets"} {
		if dropCounter.MatchString(n) {
			t.Errorf("%s picked", n)
		}
	}
}
