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

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/power"
	"github.com/rig-project/rig/internal/telemetry"
)

var threadRE = regexp.MustCompile(`thread (\d+)\)`)

// procTelemetry samples a responder's CPU from the agent process, on a CPU
// other than the ones it measures.
type procTelemetry struct {
	s     *telemetry.Sampler
	stats *facts.NICStats
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
	cpus, watched, err := watchedCPUs(fs, a.CPU, pid)
	if err != nil {
		pt.err = err
		return pt
	}
	// The sampler runs on a CPU the agent may use (in a pod, the pod's
	// cpuset) that is not watched; where there is none, unpinned.
	allowed, err := hostinfo.ProcessCPUsAllowed(fs, "self")
	if err != nil {
		pt.err = err
		return pt
	}
	pin := -1
	for _, c := range allowed {
		if !slices.Contains(cpus, c) {
			pin = c
			break
		}
	}
	// The responder CPU's frequency over the round (a pinned responder's
	// only), and the power state the arm left (tuned-adm active included)
	// for the record.
	stateCPU := a.CPU
	if stateCPU < 0 {
		stateCPU = cpus[0]
	}
	cfg := telemetry.Config{FS: fs, CPUs: cpus, Watched: watched, PID: pid, TID: tid,
		Interval: time.Duration(a.IntervalNS), PinCPU: pin, IRQs: queueIRQs(fs, a.Iface), MaxSamples: 1 << 16,
		MeasureFreq: a.CPU >= 0, FreqCPU: a.CPU, MeasureEnergy: true, Power: power.ReadState(context.Background(), fs, stateCPU, power.HostTuned(fs))}
	// The NIC's drop and ring-overrun counters (ethtool -S), where the
	// driver has them; without them the sampler still runs.
	if a.Iface != "" {
		if st, err := facts.NewNICStats(a.Iface); err == nil && len(st.Names()) > 0 {
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

// watchedCPUs are what the telemetry of a responder watches: its CPU and
// SMT siblings; unpinned (cpu < 0), every CPU it may run on (its
// Cpus_allowed_list: in a pod, the pod's cpuset).
func watchedCPUs(fs hostfs.FS, cpu, pid int) ([]int, string, error) {
	if cpu < 0 {
		l, err := hostinfo.ProcessCPUsAllowed(fs, strconv.Itoa(pid))
		if err != nil {
			return nil, "", fmt.Errorf("telemetry of an unpinned responder: %w", err)
		}
		return l, "every CPU the unpinned responder may run on (Cpus_allowed_list)", nil
	}
	topo, err := hostinfo.ReadTopology(fs, cpu)
	if err != nil {
		return nil, "", err
	}
	cpus := topo.ThreadSiblings
	if !slices.Contains(cpus, cpu) {
		cpus = append(cpus, cpu)
	}
	return cpus, "", nil
}

// queueIRQs lists the queue IRQs of iface whose affinity telemetry
// watches; none for a device without IRQs (veth) or that cannot be read.
func queueIRQs(fs hostfs.FS, iface string) []int {
	if iface == "" {
		return nil
	}
	d, err := facts.FindDevice(fs, iface)
	if err != nil {
		return nil
	}
	in, err := hostinfo.ReadInterrupts(fs)
	if err != nil {
		return nil
	}
	irqs, err := facts.DiscoverIRQs(fs, d, in)
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
