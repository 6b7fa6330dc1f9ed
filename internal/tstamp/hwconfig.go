package tstamp

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// HWTstampConfig is struct hwtstamp_config, the per-device NIC timestamping
// setting (SIOCGHWTSTAMP/SIOCSHWTSTAMP). It is shared by every process
// using the device.
type HWTstampConfig struct {
	Flags    int32 // HWTSTAMP_FLAG_*; bit 0 = BONDED_PHC_INDEX
	TxType   TxType
	RxFilter RxFilter
}

func (c HWTstampConfig) String() string {
	return fmt.Sprintf("tx_type=%s rx_filter=%s flags=%#x", c.TxType, c.RxFilter, c.Flags)
}

// HWIoctl is the device access HWConfig needs; the real one issues
// SIOCGHWTSTAMP/SIOCSHWTSTAMP, tests and callers' tests use fakes. Set, like
// the kernel, writes the granted config back into cfg. Errors are the raw
// errno values (syscall.ERANGE, syscall.EOPNOTSUPP, …) so HWConfig can
// classify them.
type HWIoctl interface {
	GetHWTstamp(ifname string) (HWTstampConfig, error)
	SetHWTstamp(ifname string, cfg *HWTstampConfig) error
}

// HWConfig configures NIC hardware timestamping on one interface.
type HWConfig struct {
	Ifname string
	dev    HWIoctl
	close  func() error
}

// NewHWConfig returns the real ioctl-backed HWConfig for ifname in the
// calling thread's network namespace. Close it when done.
func NewHWConfig(ifname string) (*HWConfig, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("tstamp: hwtstamp %q: socket: %w", ifname, err)
	}
	return &HWConfig{Ifname: ifname, dev: ioctlDev{fd}, close: func() error { return unix.Close(fd) }}, nil
}

// NewHWConfigWith returns an HWConfig over any HWIoctl (fakes in tests).
func NewHWConfigWith(ifname string, dev HWIoctl) *HWConfig {
	return &HWConfig{Ifname: ifname, dev: dev}
}

// Close releases the socket of a real HWConfig.
func (h *HWConfig) Close() error {
	if h.close == nil {
		return nil
	}
	c := h.close
	h.close = nil
	return c()
}

type ioctlDev struct{ fd int }

func (d ioctlDev) GetHWTstamp(ifname string) (HWTstampConfig, error) {
	c, err := unix.IoctlGetHwTstamp(d.fd, ifname)
	if err != nil {
		return HWTstampConfig{}, err
	}
	return HWTstampConfig{Flags: c.Flags, TxType: TxType(c.Tx_type), RxFilter: RxFilter(c.Rx_filter)}, nil
}

func (d ioctlDev) SetHWTstamp(ifname string, cfg *HWTstampConfig) error {
	c := unix.HwTstampConfig{Flags: cfg.Flags, Tx_type: int32(cfg.TxType), Rx_filter: int32(cfg.RxFilter)}
	err := unix.IoctlSetHwTstamp(d.fd, ifname, &c)
	cfg.Flags, cfg.TxType, cfg.RxFilter = c.Flags, TxType(c.Tx_type), RxFilter(c.Rx_filter)
	return err
}

// Get reads the current device config. Drivers without SIOCGHWTSTAMP give
// an error wrapping errors.ErrUnsupported: the config is unknown. A missing
// interface wraps os.ErrNotExist.
func (h *HWConfig) Get() (HWTstampConfig, error) {
	c, err := h.dev.GetHWTstamp(h.Ifname)
	if err != nil {
		return c, h.wrap("SIOCGHWTSTAMP", err)
	}
	return c, nil
}

func (h *HWConfig) wrap(op string, err error) error {
	switch {
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOTSUP):
		return fmt.Errorf("tstamp: %s %s: %w (%w)", op, h.Ifname, err, errors.ErrUnsupported)
	case errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES):
		return fmt.Errorf("tstamp: %s %s needs CAP_NET_ADMIN in the interface's network namespace: %w (%w)", op, h.Ifname, err, os.ErrPermission)
	}
	return fmt.Errorf("tstamp: %s %s: %w", op, h.Ifname, wrapNoDev(err))
}

// ladder is the rx_filter order Apply tries, best first.
var ladder = [...]RxFilter{FilterAll, FilterPTPv2L4Event, FilterPTPv2Event, FilterPTPv1L4Event}

// HWResult is what Apply did.
type HWResult struct {
	// Previous is the config before Apply; PreviousKnown is false when the
	// driver cannot report it (SIOCGHWTSTAMP unsupported).
	Previous      HWTstampConfig
	PreviousKnown bool
	// Changed is true when a SIOCSHWTSTAMP succeeded: Restore(Previous) is
	// due at the end of the run.
	Changed bool
	// Requested is the ladder step that succeeded (FilterNone when none did).
	Requested RxFilter
	// Granted is the config re-read from the device after the successful
	// step (FILTER_SOME counts as success), or what the driver wrote back
	// when it cannot be re-read.
	Granted HWTstampConfig
	// SoftwareOnly: no HW stamping; label the run "SW only".
	SoftwareOnly bool
	// Steps explains every ladder step, e.g. "ALL: ERANGE".
	Steps []string
}

func (r HWResult) String() string {
	s := "granted " + r.Granted.String()
	if r.SoftwareOnly {
		s = "software only"
	}
	return s + " [" + strings.Join(r.Steps, "; ") + "]"
}

// Apply saves the current config and walks the ladder ALL → PTP_V2_L4_EVENT
// → PTP_V2_EVENT → PTP_V1_L4_EVENT → software only, with tx_type ON (OFF
// when caps say the NIC cannot stamp TX). caps may be nil (unknown); when
// given, steps its rx_filters bitmap excludes are skipped.
//
// Per step: ERANGE (the driver cannot stamp those packets) → next step;
// EINVAL or EOPNOTSUPP (no SIOCSHWTSTAMP on this device: veth, VFs) →
// software only, not an error; EPERM → error naming CAP_NET_ADMIN (wraps
// os.ErrPermission); anything else → error. A step whose re-read rx_filter
// is NONE counts as not granted. The software-only outcome changes nothing
// on the device.
func (h *HWConfig) Apply(caps *Caps) (HWResult, error) {
	var r HWResult
	prev, err := h.Get()
	switch {
	case err == nil:
		r.Previous, r.PreviousKnown = prev, true
	case errors.Is(err, errors.ErrUnsupported):
		r.Steps = append(r.Steps, "previous config unknown (SIOCGHWTSTAMP unsupported)")
	default:
		return r, err
	}
	tx := TxOn
	if caps != nil && !caps.HardwareTX() {
		tx = TxOff
	}
	for _, f := range ladder {
		if caps != nil && caps.RxFilters&(1<<f) == 0 {
			r.Steps = append(r.Steps, f.String()+": skipped (not in rx_filters)")
			continue
		}
		cfg := HWTstampConfig{TxType: tx, RxFilter: f}
		err := h.dev.SetHWTstamp(h.Ifname, &cfg)
		switch {
		case err == nil:
		case errors.Is(err, unix.ERANGE):
			r.Steps = append(r.Steps, f.String()+": ERANGE")
			continue
		case errors.Is(err, unix.EINVAL), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOTSUP):
			r.Steps = append(r.Steps, f.String()+": "+errName(err)+" (no SIOCSHWTSTAMP): software only")
			r.SoftwareOnly = true
			return r, nil
		default:
			return r, h.wrap("SIOCSHWTSTAMP "+cfg.String(), err)
		}
		r.Changed = true
		granted := cfg
		if got, err := h.dev.GetHWTstamp(h.Ifname); err == nil {
			granted = got
		}
		if granted.RxFilter == FilterNone {
			r.Steps = append(r.Steps, f.String()+": driver granted NONE")
			continue
		}
		r.Steps = append(r.Steps, f.String()+": granted "+granted.RxFilter.String())
		r.Requested, r.Granted = f, granted
		return r, nil
	}
	r.Steps = append(r.Steps, "no filter granted: software only")
	r.SoftwareOnly = true
	return r, nil
}

func errName(err error) string {
	var e unix.Errno
	if errors.As(err, &e) {
		if e == unix.EOPNOTSUPP {
			return "EOPNOTSUPP" // same number as ENOTSUP on Linux; the name drivers use
		}
		if n := unix.ErrnoName(e); n != "" {
			return n
		}
	}
	return err.Error()
}

// Restore writes prev back (the value from HWResult.Previous). Error
// contract as Apply: EPERM wraps os.ErrPermission, EOPNOTSUPP wraps
// errors.ErrUnsupported.
func (h *HWConfig) Restore(prev HWTstampConfig) error {
	cfg := prev
	if err := h.dev.SetHWTstamp(h.Ifname, &cfg); err != nil {
		return h.wrap("SIOCSHWTSTAMP restore "+prev.String(), err)
	}
	return nil
}

// HostHWIoctl returns the real SIOC[GS]HWTSTAMP access, one short-lived
// socket per call, for callers that keep their own HWIoctl-shaped
// interfaces (nicctl). Errors are the raw errno values.
func HostHWIoctl() HWIoctl { return sockHWIoctl{} }

type sockHWIoctl struct{}

func (sockHWIoctl) GetHWTstamp(ifname string) (HWTstampConfig, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return HWTstampConfig{}, err
	}
	defer unix.Close(fd)
	return ioctlDev{fd}.GetHWTstamp(ifname)
}

func (sockHWIoctl) SetHWTstamp(ifname string, cfg *HWTstampConfig) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return ioctlDev{fd}.SetHWTstamp(ifname, cfg)
}
