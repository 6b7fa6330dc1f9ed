package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/power"
	"github.com/rig-project/rig/internal/telemetry"
	"github.com/rig-project/rig/nicctl"
)

var threadRE = regexp.MustCompile(`thread (\d+)\)`)

// procTelemetry samples a responder's CPU from the agent process, on a CPU
// other than the ones it measures.
type procTelemetry struct {
	s     *telemetry.Sampler
	stats *nicctl.NICStats
	err   error
}

// startTelemetry starts sampling once the responder said it is ready
// (its ready line names the loop's thread).
func startTelemetry(fs hostfs.FS, a *TelemetryArgs, pid int, readyLine string) *procTelemetry {
	pt := &procTelemetry{}
	tid := 0
	if m := threadRE.FindStringSubmatch(readyLine); m != nil {
		tid, _ = strconv.Atoi(m[1])
	}
	topo, err := hostinfo.ReadTopology(fs, a.CPU)
	if err != nil {
		pt.err = err
		return pt
	}
	cpus := topo.ThreadSiblings
	if !slices.Contains(cpus, a.CPU) {
		cpus = append(cpus, a.CPU)
	}
	online, err := hostinfo.OnlineCPUs(fs)
	if err != nil {
		pt.err = err
		return pt
	}
	pin := -1
	for _, c := range online {
		if !slices.Contains(cpus, c) {
			pin = c
			break
		}
	}
	if pin < 0 {
		pt.err = fmt.Errorf("telemetry: every online CPU is the responder's or its sibling's; no CPU left to sample from")
		return pt
	}
	// The responder CPU's frequency over the round, and the power state
	// the arm left (tuned-adm active included) for the record.
	cfg := telemetry.Config{FS: fs, CPUs: cpus, PID: pid, TID: tid,
		Interval: time.Duration(a.IntervalNS), PinCPU: pin, IRQs: queueIRQs(fs, a.Iface), MaxSamples: 1 << 16,
		MeasureFreq: true, FreqCPU: a.CPU, Power: power.ReadState(context.Background(), fs, a.CPU, power.HostTuned(fs))}
	// The NIC's drop and ring-overrun counters (ethtool -S), where the
	// driver has them; without them the sampler still runs.
	if a.Iface != "" {
		if st, err := nicctl.NewNICStats(a.Iface); err == nil && len(st.Names()) > 0 {
			pt.stats = st
			cfg.NICStats, cfg.NICStatNames = st.Read, st.Names()
		}
	}
	s, err := telemetry.New(cfg)
	if err == nil {
		err = s.Start()
	}
	if err != nil {
		pt.err = err
		return pt
	}
	pt.s = s
	return pt
}

// finish stops sampling and writes telemetry.json (or the reason there is
// none) to path.
func (pt *procTelemetry) finish(path string) {
	var v any
	if pt.s != nil {
		res, err := pt.s.Stop()
		if err != nil {
			pt.err = errors.Join(pt.err, err)
		}
		v = res
	}
	if pt.stats != nil {
		pt.stats.Close()
	}
	if pt.err != nil {
		v = map[string]string{"error": pt.err.Error()}
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	_ = os.WriteFile(path, append(b, '\n'), 0o644)
}

// queueIRQs lists the queue IRQs of iface whose affinity telemetry
// watches; none for a device without IRQs (veth) or that cannot be read.
func queueIRQs(fs hostfs.FS, iface string) []int {
	if iface == "" {
		return nil
	}
	d, err := nicctl.FindDevice(fs, iface)
	if err != nil {
		return nil
	}
	in, err := hostinfo.ReadInterrupts(fs)
	if err != nil {
		return nil
	}
	irqs, err := nicctl.DiscoverIRQs(fs, d, in)
	if err != nil {
		return nil
	}
	var out []int
	for _, q := range irqs {
		if q.IsQueue() {
			out = append(out, q.Number)
		}
	}
	return out
}
