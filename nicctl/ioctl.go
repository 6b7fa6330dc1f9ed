package nicctl

import (
	"bytes"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/rig-project/rig/internal/tstamp"
)

// DrvInfo is ETHTOOL_GDRVINFO (ethtool -i).
type DrvInfo struct {
	Driver   string `json:"driver"`
	Version  string `json:"version"`
	Firmware string `json:"firmware"`
	BusInfo  string `json:"bus_info"`
}

// HWTstamp is the device's hardware timestamping config (SIOC[GS]HWTSTAMP):
// TxType is a HWTSTAMP_TX_* value, RxFilter a HWTSTAMP_FILTER_* value.
type HWTstamp struct {
	TxType   int32 `json:"tx_type"`
	RxFilter int32 `json:"rx_filter"`
}

// HWTstamp modes of `rig nicctl set --hwtstamp`.
var HWTstampModes = map[string]HWTstamp{
	"all": {TxType: unix.HWTSTAMP_TX_ON, RxFilter: unix.HWTSTAMP_FILTER_ALL},
	"ptp": {TxType: unix.HWTSTAMP_TX_ON, RxFilter: unix.HWTSTAMP_FILTER_PTP_V2_EVENT},
	"off": {TxType: unix.HWTSTAMP_TX_OFF, RxFilter: unix.HWTSTAMP_FILTER_NONE},
}

// DeviceIoctl is the ioctl surface nicctl uses (no netlink equivalent on
// the kernels it targets). The real one works in the caller's netns.
// Errors match errors.ErrUnsupported when the driver lacks the operation.
type DeviceIoctl interface {
	DrvInfo(iface string) (DrvInfo, error)
	HWTstamp(iface string) (HWTstamp, error)
	// SetHWTstamp applies cfg. The driver may grant more than asked (PTP
	// filters upscaled to ALL): read back with HWTstamp.
	SetHWTstamp(iface string, cfg HWTstamp) error
}

type sockIoctl struct{}

// HostIoctl returns the real DeviceIoctl.
func HostIoctl() DeviceIoctl { return sockIoctl{} }

func withSock(op, iface string, f func(fd int) error) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s %s: socket: %w", op, iface, err)
	}
	defer unix.Close(fd)
	if err := f(fd); err != nil {
		return ioctlErr(op, iface, err)
	}
	return nil
}

func ioctlErr(op, iface string, err error) error {
	switch {
	case errors.Is(err, unix.EOPNOTSUPP):
		return fmt.Errorf("%s %s: not supported by this driver: %w", op, iface, also{err, errors.ErrUnsupported})
	case errors.Is(err, unix.ERANGE):
		return fmt.Errorf("%s %s: the driver cannot timestamp the requested packets (ERANGE; PTP-only NICs need --hwtstamp ptp): %w", op, iface, err)
	case errors.Is(err, unix.EPERM):
		return fmt.Errorf("%s %s: needs CAP_NET_ADMIN in the interface's network namespace: %w", op, iface, err)
	case errors.Is(err, unix.ENODEV):
		return fmt.Errorf("%s %s: %w", op, iface, also{err, ErrNoDevice})
	}
	return fmt.Errorf("%s %s: %w", op, iface, err)
}

func cstr(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

func (sockIoctl) DrvInfo(iface string) (DrvInfo, error) {
	var d DrvInfo
	err := withSock("ETHTOOL_GDRVINFO", iface, func(fd int) error {
		v, err := unix.IoctlGetEthtoolDrvinfo(fd, iface)
		if err == nil {
			d = DrvInfo{Driver: cstr(v.Driver[:]), Version: cstr(v.Version[:]), Firmware: cstr(v.Fw_version[:]), BusInfo: cstr(v.Bus_info[:])}
		}
		return err
	})
	return d, err
}

// HWTstamp and SetHWTstamp go through internal/tstamp, rig's one door to
// timestamping.
func (sockIoctl) HWTstamp(iface string) (HWTstamp, error) {
	c, err := tstamp.HostHWIoctl().GetHWTstamp(iface)
	if err != nil {
		return HWTstamp{}, ioctlErr("SIOCGHWTSTAMP", iface, err)
	}
	return HWTstamp{TxType: int32(c.TxType), RxFilter: int32(c.RxFilter)}, nil
}

func (sockIoctl) SetHWTstamp(iface string, cfg HWTstamp) error {
	c := tstamp.HWTstampConfig{TxType: tstamp.TxType(cfg.TxType), RxFilter: tstamp.RxFilter(cfg.RxFilter)}
	if err := tstamp.HostHWIoctl().SetHWTstamp(iface, &c); err != nil {
		return ioctlErr("SIOCSHWTSTAMP", iface, err)
	}
	return nil
}

// also is err that additionally matches a sentinel, with err's text only.
type also struct{ err, sentinel error }

func (a also) Error() string   { return a.err.Error() }
func (a also) Unwrap() []error { return []error{a.err, a.sentinel} }
