package tstamp

import (
	"errors"
	"fmt"
	"os"

	"syscall"
)

// FlagBondedPHC is HWTSTAMP_FLAG_BONDED_PHC_INDEX (HWTstampConfig.Flags):
// a bond's SIOCGHWTSTAMP reply carries it — the config and the PHC are its
// active slave's — and its SIOCSHWTSTAMP refuses a request without it
// (EOPNOTSUPP; bond_hwtstamp_get/_set, Linux 5.17 and later).
const FlagBondedPHC = 1

// HWTstampConfig is struct hwtstamp_config, the per-device NIC timestamping
// setting (SIOCGHWTSTAMP/SIOCSHWTSTAMP). It is shared by every process
// using the device. Its JSON form is what the host-change journal stores.
type HWTstampConfig struct {
	Flags    int32    `json:"flags,omitempty"` // HWTSTAMP_FLAG_*; bit 0 = BONDED_PHC_INDEX
	TxType   TxType   `json:"tx_type"`
	RxFilter RxFilter `json:"rx_filter"`
}

func (c HWTstampConfig) String() string {
	s := fmt.Sprintf("tx_type=%s rx_filter=%s", c.TxType, c.RxFilter)
	if c.Flags != 0 {
		s += fmt.Sprintf(" flags=%#x", c.Flags)
	}
	return s
}

// Device is the timestamping surface of the network devices of one network
// namespace: ETHTOOL_GET_TS_INFO, SIOCGHWTSTAMP and SIOCSHWTSTAMP. It is
// the seam between rig and a NIC driver: HostDevice talks to the kernel,
// tests use driver profiles that answer as the real drivers do.
//
// Errors are the raw errno values (ERANGE, EOPNOTSUPP, …) so
// callers can classify them; a missing interface is ENODEV.
type Device interface {
	// TSInfo is ETHTOOL_GET_TS_INFO: the driver's capability report.
	TSInfo(ifname string) (Caps, error)
	// GetHWTstamp is SIOCGHWTSTAMP: the current config. Drivers that do
	// not implement it answer EOPNOTSUPP (or EINVAL on old kernels).
	GetHWTstamp(ifname string) (HWTstampConfig, error)
	// SetHWTstamp is SIOCSHWTSTAMP. Like the kernel it writes what the
	// driver granted back into cfg (a PTP filter upscaled to ALL, or
	// FILTER_SOME); on error nothing was changed.
	SetHWTstamp(ifname string, cfg *HWTstampConfig) error
}

// NICState is what rig knows of one interface's timestamping before it
// decides anything: what the driver can do and what it is set to now.
type NICState struct {
	Ifname string `json:"ifname"`
	Caps   Caps   `json:"caps"`
	// Config is the current device config when ConfigKnown; otherwise
	// ConfigErr says why it is unknown (a driver without SIOCGHWTSTAMP).
	Config      HWTstampConfig `json:"config"`
	ConfigKnown bool           `json:"config_known"`
	ConfigErr   string         `json:"config_error,omitempty"`
	// Owner names a daemon that keeps this device's timestamping config
	// for itself ("ptp4l (pid 812)"); "" when none. The kernel cannot tell:
	// callers fill it from the process table (facts does).
	Owner string `json:"owner,omitempty"`
	// Mgmt is true when it is a management interface (the default route
	// of least metric, the controller's connection). Callers fill it
	// (facts.ReadMgmt).
	Mgmt bool `json:"mgmt,omitempty"`
	// Notes say what the driver's own settings mean for rig's stamps
	// (callers fill them: nicctl, from the private flags).
	Notes []string `json:"notes,omitempty"`
}

// ReadNIC reads ifname's capabilities and current config through dev. A
// driver that cannot report its config (EOPNOTSUPP, EINVAL, ENOTTY) is not
// an error: ConfigKnown is false. A missing interface wraps os.ErrNotExist.
func ReadNIC(dev Device, ifname string) (NICState, error) {
	st := NICState{Ifname: ifname}
	c, err := dev.TSInfo(ifname)
	if err != nil {
		return st, fmt.Errorf("tstamp: %q: ETHTOOL_GET_TS_INFO: %w", ifname, wrapNoDev(err))
	}
	st.Caps = c
	cfg, err := dev.GetHWTstamp(ifname)
	switch {
	case err == nil:
		st.Config, st.ConfigKnown = cfg, true
	case notSupported(err):
		st.ConfigErr = "SIOCGHWTSTAMP: " + errName(err)
	default:
		return st, fmt.Errorf("tstamp: %q: SIOCGHWTSTAMP: %w", ifname, wrapNoDev(err))
	}
	return st, nil
}

// notSupported reports the errors a driver gives for an ioctl it does not
// implement.
func notSupported(err error) bool {
	return errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTTY)
}

// ClassifySetErr wraps an error of SIOCSHWTSTAMP for ifname by its meaning:
// ERANGE (the driver cannot stamp the requested packets; nothing changed)
// and the "not implemented" errnos wrap errors.ErrUnsupported, EPERM wraps
// os.ErrPermission and names CAP_NET_ADMIN, ENODEV wraps os.ErrNotExist.
func ClassifySetErr(ifname string, cfg HWTstampConfig, err error) error {
	switch {
	case errors.Is(err, syscall.ERANGE):
		return fmt.Errorf("tstamp: SIOCSHWTSTAMP %s %s: the driver cannot stamp those packets: %w (%w)", ifname, cfg, err, errors.ErrUnsupported)
	case notSupported(err):
		return fmt.Errorf("tstamp: SIOCSHWTSTAMP %s %s: the driver does not support it: %w (%w)", ifname, cfg, err, errors.ErrUnsupported)
	case errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES):
		return fmt.Errorf("tstamp: SIOCSHWTSTAMP %s needs CAP_NET_ADMIN in the interface's network namespace (run as root): %w (%w)", ifname, err, os.ErrPermission)
	}
	return fmt.Errorf("tstamp: SIOCSHWTSTAMP %s %s: %w", ifname, cfg, wrapNoDev(err))
}

func errName(err error) string {
	var e syscall.Errno
	if errors.As(err, &e) {
		if e == syscall.EOPNOTSUPP {
			return "EOPNOTSUPP" // same number as ENOTSUP on Linux; the name drivers use
		}
		if n := errnoName(e); n != "" {
			return n
		}
	}
	return err.Error()
}

// wrapNoDev makes ENODEV/ENXIO also match os.ErrNotExist.
func wrapNoDev(err error) error {
	if errors.Is(err, syscall.ENODEV) || errors.Is(err, syscall.ENXIO) {
		return fmt.Errorf("%w (%w)", err, errNotExist)
	}
	return err
}

// Stamper emulates a NIC's hardware stamping on the packets of a socket
// whose kernel stamps are software only. HostDevice does not implement
// it: on a real NIC the stamps come from the kernel. Driver profiles in
// tests do, so the probes' real loops, proofs and labels see the hardware
// stamps a driver would give (or not) on veth. StampRX and StampTX get the
// packet's software stamp and return its hardware stamp, 0 for none;
// StampSWTX returns the software SND stamp the driver would give (sw, or 0
// for a driver without one). They must not allocate.
type Stamper interface {
	StampRX(ifname string, sw int64) int64
	StampTX(ifname string, sw int64) int64
	StampSWTX(ifname string, sw int64) int64
}

// stamperOf returns dev's Stamper for a socket that asked for stamps.
func stamperOf(dev Device, g Granted) Stamper {
	if s, ok := dev.(Stamper); ok && g.Mode != Off {
		return s
	}
	return nil
}
