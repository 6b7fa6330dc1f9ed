//go:build linux

package facts

import (
	"bytes"
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// DrvInfo is ETHTOOL_GDRVINFO (ethtool -i).
type DrvInfo struct {
	Driver   string `json:"driver"`
	Version  string `json:"version"`
	Firmware string `json:"firmware"`
	BusInfo  string `json:"bus_info"`
}

// DeviceIoctl is the ioctl surface nicctl uses besides timestamping
// (which goes through tstamp.Device): ETHTOOL_GDRVINFO. The real one works
// in the caller's netns.
type DeviceIoctl interface {
	DrvInfo(iface string) (DrvInfo, error)
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

// also is err that additionally matches a sentinel, with err's text only.
type also struct{ err, sentinel error }

func (a also) Error() string   { return a.err.Error() }
func (a also) Unwrap() []error { return []error{a.err, a.sentinel} }
