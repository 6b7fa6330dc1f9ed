package telemetry

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/rundir"
)

// openEnergyFile opens a zone's energy_uj; tests replace it to model a
// reader without the root the file asks for.
var openEnergyFile = hostinfo.Open

// energyMeter reads every RAPL zone's counter at each sample; opened by
// New with Config.MeasureEnergy.
type energyMeter struct {
	zones []energyZone
	why   string // no zone at all, and why
	// endsOnly: a measured CPU is its package's lead CPU, where the driver
	// runs every read (an IPI), so the counters are read at the round's
	// first and last sample only; note says so.
	endsOnly bool
	note     string
}

type energyZone struct {
	z     hostinfo.RAPLZone
	f     *hostinfo.File
	why   string // set once this zone can no longer be told
	prev  uint64
	prevT int64
	first int64
	n     int
	uj    uint64
	wraps int
}

// openEnergy opens every zone's energy_uj. An unreadable counter is kept
// with its reason: since Linux 5.10 energy_uj is readable by root only.
func (s *Sampler) openEnergy() {
	em := &energyMeter{}
	s.energy = em
	zs, err := hostinfo.RAPLZones(s.cfg.FS)
	if errors.Is(err, os.ErrNotExist) {
		em.why = fmt.Sprintf("no RAPL zones in %s (no intel_rapl driver: modprobe intel_rapl_msr; a VM does not expose RAPL; a container without the host's /sys does not see powercap)", hostinfo.PowercapDir)
		return
	}
	if err != nil {
		em.why = err.Error()
		return
	}
	if lead, err := leadCPU(s.cfg.FS, s.cfg.CPUs); err != nil {
		em.endsOnly, em.note = true, fmt.Sprintf("read at the round's first and last sample only: cannot tell which CPU the driver reads on (%v)", err)
	} else if lead >= 0 {
		em.endsOnly, em.note = true, fmt.Sprintf("read at the round's first and last sample only: measured CPU %d is its package's first, where the driver reads every counter (an IPI each)", lead)
	}
	for _, z := range zs {
		ez := energyZone{z: z}
		ez.f, err = openEnergyFile(s.cfg.FS, z.EnergyPath())
		if err == nil {
			_, err = ez.f.ReadAll(s.small)
		}
		switch {
		case errors.Is(err, fs.ErrPermission):
			ez.why = fmt.Sprintf("%v (energy_uj is readable by root only since Linux 5.10: run rig's agent on the responder host as root)", err)
		case err != nil:
			ez.why = err.Error()
		}
		if err != nil && ez.f != nil {
			ez.f.Close()
			ez.f = nil
		}
		em.zones = append(em.zones, ez)
	}
}

// leadCPU returns the measured CPU that is the lowest online CPU of its
// package (intel_rapl_msr reads a package's counters on that CPU), or -1.
func leadCPU(fs hostfs.FS, cpus []int) (int, error) {
	online, err := hostinfo.OnlineCPUs(fs)
	if err != nil {
		return -1, err
	}
	pkg := map[int]int{} // package → its lowest online CPU
	for _, c := range online {
		t, err := hostinfo.ReadTopology(fs, c)
		if err != nil {
			return -1, err
		}
		if _, ok := pkg[t.Package]; !ok {
			pkg[t.Package] = c
		}
	}
	for _, c := range cpus {
		for _, lead := range pkg {
			if c == lead {
				return c, nil
			}
		}
	}
	return -1, nil
}

// sample reads every zone at time t (ns) and adds the step since the
// previous reading. It does not allocate.
func (em *energyMeter) sample(t int64, buf []byte) {
	for k := range em.zones {
		z := &em.zones[k]
		if z.f == nil || z.why != "" {
			continue
		}
		b, err := z.f.ReadAll(buf)
		v, ok := hostinfo.ParseUint(b)
		if err != nil || !ok {
			z.why = fmt.Sprintf("reading %s failed at sample %d", z.z.EnergyPath(), z.n)
			continue
		}
		if z.n > 0 {
			d, wrapped, ok := hostinfo.RAPLDelta(z.prev, v, z.z.RangeUJ, t-z.prevT)
			if !ok {
				z.why = fmt.Sprintf("%v between two readings: at %d W the counter (range %d µJ) could have wrapped more than once",
					time.Duration(t-z.prevT), rundir.RAPLMaxWatts, z.z.RangeUJ)
				continue
			}
			z.uj += d
			if wrapped {
				z.wraps++
			}
		} else {
			z.first = t
		}
		z.prev, z.prevT = v, t
		z.n++
	}
}

// readEnergyEnd reads the counters at the round's first or last sample
// when they are read there only.
func (s *Sampler) readEnergyEnd() {
	if s.energy != nil && s.energy.endsOnly {
		s.energy.sample(time.Now().UnixNano(), s.small)
	}
}

func (em *energyMeter) close() {
	for _, z := range em.zones {
		if z.f != nil {
			z.f.Close()
		}
	}
}

func (em *energyMeter) result() *rundir.EnergyResult {
	r := &rundir.EnergyResult{Source: rundir.EnergySourceRAPL, Rule: rundir.RuleRAPL, CannotTell: em.why, Note: em.note}
	if em.why != "" {
		r.Rule = ""
	}
	for _, z := range em.zones {
		ez := rundir.EnergyZone{Zone: z.z.Zone, Name: z.z.Name, Parent: z.z.Parent, CannotTell: z.why, Samples: z.n, Wraps: z.wraps}
		switch {
		case z.why != "":
		case z.n < 2 || z.prevT <= z.first:
			ez.CannotTell = "fewer than two readings"
		default:
			ez.Joules = float64(z.uj) / 1e6
			ez.Seconds = float64(z.prevT-z.first) / 1e9
			ez.Watts = ez.Joules / ez.Seconds
		}
		r.Zones = append(r.Zones, ez)
	}
	return r
}
