package tstamp

import "golang.org/x/sys/unix"

// HostDevice returns the kernel's Device for the calling thread's network
// namespace. Each call opens and closes one short-lived socket.
func HostDevice() Device { return hostDevice{} }

type hostDevice struct{}

func withSocket(f func(fd int) error) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return f(fd)
}

func (hostDevice) TSInfo(ifname string) (c Caps, err error) {
	err = withSocket(func(fd int) error {
		ti, err := unix.IoctlGetEthtoolTsInfo(fd, ifname)
		if err == nil {
			c = capsOf(ifname, ti)
		}
		return err
	})
	return c, err
}

func (hostDevice) GetHWTstamp(ifname string) (c HWTstampConfig, err error) {
	err = withSocket(func(fd int) error {
		v, err := unix.IoctlGetHwTstamp(fd, ifname)
		if err == nil {
			c = HWTstampConfig{Flags: v.Flags, TxType: TxType(v.Tx_type), RxFilter: RxFilter(v.Rx_filter)}
		}
		return err
	})
	return c, err
}

func (hostDevice) SetHWTstamp(ifname string, cfg *HWTstampConfig) error {
	return withSocket(func(fd int) error {
		v := unix.HwTstampConfig{Flags: cfg.Flags, Tx_type: int32(cfg.TxType), Rx_filter: int32(cfg.RxFilter)}
		if err := unix.IoctlSetHwTstamp(fd, ifname, &v); err != nil {
			return err
		}
		cfg.Flags, cfg.TxType, cfg.RxFilter = v.Flags, TxType(v.Tx_type), RxFilter(v.Rx_filter)
		return nil
	})
}

func capsOf(ifname string, ti *unix.EthtoolTsInfo) Caps {
	return Caps{
		Ifname:    ifname,
		SOF:       Flags(ti.So_timestamping),
		PHCIndex:  int(ti.Phc_index),
		TxTypes:   ti.Tx_types,
		RxFilters: ti.Rx_filters,
	}
}

func errnoName(e unix.Errno) string { return unix.ErrnoName(e) }
