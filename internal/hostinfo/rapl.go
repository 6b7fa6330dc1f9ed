package hostinfo

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/rundir"
)

// PowercapDir holds the powercap zones. The intel_rapl driver registers
// intel-rapl:N per package and intel-rapl:N:M for its subzones (core,
// uncore, dram); on AMD Zen the same driver keeps the intel-rapl name.
const PowercapDir = "/sys/class/powercap"

// RAPLZone is one RAPL powercap zone.
type RAPLZone struct {
	Zone   string // "intel-rapl:0", "intel-rapl:0:1"
	Name   string // its name file: "package-0", "core", "uncore", "dram", "psys"
	Parent string // the package zone's name for a subzone, else ""
	// RangeUJ is max_energy_range_uj: energy_uj wraps to 0 there.
	RangeUJ uint64
}

// EnergyPath is the zone's cumulative energy counter, µJ.
func (z RAPLZone) EnergyPath() string { return PowercapDir + "/" + z.Zone + "/energy_uj" }

// RAPLZones lists the intel-rapl zones, packages before their subzones.
// Without the driver (a VM, a container without /sys/class/powercap) the
// error wraps os.ErrNotExist.
func RAPLZones(fs hostfs.FS) ([]RAPLZone, error) {
	ents, err := fs.ReadDir(PowercapDir)
	if err != nil {
		return nil, err
	}
	var zs []RAPLZone
	names := map[string]string{}
	for _, e := range ents {
		id := e.Name()
		// "intel-rapl" alone is the control type, intel-rapl-mmio a second
		// interface to the same package counters.
		if !strings.HasPrefix(id, "intel-rapl:") {
			continue
		}
		d := PowercapDir + "/" + id
		name, err := fs.ReadString(d + "/name")
		if err != nil {
			return nil, fmt.Errorf("powercap zone %s: %w", id, err)
		}
		r, err := fs.ReadInt(d + "/max_energy_range_uj")
		if err != nil || r <= 0 {
			return nil, fmt.Errorf("powercap zone %s: max_energy_range_uj: %v", id, errors.Join(err, errors.New("not positive")))
		}
		names[id] = name
		zs = append(zs, RAPLZone{Zone: id, Name: name, RangeUJ: uint64(r)})
	}
	if len(zs) == 0 {
		return nil, fmt.Errorf("%s has no intel-rapl zone: %w", PowercapDir, os.ErrNotExist)
	}
	for i, z := range zs {
		if k := strings.LastIndexByte(z.Zone, ':'); k > len("intel-rapl") {
			zs[i].Parent = names[z.Zone[:k]]
		}
	}
	sort.Slice(zs, func(i, j int) bool { return zs[i].Zone < zs[j].Zone })
	return zs, nil
}

// RAPLDelta is the energy between two readings dtNS apart: one wrap at
// rangeUJ is unwound (wrapped); ok is false when dtNS is long enough for
// the zone to have wrapped more than once at rundir.RAPLMaxWatts, where no delta
// can be told.
func RAPLDelta(prev, cur, rangeUJ uint64, dtNS int64) (uj uint64, wrapped, ok bool) {
	if float64(dtNS)/1e9*rundir.RAPLMaxWatts*1e6 >= float64(rangeUJ) {
		return 0, false, false
	}
	if cur >= prev {
		return cur - prev, false, true
	}
	return rangeUJ - prev + cur, true, true
}
