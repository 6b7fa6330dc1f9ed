package hwtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rig-project/rig/analysis"
	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/nicfake"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/telemetry"
	"github.com/rig-project/rig/internal/tstamp"
)

// TestStampLossCountersInReport: the responder's telemetry samples the
// driver's TX-stamp loss counters with its other NIC counters (nicctl's
// ethtool -S reader, here over igb's profile), and the report's telemetry
// table shows the one that moved — igb's single TX-stamp slot skipping
// stamps in a burst — and not the ones that stayed at zero.
func TestStampLossCountersInReport(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs 2 CPUs")
	}
	n := nicfake.New(nicfake.IGB82576(), "eth9")
	n.SetConfig(tstamp.HWTstampConfig{TxType: tstamp.TxOn, RxFilter: tstamp.FilterPTPv2Event})
	st, err := facts.NewNICStatsWith("eth9", n)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if names := st.Names(); !slices.Contains(names, "tx_hwtstamp_skipped") || !slices.Contains(names, "rx_hwtstamp_cleared") {
		t.Fatalf("counters sampled: %v", names)
	}
	// The sampler's reads: done once two of them saw the skipped count
	// differ (the counter moved within the sampled window).
	skippedAt := slices.Index(st.Names(), "tx_hwtstamp_skipped")
	var last atomic.Int64
	last.Store(-1)
	moved, once := make(chan struct{}), sync.Once{}
	read := func(dst []uint64) error {
		err := st.Read(dst)
		if v := int64(dst[skippedAt]); err == nil {
			if p := last.Swap(v); p >= 0 && p != v {
				once.Do(func() { close(moved) })
			}
		}
		return err
	}
	s, err := telemetry.New(telemetry.Config{FS: hostfs.FS{Root: "/"}, CPUs: []int{1}, PinCPU: 0, Interval: 10 * time.Millisecond,
		ThreadScanEvery: -1, NICStats: read, NICStatNames: st.Names()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	done := make(chan struct{})
	go func() { // bursts of 10 stamped sends 2 µs apart, every 5 ms
		defer close(done)
		for k := int64(0); !stop.Load(); k++ {
			base := time.Now().UnixNano()
			for i := int64(0); i < 10; i++ {
				n.StampTX("eth9", base+i*2000)
			}
			time.Sleep(5 * time.Millisecond) // the traffic's pattern: a burst every 5 ms
		}
	}()
	select {
	case <-moved:
	case <-time.After(30 * time.Second):
		t.Fatal("the telemetry never sampled tx_hwtstamp_skipped moving")
	}
	stop.Store(true)
	<-done
	res, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if res.ReadErrors != 0 {
		t.Fatalf("telemetry read errors: %d (%s)", res.ReadErrors, res.FirstError)
	}
	dir := t.TempDir()
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.Telemetry), b, 0o644); err != nil {
		t.Fatal(err)
	}
	blocks, err := analysis.SummarizeTelemetry(&analysis.TelemetryArm{Arm: "a", Rounds: []analysis.TelemetryRound{{K: 0, Dir: dir}}})
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, bl := range blocks {
		for _, r := range bl.Rows {
			rows = append(rows, strings.Join(r, " | "))
		}
	}
	skipped, _ := n.Counter("tx_hwtstamp_skipped")
	if skipped == 0 || !slices.ContainsFunc(rows, func(r string) bool { return strings.HasPrefix(r, "nic tx_hwtstamp_skipped |") }) {
		t.Fatalf("tx_hwtstamp_skipped = %d; telemetry rows:\n%s", skipped, strings.Join(rows, "\n"))
	}
	if slices.ContainsFunc(rows, func(r string) bool {
		return strings.Contains(r, "rx_hwtstamp_cleared") || strings.Contains(r, "tx_hwtstamp_timeouts")
	}) {
		t.Fatalf("counters that stayed at zero are shown:\n%s", strings.Join(rows, "\n"))
	}
}
