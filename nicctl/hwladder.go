package nicctl

import (
	"context"
	"errors"
	"fmt"

	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/tstamp"
)

// errSoftwareOnly ends a ladder that changed nothing on the device.
var errSoftwareOnly = errors.New("no hardware rx_filter granted")

// EnableHWTimestamps turns on the NIC's hardware timestamping for a run
// through the journal: it walks tstamp's filter ladder (ALL → PTP_V2_L4 →
// PTP_V2 → PTP_V1_L4, skipping what the rx_filters bitmap excludes), keeps
// what the driver granted, and is undone like any other change (the
// previous SIOCGHWTSTAMP config is written back). A NIC without hardware
// timestamping, or whose driver grants no filter, is reported as "software
// only" and left untouched: that is not an error (timestamps: auto).
// Run it before any other change: some drivers (ENA) bounce the link and
// reset IRQ affinity when timestamping changes.
func EnableHWTimestamps(ctx context.Context, env *Env, j *journal.Journal, iface string) (Change, error) {
	chg := Change{What: "hwtstamp " + iface, Requested: "hardware (ALL, else a PTP filter)"}
	capsOf := env.Caps
	if capsOf == nil {
		capsOf = tstamp.Capabilities
	}
	caps, err := capsOf(iface)
	if err != nil {
		return chg, err
	}
	if !caps.HardwareRX() && !caps.HardwareTX() {
		chg.Effective, chg.Note = "software only", "no hardware timestamping: "+caps.String()
		return chg, nil
	}
	var res tstamp.HWResult
	c := hwtstampChange(env.ioctl(), iface, "ladder")
	c.Write = func(context.Context, string) error {
		h := tstamp.NewHWConfigWith(iface, hwAdapter{env.ioctl()})
		var err error
		if res, err = h.Apply(&caps); err != nil {
			return err
		}
		if !res.Changed {
			return errSoftwareOnly
		}
		return nil
	}
	r, err := j.Apply(ctx, c)
	chg.Previous, chg.Effective = r.Previous, r.Effective
	if len(res.Steps) > 0 {
		chg.Note = fmt.Sprint(res.Steps)
	}
	if errors.Is(err, errSoftwareOnly) {
		chg.Effective = "software only"
		return chg, nil
	}
	if err != nil {
		chg.Err = err.Error()
	}
	return chg, err
}

// hwAdapter lets tstamp's ladder drive nicctl's DeviceIoctl (real or fake).
type hwAdapter struct{ io DeviceIoctl }

func (a hwAdapter) GetHWTstamp(iface string) (tstamp.HWTstampConfig, error) {
	h, err := a.io.HWTstamp(iface)
	return tstamp.HWTstampConfig{TxType: tstamp.TxType(h.TxType), RxFilter: tstamp.RxFilter(h.RxFilter)}, err
}

func (a hwAdapter) SetHWTstamp(iface string, cfg *tstamp.HWTstampConfig) error {
	if err := a.io.SetHWTstamp(iface, HWTstamp{TxType: int32(cfg.TxType), RxFilter: int32(cfg.RxFilter)}); err != nil {
		return err
	}
	if got, err := a.io.HWTstamp(iface); err == nil {
		cfg.TxType, cfg.RxFilter = tstamp.TxType(got.TxType), tstamp.RxFilter(got.RxFilter)
	}
	return nil
}
