package tstamp

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

var errNotExist = os.ErrNotExist

// Caps is an interface's timestamping capability report (ETHTOOL_GET_TS_INFO).
type Caps struct {
	Ifname string `json:"ifname"`
	// SOF is the so_timestamping bitmap the driver advertises. Do not decide
	// hardware support from it alone: ENA reports RX_HARDWARE without
	// RAW_HARDWARE when it cannot stamp TX (amzn-drivers #371).
	SOF Flags `json:"so_timestamping"`
	// PHCIndex is N of /dev/ptpN, or -1 when the device has no PHC.
	PHCIndex int `json:"phc_index"`
	// TxTypes is a bitmap of 1<<TxType (HWTSTAMP_TX_*).
	TxTypes uint32 `json:"tx_types"`
	// RxFilters is a bitmap of 1<<RxFilter (HWTSTAMP_FILTER_*).
	RxFilters uint32 `json:"rx_filters"`
}

// HardwareRX reports whether the NIC can stamp at least some received
// packets in hardware (any rx filter besides NONE). See RxAll for whether
// ordinary UDP probes qualify.
func (c Caps) HardwareRX() bool { return c.RxFilters&^(1<<FilterNone) != 0 }

// RxAll reports whether the NIC can stamp every received packet
// (HWTSTAMP_FILTER_ALL); without it only PTP-shaped probes get HW RX stamps.
func (c Caps) RxAll() bool { return c.RxFilters&(1<<FilterAll) != 0 }

// HardwareTX reports whether the NIC can stamp transmitted packets
// (HWTSTAMP_TX_ON in tx_types).
func (c Caps) HardwareTX() bool { return c.TxTypes&(1<<TxOn) != 0 }

// HasPHC reports whether the device names a PTP hardware clock.
func (c Caps) HasPHC() bool { return c.PHCIndex >= 0 }

// String is the human capability report, e.g.
// "veth0: so_timestamping=TX_SOFTWARE|RX_SOFTWARE|SOFTWARE (0x1a) phc=none tx_types=none rx_filters=none".
func (c Caps) String() string {
	phc := "none"
	if c.PHCIndex >= 0 {
		phc = "/dev/ptp" + strconv.Itoa(c.PHCIndex)
	}
	return fmt.Sprintf("%s: so_timestamping=%s (%#x) phc=%s tx_types=%s rx_filters=%s",
		c.Ifname, c.SOF, uint32(c.SOF), phc, c.TxTypesString(), c.RxFiltersString())
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

// TxTypesString lists the tx_types bitmap, e.g. "OFF|ON".
func (c Caps) TxTypesString() string { return bitNames(c.TxTypes, txTypeNames[:]) }

// RxFiltersString lists the rx_filters bitmap, e.g. "NONE|ALL".
func (c Caps) RxFiltersString() string { return bitNames(c.RxFilters, rxFilterNames[:]) }

// TxType is a HWTSTAMP_TX_* value.
type TxType int32

const (
	TxOff         TxType = unix.HWTSTAMP_TX_OFF
	TxOn          TxType = unix.HWTSTAMP_TX_ON
	TxOneStepSync TxType = unix.HWTSTAMP_TX_ONESTEP_SYNC
	TxOneStepP2P  TxType = unix.HWTSTAMP_TX_ONESTEP_P2P
)

var txTypeNames = [...]string{"OFF", "ON", "ONESTEP_SYNC", "ONESTEP_P2P"}

func (t TxType) String() string {
	if t >= 0 && int(t) < len(txTypeNames) {
		return txTypeNames[t]
	}
	return "TxType(" + strconv.Itoa(int(t)) + ")"
}

// RxFilter is a HWTSTAMP_FILTER_* value.
type RxFilter int32

const (
	FilterNone         RxFilter = unix.HWTSTAMP_FILTER_NONE
	FilterAll          RxFilter = unix.HWTSTAMP_FILTER_ALL
	FilterSome         RxFilter = unix.HWTSTAMP_FILTER_SOME // only ever returned: "at least what you asked"
	FilterPTPv1L4Event RxFilter = unix.HWTSTAMP_FILTER_PTP_V1_L4_EVENT
	FilterPTPv2L4Event RxFilter = unix.HWTSTAMP_FILTER_PTP_V2_L4_EVENT
	FilterPTPv2Event   RxFilter = unix.HWTSTAMP_FILTER_PTP_V2_EVENT
	FilterNTPAll       RxFilter = unix.HWTSTAMP_FILTER_NTP_ALL
)

var rxFilterNames = [...]string{
	"NONE", "ALL", "SOME", "PTP_V1_L4_EVENT", "PTP_V1_L4_SYNC", "PTP_V1_L4_DELAY_REQ",
	"PTP_V2_L4_EVENT", "PTP_V2_L4_SYNC", "PTP_V2_L4_DELAY_REQ", "PTP_V2_L2_EVENT",
	"PTP_V2_L2_SYNC", "PTP_V2_L2_DELAY_REQ", "PTP_V2_EVENT", "PTP_V2_SYNC",
	"PTP_V2_DELAY_REQ", "NTP_ALL",
}

func (f RxFilter) String() string {
	if f >= 0 && int(f) < len(rxFilterNames) {
		return rxFilterNames[f]
	}
	return "RxFilter(" + strconv.Itoa(int(f)) + ")"
}
