//go:build linux

package facts

import (
	"context"
	"fmt"
	"sync"

	"github.com/rig-project/rig/internal/ethtoolnl"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/tstamp"
)

// NIC is how the readers reach a host's NICs: its root and the kernel's
// seams, each the host's when nil (tests pass fakes and driver profiles).
type NIC struct {
	FS hostfs.FS
	// Ethtool is opened on first use by DialEthtool (nil: ethtoolnl.Dial).
	DialEthtool func() (ethtoolnl.Client, error)
	// Link reads link state and mode (nil: HostLink).
	Link LinkReader
	// Ioctl does ETHTOOL_GDRVINFO (nil: HostIoctl).
	Ioctl DeviceIoctl
	// TS is the timestamping surface of the devices (nil:
	// tstamp.HostDevice); tests use driver profiles.
	TS tstamp.Device
	// Stats reads every `ethtool -S` counter (nil: ReadStats).
	Stats func(iface string) (map[string]uint64, error)

	once    sync.Once
	client  ethtoolnl.Client
	dialErr error
}

// Ethtool is the ethtool netlink client, dialled on first use.
func (e *NIC) Ethtool() (ethtoolnl.Client, error) {
	e.once.Do(func() {
		dial := e.DialEthtool
		if dial == nil {
			dial = func() (ethtoolnl.Client, error) { return ethtoolnl.Dial() }
		}
		// A failed dial returns a typed nil inside the interface: keep
		// client nil so Close does not call through it.
		if c, err := dial(); err != nil {
			e.dialErr = err
		} else {
			e.client = c
		}
	})
	return e.client, e.dialErr
}

func (e *NIC) ioctl() DeviceIoctl {
	if e.Ioctl != nil {
		return e.Ioctl
	}
	return HostIoctl()
}

// TSDevice is the timestamping surface: TS, or the host's.
func (e *NIC) TSDevice() tstamp.Device {
	if e.TS != nil {
		return e.TS
	}
	return tstamp.HostDevice()
}

// Close closes the ethtool client if one was opened.
func (e *NIC) Close() error {
	if e.client != nil {
		return e.client.Close()
	}
	return nil
}

// Timestamping reads what rig needs to decide about iface's
// timestamping, without changing anything: its capabilities and current
// config (through TS), the daemons that own its config (ptp4l,
// chronyd; TimestampOwner) and whether it carries the default
// route. It needs no privilege. A port the kernel does not use (ExaNIC
// bypass_only) is an error wrapping errors.ErrUnsupported.
func (env *NIC) Timestamping(iface string) (tstamp.NICState, error) {
	st, err := tstamp.ReadNIC(env.TSDevice(), iface)
	if err != nil {
		return st, err
	}
	if f, err := env.PrivFlags(iface); err != nil {
		return st, err
	} else if f[PrivBypassOnly] {
		return st, bypassOnly(iface)
	} else if f[PrivCQECompress] {
		st.Notes = append(st.Notes, cqeCompressNote(iface))
	}
	if st.Owner, err = TimestampOwner(env.FS, iface); err != nil {
		return st, err
	}
	mg, err := ReadMgmt(env.FS)
	if err != nil {
		return st, fmt.Errorf("finding the management interface: %w", err)
	}
	st.Mgmt = mg.Why[iface] != ""
	return st, nil
}

// Info is everything `rig nicctl show` reports about one interface.
type Info struct {
	Device
	OperState string `json:"operstate"`
	SpeedMbps int64  `json:"speed_mbps,omitempty"`
	MTU       int64  `json:"mtu"`
	// Mgmt says why rig treats it as a management interface ("": it
	// does not; ReadMgmt); DefaultRoute is true when it has a default
	// route, whatever its metric.
	Mgmt         string              `json:"management,omitempty"`
	DefaultRoute bool                `json:"carries_default_route"`
	Link         *Link               `json:"link,omitempty"`
	DrvInfo      *DrvInfo            `json:"drvinfo,omitempty"`
	Channels     *ethtoolnl.Channels `json:"channels,omitempty"`
	Rings        *ethtoolnl.Rings    `json:"rings,omitempty"`
	Coalesce     *ethtoolnl.Coalesce `json:"coalesce,omitempty"`
	// NAPI is the device's napi_defer_hard_irqs and gro_flush_timeout
	// (sysfs), NAPIs its NAPI instances as netdev netlink reports them.
	NAPI  *NAPIKnobs `json:"napi,omitempty"`
	NAPIs []NAPI     `json:"napi_instances,omitempty"`
	// Timestamping is the capability report, the current config and its
	// owner (NIC.Timestamping).
	Timestamping *tstamp.NICState  `json:"timestamping,omitempty"`
	Errors       map[string]string `json:"errors,omitempty"` // per section: why it is missing
	CPUs         []int             `json:"irq_count_cpus"`   // CPU of each IRQ count column
	IRQs         []IRQ             `json:"irqs"`
	IRQBalance   *IRQBalanceState  `json:"irqbalance,omitempty"`
	// ENA is the Amazon ENA driver's own facts (driver ena only).
	ENA *ENA `json:"ena,omitempty"`
}

// Show reads everything about iface. Missing parts (a driver without
// coalescing, a virtual device without IRQs) are reported in Info.Errors,
// not as an error; an unknown interface is an error matching ErrNoDevice.
func Show(ctx context.Context, env *NIC, iface string) (*Info, error) {
	d, err := FindDevice(env.FS, iface)
	if err != nil {
		return nil, err
	}
	in := &Info{Device: d, Errors: map[string]string{}}
	base := "/sys/class/net/" + iface + "/"
	in.OperState, _ = env.FS.ReadString(base + "operstate")
	in.SpeedMbps, _ = env.FS.ReadInt(base + "speed") // EINVAL when the link is down
	in.MTU, _ = env.FS.ReadInt(base + "mtu")
	if mg, err := ReadMgmt(env.FS); err == nil {
		in.Mgmt, in.DefaultRoute = mg.Why[iface], mg.HasDefault(iface)
	}
	linkRead := env.Link
	if linkRead == nil {
		linkRead = HostLink
	}
	if v, err := linkRead(iface); err != nil {
		in.Errors["link"] = err.Error()
	} else {
		in.Link = &v
	}
	if v, err := env.ioctl().DrvInfo(iface); err != nil {
		in.Errors["drvinfo"] = err.Error()
	} else {
		in.DrvInfo = &v
	}
	if v, err := env.Timestamping(iface); err != nil {
		in.Errors["timestamping"] = err.Error()
	} else {
		in.Timestamping = &v
	}
	if c, err := env.Ethtool(); err != nil {
		in.Errors["ethtool"] = err.Error()
	} else {
		if v, err := c.Channels(ctx, iface); err != nil {
			in.Errors["channels"] = err.Error()
		} else {
			in.Channels = &v
		}
		if v, err := c.Rings(ctx, iface); err != nil {
			in.Errors["rings"] = err.Error()
		} else {
			in.Rings = &v
		}
		if v, err := c.Coalesce(ctx, iface); err != nil {
			in.Errors["coalesce"] = err.Error()
		} else {
			in.Coalesce = &v
		}
	}
	if v, err := ReadNAPIKnobs(env.FS, iface); err != nil {
		in.Errors["napi"] = "cannot tell: " + err.Error()
	} else if v != (NAPIKnobs{}) {
		in.NAPI = &v
	}
	if env.FS.IsReal() {
		// The kernel's instances belong to the real host's devices only.
		if v, err := NAPIs(iface); err != nil {
			in.Errors["napi_instances"] = "cannot tell: " + err.Error()
		} else {
			in.NAPIs = v
		}
	}
	ints, err := hostinfo.ReadInterrupts(env.FS)
	if err != nil {
		return nil, err
	}
	in.CPUs = ints.CPUs
	if in.IRQs, err = DiscoverIRQs(env.FS, d, ints); err != nil {
		return nil, err
	}
	if d.Driver == "ena" {
		in.ENA = ReadENA(ctx, env, d)
	}
	if st, err := ReadIRQBalance(env.FS); err != nil {
		in.Errors["irqbalance"] = err.Error()
	} else {
		in.IRQBalance = &st
	}
	if len(in.Errors) == 0 {
		in.Errors = nil
	}
	return in, nil
}
