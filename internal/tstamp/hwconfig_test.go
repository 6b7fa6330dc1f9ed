package tstamp

import (
	"errors"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// fakeHW scripts SIOCSHWTSTAMP answers per requested filter.
type fakeHW struct {
	cur     HWTstampConfig
	getErr  error
	setErr  map[RxFilter]error
	upscale map[RxFilter]RxFilter // what the driver writes back
	sets    []HWTstampConfig
}

func (f *fakeHW) GetHWTstamp(string) (HWTstampConfig, error) { return f.cur, f.getErr }

func (f *fakeHW) SetHWTstamp(_ string, cfg *HWTstampConfig) error {
	f.sets = append(f.sets, *cfg)
	if err := f.setErr[cfg.RxFilter]; err != nil {
		return err
	}
	if up, ok := f.upscale[cfg.RxFilter]; ok {
		cfg.RxFilter = up
	}
	f.cur = *cfg
	return nil
}

func TestHWConfigLadder(t *testing.T) {
	prev := HWTstampConfig{TxType: TxOff, RxFilter: FilterPTPv2Event}
	tests := []struct {
		name     string
		hw       fakeHW
		caps     *Caps
		wantReq  RxFilter
		wantGot  RxFilter
		swOnly   bool
		changed  bool
		sets     int
		stepText string
	}{
		{name: "ALL granted", hw: fakeHW{cur: prev}, wantReq: FilterAll, wantGot: FilterAll, changed: true, sets: 1},
		{name: "ALL becomes SOME", hw: fakeHW{cur: prev, upscale: map[RxFilter]RxFilter{FilterAll: FilterSome}}, wantReq: FilterAll, wantGot: FilterSome, changed: true, sets: 1},
		{name: "i40e ERANGE then PTP_V2_L4", hw: fakeHW{cur: prev, setErr: map[RxFilter]error{FilterAll: unix.ERANGE}}, wantReq: FilterPTPv2L4Event, wantGot: FilterPTPv2L4Event, changed: true, sets: 2, stepText: "ALL: ERANGE"},
		{name: "ERANGE twice, upscaled", hw: fakeHW{cur: prev, setErr: map[RxFilter]error{FilterAll: unix.ERANGE, FilterPTPv2L4Event: unix.ERANGE}, upscale: map[RxFilter]RxFilter{FilterPTPv2Event: FilterAll}}, wantReq: FilterPTPv2Event, wantGot: FilterAll, changed: true, sets: 3},
		{name: "down to PTP_V1_L4", hw: fakeHW{cur: prev, setErr: map[RxFilter]error{FilterAll: unix.ERANGE, FilterPTPv2L4Event: unix.ERANGE, FilterPTPv2Event: unix.ERANGE}}, wantReq: FilterPTPv1L4Event, wantGot: FilterPTPv1L4Event, changed: true, sets: 4},
		{name: "all ERANGE", hw: fakeHW{cur: prev, setErr: map[RxFilter]error{FilterAll: unix.ERANGE, FilterPTPv2L4Event: unix.ERANGE, FilterPTPv2Event: unix.ERANGE, FilterPTPv1L4Event: unix.ERANGE}}, swOnly: true, sets: 4, stepText: "no filter granted"},
		{name: "EOPNOTSUPP (veth)", hw: fakeHW{getErr: unix.EOPNOTSUPP, setErr: map[RxFilter]error{FilterAll: unix.EOPNOTSUPP}}, swOnly: true, sets: 1, stepText: "EOPNOTSUPP"},
		{name: "EINVAL", hw: fakeHW{cur: prev, setErr: map[RxFilter]error{FilterAll: unix.EINVAL}}, swOnly: true, sets: 1, stepText: "EINVAL"},
		{name: "driver grants NONE", hw: fakeHW{cur: prev, upscale: map[RxFilter]RxFilter{FilterAll: FilterNone}}, wantReq: FilterPTPv2L4Event, wantGot: FilterPTPv2L4Event, changed: true, sets: 2, stepText: "granted NONE"},
		{name: "caps skip ALL", hw: fakeHW{cur: prev}, caps: &Caps{TxTypes: 1 << TxOn, RxFilters: 1<<FilterNone | 1<<FilterPTPv2Event}, wantReq: FilterPTPv2Event, wantGot: FilterPTPv2Event, changed: true, sets: 1, stepText: "ALL: skipped"},
		{name: "caps say nothing", hw: fakeHW{cur: prev}, caps: &Caps{RxFilters: 1 << FilterNone}, swOnly: true, sets: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHWConfigWith("eth9", &tt.hw)
			r, err := h.Apply(tt.caps)
			if err != nil {
				t.Fatal(err)
			}
			if r.SoftwareOnly != tt.swOnly || r.Changed != tt.changed || len(tt.hw.sets) != tt.sets {
				t.Fatalf("result %s: swOnly=%v changed=%v sets=%d", r, r.SoftwareOnly, r.Changed, len(tt.hw.sets))
			}
			if !tt.swOnly && (r.Requested != tt.wantReq || r.Granted.RxFilter != tt.wantGot) {
				t.Fatalf("requested %s granted %s, want %s/%s", r.Requested, r.Granted.RxFilter, tt.wantReq, tt.wantGot)
			}
			if tt.hw.getErr == nil && (!r.PreviousKnown || r.Previous != prev) {
				t.Fatalf("previous %v known=%v", r.Previous, r.PreviousKnown)
			}
			if tt.stepText != "" && !strings.Contains(r.String(), tt.stepText) {
				t.Fatalf("steps %q lack %q", r.String(), tt.stepText)
			}
		})
	}
}

func TestHWConfigTxOffWithoutTxCaps(t *testing.T) {
	hw := &fakeHW{}
	r, err := NewHWConfigWith("ens5", hw).Apply(&Caps{TxTypes: 1 << TxOff, RxFilters: 1<<FilterNone | 1<<FilterAll})
	if err != nil || r.Granted.TxType != TxOff || hw.sets[0].TxType != TxOff {
		t.Fatalf("RX-only NIC: %s, %v", r, err)
	}
}

func TestHWConfigErrors(t *testing.T) {
	hw := &fakeHW{setErr: map[RxFilter]error{FilterAll: unix.EPERM}}
	_, err := NewHWConfigWith("eth9", hw).Apply(nil)
	if !errors.Is(err, os.ErrPermission) || !strings.Contains(err.Error(), "CAP_NET_ADMIN") {
		t.Fatalf("EPERM: %v", err)
	}
	hw = &fakeHW{setErr: map[RxFilter]error{FilterAll: unix.EIO}}
	if _, err := NewHWConfigWith("eth9", hw).Apply(nil); !errors.Is(err, unix.EIO) {
		t.Fatalf("EIO: %v", err)
	}
	hw = &fakeHW{getErr: unix.ENODEV}
	if _, err := NewHWConfigWith("eth9", hw).Apply(nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("ENODEV: %v", err)
	}
	hw = &fakeHW{getErr: unix.EOPNOTSUPP}
	if _, err := NewHWConfigWith("eth9", hw).Get(); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("Get EOPNOTSUPP: %v", err)
	}
}

func TestHWConfigRestore(t *testing.T) {
	prev := HWTstampConfig{TxType: TxOn, RxFilter: FilterPTPv2Event}
	hw := &fakeHW{cur: prev}
	h := NewHWConfigWith("eth9", hw)
	r, err := h.Apply(nil)
	if err != nil || hw.cur.RxFilter != FilterAll {
		t.Fatal(r, err)
	}
	if err := h.Restore(r.Previous); err != nil || hw.cur != prev {
		t.Fatalf("restore: %v, cur %s", err, hw.cur)
	}
	hw.setErr = map[RxFilter]error{FilterPTPv2Event: unix.EPERM}
	if err := h.Restore(prev); !errors.Is(err, os.ErrPermission) {
		t.Fatalf("restore EPERM: %v", err)
	}
}
