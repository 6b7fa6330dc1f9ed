package nicfake

import (
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rig-project/rig/internal/tstamp"
)

// Profile is one driver's hardware-timestamping behaviour. Each profile
// names the driver functions it plays and the releases whose behaviour it
// is (Functions, Versions: where the behaviour changed, each behaviour is
// its own profile); its constructor's comment says what was read and
// marks what the source does not settle (numbers chosen for the model).
type Profile struct {
	Name   string // short name used by tests: "mlx5", "igb-82576"
	Driver string // ethtool -i driver
	// Functions are the driver functions the profile plays; Versions the
	// kernel (or out-of-tree driver) releases it holds for.
	Functions []string
	Versions  string
	// Caps is what ETHTOOL_GET_TS_INFO reports (Ifname filled per NIC).
	Caps tstamp.Caps
	// Start is the config after the driver probed the device.
	Start tstamp.HWTstampConfig
	// GetErr is SIOCGHWTSTAMP's error for a driver without it, 0 otherwise.
	GetErr unix.Errno
	// Set is the driver's SIOCSHWTSTAMP handler, called after the core's
	// validation with the current config and the request; nil for a
	// device without one (EOPNOTSUPP).
	Set func(cur, req tstamp.HWTstampConfig) Result
	// TxAlways: every packet that asks is TX-stamped whatever tx_type says
	// (liquidio); OneStep: the one-step tx_types stamp other packets as ON.
	TxAlways, OneStep bool
	// TxSlots > 0 is how many TX stamps can be outstanding; a packet that
	// asks while all are held is sent unstamped and counted in
	// SkipCounter. TxHold is how long a slot stays held after the packet's
	// software stamp (a model figure: see each profile).
	TxSlots     int
	TxHold      time.Duration
	SkipCounter string
	// Counters are the device-wide `ethtool -S` names, QueueCounters the
	// per-queue ones (a %d for the queue), for Queues queues.
	Counters      []string
	QueueCounters []string
	Queues        int
	// FirstIRQ > 0 gives the queues IRQs FirstIRQ, FirstIRQ+1, … in the
	// fake host root.
	FirstIRQ int
	// LinkDown is how long a reset (a Set result with Bounce) keeps the
	// carrier off after the ioctl returns: 0 is ENA's off and on inside
	// the ioctl. OperLag is how late operstate follows a carrier-off
	// (linkwatch). See NIC.bounceLocked.
	LinkDown, OperLag time.Duration
	PHC               *PHCProfile
	// Notes are limits worth knowing that the model does not play.
	Notes []string
	// PrivFlags are the driver's private flags (`ethtool
	// --show-priv-flags`), all off at probe (NIC.SetPrivFlag).
	PrivFlags []string
	// Reopen reports whether a granted SIOCSHWTSTAMP from cur to next
	// reopened the channels (carrier off and on inside the ioctl, as a
	// Result with Bounce), given the private flags in force.
	Reopen func(cur, next tstamp.HWTstampConfig, flag func(string) bool) bool
}

// Capability bits the profiles use. Since 6.12 the core adds
// SOF_TIMESTAMPING_RX_SOFTWARE|SOFTWARE itself (__ethtool_get_ts_info);
// the profiles report what a 6.12+ kernel shows.
const (
	sofSW   = tstamp.FlagTxSoftware | tstamp.FlagRxSoftware | tstamp.FlagSoftware
	sofHW   = tstamp.FlagTxHardware | tstamp.FlagRxHardware | tstamp.FlagRawHardware
	txOffOn = 1<<tstamp.TxOff | 1<<tstamp.TxOn
	rxAll   = 1<<tstamp.FilterNone | 1<<tstamp.FilterAll
)

var off = tstamp.HWTstampConfig{TxType: tstamp.TxOff, RxFilter: tstamp.FilterNone}

// ok is a successful handler result that stores and grants c.
func ok(c tstamp.HWTstampConfig) Result { return Result{Stored: c, Granted: c} }

// fail is a refused request: nothing changes.
func fail(cur tstamp.HWTstampConfig, e unix.Errno) Result { return Result{Stored: cur, Err: e} }

// txOnOff accepts OFF and ON only (every profile here; one-step modes get
// ERANGE).
func txOnOff(t tstamp.TxType) bool { return t == tstamp.TxOff || t == tstamp.TxOn }

// ExaNIC is Cisco's exanic (exanic-software 2.7.6, March 2026,
// modules/exanic/exanic-netdev.c): exanic_ioctl_set_hw_timestamp rejects
// any flags with EINVAL ("reserved for future extensions"; the core lets
// HWTSTAMP_FLAG_BONDED_PHC_INDEX through, the driver does not), accepts
// tx_type OFF/ON (ERANGE otherwise) and takes every rx_filter but NONE as
// ALL; exanic_ioctl_get_hw_timestamp reports two booleans back.
// exanic_netdev_get_ts_info: tx OFF|ON, rx NONE|ALL, a PHC. TX stamps are
// taken synchronously in exanic_xmit (the transmit counter is polled, then
// REG_PORT_TX_LAST_TIME read): no slot limit; a missed stamp is only
// logged ("tx timestamping failed"), never counted. The driver has no
// ethtool statistics. The PHC (exanic-ptp.c) has gettime64 but neither
// gettimex64 nor getcrosststamp: only basic PTP_SYS_OFFSET works. The
// config at probe is OFF/NONE: exanic_netdev_alloc takes its priv from
// alloc_etherdev, which zeroes it, and never sets the two booleans.
func ExaNIC() *Profile {
	return &Profile{
		Name: "exanic", Driver: "exanic",
		Versions: "exanic-software 2.7.6", Functions: []string{"exanic_ioctl_set_hw_timestamp", "exanic_ioctl_get_hw_timestamp", "exanic_netdev_get_ts_info", "exanic_netdev_xmit"},
		Caps:   tstamp.Caps{SOF: sofSW | sofHW, PHCIndex: 2, TxTypes: txOffOn, RxFilters: rxAll},
		Start:  off,
		Set:    allSet(true),
		Queues: 1, FirstIRQ: 60,
		PHC:   &PHCProfile{},
		Notes: []string{"rig uses the kernel's socket path; the ExaNIC bypass APIs (libexanic, exasock) are not used and their stamps are not read"},
		// exanic_priv_flags_str; bypass_only (exanic_netdev_get_priv_flags)
		// takes the port away from the kernel: nicctl refuses it.
		PrivFlags: []string{"bypass_only", "mirror_rx", "mirror_tx", "bridging"},
	}
}

// MLX5 is NVIDIA ConnectX-5/6/7 (drivers/net/ethernet/mellanox/mlx5/core:
// en_main.c mlx5e_hwstamp_set as of the 5.13 fix to "Allow coexistence of
// CQE compression and HW TS PTP" — unchanged in substance through the
// 2025 ndo_hwtstamp conversion —, en_ethtool.c mlx5e_ethtool_get_ts_info,
// en_rx.c mlx5e_decompress_cqe, en_stats.c): tx_type OFF/ON only
// (one-step: ERANGE); every rx_filter but NONE — ALL, SOME, every PTP
// filter, NTP_ALL — is granted and stored as ALL; EOPNOTSUPP without a
// PHC. ts_info: tx OFF|ON, rx NONE|ALL. TX stamps come from each packet's
// CQE: no slot limit. The port-timestamping SQ (priv flag tx_port_ts)
// adds ptp_cqN_{err_cqe,abort,abort_abs_diff_ns,late_cqe,lost_cqe}
// (en_stats.c ptp_cq_stats_desc). With CQE compression on, a decompressed
// CQE keeps the title CQE's timestamp (en_rx.c mlx5e_decompress_cqe
// copies byte_cnt and checksum only); mlx5e_hwstamp_set turns compression
// off for RX stamping unless the profile steers PTP to its own RQ (ptp_rx),
// in which case non-PTP packets stay on compressed RQs. The model stamps
// every packet exactly; the compression case is a note. Unverified: the
// PHC's cross-timestamping (ConnectX-7 with PCIe PTM) — modelled without.
// This is the driver from 6.16 on: the May 2025 patch "net/mlx5: support
// software TX timestamp" added skb_tx_timestamp to the TX path
// (mlx5e_tx_skb_update_ts_flags) and TX_SOFTWARE to ts_info. MLX5Pre616 is
// the driver before it.
// The private flags are en_ethtool.c's mlx5e_priv_flags. With
// rx_cqe_compress on (the admin default on a slow PCIe link,
// mlx5e_build_nic_params, or set by the user), turning RX stamping on or
// off changes params.ptp_rx (mlx5e_hwstamp_config_ptp_rx, since 5.13),
// which mlx5e_safe_switch_params applies by opening new channels:
// mlx5e_switch_priv_channels turns the carrier off and back on inside the
// ioctl. The PTP RQ then takes PTP packets only; rig's UDP stays on the
// compressed RQs.
func MLX5() *Profile {
	return &Profile{
		Name: "mlx5", Driver: "mlx5_core",
		Versions: "Linux 6.16 and later", Functions: []string{"mlx5e_hwstamp_set", "mlx5e_ethtool_get_ts_info", "mlx5e_tx_skb_update_ts_flags", "mlx5e_decompress_cqe"},
		Caps:  tstamp.Caps{SOF: sofSW | sofHW, PHCIndex: 1, TxTypes: txOffOn, RxFilters: rxAll},
		Start: off,
		Set:   allSet(false),
		Counters: []string{"rx_packets", "tx_packets", "rx_out_of_buffer", "rx_buff_alloc_err", "tx_queue_dropped",
			"ptp_cq0_err_cqe", "ptp_cq0_abort", "ptp_cq0_abort_abs_diff_ns", "ptp_cq0_late_cqe", "ptp_cq0_lost_cqe"},
		QueueCounters: []string{"rx%d_packets", "rx%d_xdp_drop", "tx%d_packets", "tx%d_dropped"},
		Queues:        2, FirstIRQ: 70,
		PHC: &PHCProfile{Extended: true},
		Notes: []string{"with RX CQE compression left on (ptp_rx profiles), non-PTP packets can carry their compression block's first stamp: `ethtool --set-priv-flags IF rx_cqe_compress off`",
			"ptp_cq* counters exist only with the port-timestamping SQ (priv flag tx_port_ts)"},
		PrivFlags: []string{"rx_cqe_moder", "tx_cqe_moder", "rx_cqe_compress", "rx_striding_rq", "rx_no_csum_complete", "xdp_tx_mpwqe", "skb_tx_mpwqe", "tx_port_ts"},
		Reopen: func(cur, next tstamp.HWTstampConfig, flag func(string) bool) bool {
			return flag("rx_cqe_compress") && (cur.RxFilter == tstamp.FilterNone) != (next.RxFilter == tstamp.FilterNone)
		},
	}
}

// MLX5Pre616 is mlx5 before 6.16: the same SIOCSHWTSTAMP handler, CQE
// stamps and counters, but the TX path (mlx5e_txwqe_complete,
// mlx5e_sq_xmit_mpwqe through mlx5e_tx_skb_update_hwts_flags) never calls
// skb_tx_timestamp, so a socket gets no software SND stamp, and ts_info
// has no TX_SOFTWARE: 6.12–6.15 report the hardware bits plus the core's
// RX_SOFTWARE|SOFTWARE, which is what this profile shows. Unsettled:
// earlier kernels' ts_info — the 4.x copies read start from
// ethtool_op_get_ts_info and so list TX_SOFTWARE although no stamp comes;
// a later 5.x/6.x copy lists the hardware bits only; which release
// changed it was not found.
func MLX5Pre616() *Profile {
	p := MLX5()
	p.Name = "mlx5-pre6.16"
	p.Functions = []string{"mlx5e_hwstamp_set", "mlx5e_ethtool_get_ts_info", "mlx5e_tx_skb_update_hwts_flags", "mlx5e_decompress_cqe"}
	p.Versions = "Linux before 6.16 (ts_info as 6.12–6.15 show it)"
	p.Caps.SOF &^= tstamp.FlagTxSoftware
	return p
}

// ICE is Intel E810 (drivers/net/ethernet/intel/ice/ice_ptp.c
// ice_ptp_set_timestamp_mode / ice_ptp_get_ts_config as of the 6.x patches
// that store the config per PF; ice_ptp.h INDEX_PER_PORT; ice_ethtool.c
// ice_gstrings_pf_stats and ice_get_ts_info): tx_type
// OFF/ON (ERANGE otherwise); every PTP filter, NTP_ALL and ALL are stored
// as ALL, NONE as NONE. ts_info (ice_ethtool.c): tx OFF|ON, rx NONE|ALL.
// TX stamps go through a tracker of INDEX_PER_PORT = 64 slots per port
// on E810 (16 per port on E82x: INDEX_PER_PORT_E82X); a packet finding
// none free is sent unstamped and counted in tx_hwtstamp_skipped;
// tx_hwtstamp_{timeouts,flushed,discarded} and late_cached_phc_updates
// are the other PTP counters (ice_gstrings_pf_stats). The slot hold time
// (100 µs: interrupt, then a PHY register read over the sideband queue)
// is a model figure, not read from the source.
func ICE() *Profile {
	return &Profile{
		Name: "ice", Driver: "ice",
		Versions: "Linux 6.x", Functions: []string{"ice_ptp_set_timestamp_mode", "ice_ptp_get_ts_config", "ice_get_ts_info", "ice_ptp_request_ts"},
		Caps:    tstamp.Caps{SOF: sofSW | sofHW, PHCIndex: 3, TxTypes: txOffOn, RxFilters: rxAll},
		Start:   off,
		Set:     allSet(false, tstamp.FilterSome), // SOME: not in the handler's switch
		TxSlots: 64, TxHold: 100 * time.Microsecond, SkipCounter: "tx_hwtstamp_skipped",
		Counters: []string{"rx_dropped", "tx_dropped", "rx_missed_errors",
			"tx_hwtstamp_skipped", "tx_hwtstamp_timeouts", "tx_hwtstamp_flushed", "tx_hwtstamp_discarded", "late_cached_phc_updates"},
		QueueCounters: []string{"rx_queue_%d_packets", "tx_queue_%d_packets"},
		Queues:        2, FirstIRQ: 80,
		PHC: &PHCProfile{Extended: true},
	}
}

// IGB82576 is Intel 82576 on igb (igb_ptp.c igb_ptp_set_timestamp_mode
// and igb_ptp_tx_work, read in a 4.x copy plus the later patches that
// touch them — "fallthrough", the removal of the driver's own flags check
// (the core checks flags since), the July 2025 ndo_hwtstamp_get/set
// conversion; igb_ethtool.c igb_get_ts_info and igb_gstrings_stats;
// igb_main.c igb_xmit_frame_ring): tx_type OFF/ON
// (ERANGE otherwise); PTP_V1_L4_SYNC and _DELAY_REQ are kept, every
// PTP_V2 filter is stored as PTP_V2_EVENT, and ALL, PTP_V1_L4_EVENT,
// NTP_ALL and SOME fail with ERANGE ("82576 cannot timestamp all
// packets") leaving the config as it was. ts_info: tx OFF|ON, rx
// NONE|V1_L4_SYNC|V1_L4_DELAY_REQ|V2_EVENT (igb_get_ts_info). One TX
// stamp at a time
// (__IGB_PTP_TX_IN_PROGRESS): a packet asking while it is held is sent
// unstamped and counted in tx_hwtstamp_skipped; tx_hwtstamp_timeouts
// (after IGB_PTP_TX_TIMEOUT, 15 s) and rx_hwtstamp_cleared (82576 RX
// register latched) are the other counters. The slot is freed by
// igb_ptp_tx_work once the stamp is read: the 20 µs hold is a model
// figure (wire time plus a work item), not read from the source.
func IGB82576() *Profile {
	return &Profile{
		Name: "igb-82576", Driver: "igb",
		Versions: "Linux 3.x–6.18", Functions: []string{"igb_ptp_set_timestamp_mode", "igb_get_ts_info", "igb_xmit_frame_ring", "igb_ptp_tx_work"},
		Caps: tstamp.Caps{SOF: sofSW | sofHW, PHCIndex: 4, TxTypes: txOffOn,
			RxFilters: 1<<tstamp.FilterNone | 1<<unix.HWTSTAMP_FILTER_PTP_V1_L4_SYNC | 1<<unix.HWTSTAMP_FILTER_PTP_V1_L4_DELAY_REQ | 1<<tstamp.FilterPTPv2Event},
		Start:   off,
		Set:     onOffSet(false, ptpOnly),
		TxSlots: 1, TxHold: 20 * time.Microsecond, SkipCounter: "tx_hwtstamp_skipped",
		Counters:      []string{"rx_missed_errors", "rx_fifo_errors", "rx_no_buffer_count", "tx_hwtstamp_timeouts", "tx_hwtstamp_skipped", "rx_hwtstamp_cleared"},
		QueueCounters: []string{"rx_queue_%d_drops", "rx_queue_%d_alloc_failed"},
		Queues:        2, FirstIRQ: 90,
	}
}

// IXGBE82599 is Intel 82599 on ixgbe (ixgbe_ptp.c
// ixgbe_ptp_set_timestamp_mode read in 4.x and 5.x copies and the 2025
// ndo conversion patch, ixgbe_main.c ixgbe_xmit_frame_ring with the
// tx_type check, ixgbe_ethtool.c ixgbe_gstrings_stats): as igb's 82576 — PTP_V1_L4_SYNC/_DELAY_REQ kept, every
// PTP_V2 filter stored as PTP_V2_EVENT, ALL, PTP_V1_L4_EVENT and NTP_ALL
// ERANGE ("hardware does not support timestamping all packets"; only X550
// and later take ALL) — one TX stamp at a time (__IXGBE_PTP_TX_IN_PROGRESS,
// tx_hwtstamp_skipped), tx_hwtstamp_timeouts, rx_hwtstamp_cleared. The
// 20 µs slot hold is a model figure. ixgbe_get_ts_info lists exactly NONE,
// PTP_V1_L4_SYNC, PTP_V1_L4_DELAY_REQ and PTP_V2_EVENT for 82599 and X540
// (the 3.x copies listed every PTP_V2 filter). A stamp not read within
// IXGBE_PTP_TX_TIMEOUT (HZ, 1 s, since "ixgbe: reduce PTP Tx timestamp
// timeout to 1 second", 2019; 15 s before) counts in tx_hwtstamp_timeouts.
// Not modelled: on ERANGE the driver also clears its RX-stamp flags while
// its saved config keeps the old filter (rig never sends ALL here).
func IXGBE82599() *Profile {
	p := IGB82576()
	p.Name, p.Driver = "ixgbe-82599", "ixgbe"
	p.Functions = []string{"ixgbe_ptp_set_timestamp_mode", "ixgbe_get_ts_info", "ixgbe_xmit_frame_ring", "ixgbe_ptp_tx_hwtstamp_work"}
	p.Versions = "Linux 4.x–6.18"
	p.Caps.PHCIndex = 5
	p.Counters = []string{"rx_missed_errors", "rx_no_dma_resources", "tx_hwtstamp_timeouts", "tx_hwtstamp_skipped", "rx_hwtstamp_cleared"}
	p.QueueCounters = []string{"rx_queue_%d_packets", "tx_queue_%d_packets"}
	p.FirstIRQ = 100
	return p
}

// IGBI210 is igb on 82580, I350, I354, I210 and I211
// (igb_ptp_set_timestamp_mode, igb_get_ts_info, igb_ptp_tx_work; the same
// copies as IGB82576): for mac types from 82580 on, any rx_filter but NONE
// that the switch accepts — every PTP filter, PTP_V1_L4_EVENT, ALL — is
// stored as ALL ("Per-packet timestamping only works if all packets are
// timestamped"); SOME and NTP_ALL fall to the default, ERANGE. ts_info: tx
// OFF|ON, rx NONE|ALL. So ptp4l on such a port leaves TX ON + ALL, which
// covers rig's need. TX as on 82576: one stamp at a time
// (__IGB_PTP_TX_IN_PROGRESS, tx_hwtstamp_skipped), read by igb_ptp_tx_work
// after the time-sync interrupt; IGB_PTP_TX_TIMEOUT 15 s. The 20 µs hold
// is a model figure.
func IGBI210() *Profile {
	p := IGB82576()
	p.Name = "igb-i210"
	p.Versions = "Linux 3.x–6.18"
	p.Caps.RxFilters, p.Caps.PHCIndex = rxAll, 7
	p.Set = allSet(false, tstamp.FilterSome, tstamp.FilterNTPAll)
	p.FirstIRQ = 130
	return p
}

// IXGBEX550 is ixgbe on X550, X550EM and E610 (ixgbe_ptp_set_timestamp_mode
// and ixgbe_get_ts_info, read in a 4.x copy and the 2025 E610 patch): the
// filter switch takes PTP_V1_L4_EVENT, NTP_ALL and ALL as ALL, and the
// per-MAC switch after it then turns every other accepted filter (PTP
// V1/V2) into ALL too — "always timestamp all packets as long as any Rx
// filter was configured" — so any filter but NONE is stored as ALL, as on
// igb I210. SOME is ERANGE. ts_info: tx OFF|ON, rx NONE|ALL. One TX stamp
// at a time (__IXGBE_PTP_TX_IN_PROGRESS, tx_hwtstamp_skipped); one not
// read within IXGBE_PTP_TX_TIMEOUT (1 s since 2019) counts in
// tx_hwtstamp_timeouts. Unsettled: NTP_ALL — an older copy sends it to
// ERANGE; rig never asks for it.
func IXGBEX550() *Profile {
	p := IXGBE82599()
	p.Name = "ixgbe-x550"
	p.Versions = "Linux 4.x–6.18"
	p.Caps.RxFilters, p.Caps.PHCIndex = rxAll, 8
	p.Set = allSet(false, tstamp.FilterSome)
	p.FirstIRQ = 140
	return p
}

// I40E is Intel X710/XL710/X722 on i40e (i40e_ptp.c
// i40e_ptp_set_timestamp_mode, i40e_ptp_tx_hang; i40e_ethtool.c
// i40e_get_ts_info and the port.* stats; i40e_txrx.c i40e_tsyn), on a port
// whose firmware sets I40E_HW_PTP_L4_CAPABLE: tx_type OFF/ON (ERANGE
// otherwise); every PTP_V1_L4 filter is stored as PTP_V1_L4_EVENT, every
// PTP_V2 filter (L2 or L4) as PTP_V2_EVENT; ALL, NTP_ALL and SOME are
// ERANGE — PTP messages only. ts_info: tx OFF|ON, rx NONE, the PTP_V2 L2
// and L4 filters, PTP_V1_L4_SYNC and _DELAY_REQ. One TX stamp at a time:
// i40e_tsyn takes __I40E_PTP_TX_IN_PROGRESS or counts
// port.tx_hwtstamp_skipped; the stamp is read from the misc interrupt
// (i40e_ptp_tx_hwtstamp), and one not read within a second is dropped by
// i40e_ptp_tx_hang (port.tx_hwtstamp_timeouts). Only the PF that owns the
// port's timesync registers has a PHC. The 10 µs hold (an interrupt, two
// register reads) is a model figure.
func I40E() *Profile {
	return &Profile{
		Name: "i40e", Driver: "i40e",
		Versions: "Linux 4.x–6.18", Functions: []string{"i40e_ptp_set_timestamp_mode", "i40e_get_ts_info", "i40e_tsyn", "i40e_ptp_tx_hang"},
		Caps: tstamp.Caps{SOF: sofSW | sofHW, PHCIndex: 9, TxTypes: txOffOn,
			RxFilters: 1<<tstamp.FilterNone | 1<<unix.HWTSTAMP_FILTER_PTP_V1_L4_SYNC | 1<<unix.HWTSTAMP_FILTER_PTP_V1_L4_DELAY_REQ |
				1<<tstamp.FilterPTPv2Event | 1<<tstamp.FilterPTPv2L4Event | 1<<unix.HWTSTAMP_FILTER_PTP_V2_SYNC | 1<<unix.HWTSTAMP_FILTER_PTP_V2_L4_SYNC |
				1<<unix.HWTSTAMP_FILTER_PTP_V2_DELAY_REQ | 1<<unix.HWTSTAMP_FILTER_PTP_V2_L4_DELAY_REQ |
				1<<unix.HWTSTAMP_FILTER_PTP_V2_L2_EVENT | 1<<unix.HWTSTAMP_FILTER_PTP_V2_L2_SYNC | 1<<unix.HWTSTAMP_FILTER_PTP_V2_L2_DELAY_REQ},
		Start: off,
		Set: onOffSet(false, func(f tstamp.RxFilter) (tstamp.RxFilter, bool) {
			switch {
			case f == tstamp.FilterNone:
				return f, true
			case f >= tstamp.FilterPTPv1L4Event && f <= unix.HWTSTAMP_FILTER_PTP_V1_L4_DELAY_REQ:
				return tstamp.FilterPTPv1L4Event, true
			case f >= tstamp.FilterPTPv2L4Event && f <= unix.HWTSTAMP_FILTER_PTP_V2_DELAY_REQ:
				return tstamp.FilterPTPv2Event, true
			}
			return f, false // ALL, SOME, NTP_ALL
		}),
		TxSlots: 1, TxHold: 10 * time.Microsecond, SkipCounter: "port.tx_hwtstamp_skipped",
		Counters:      []string{"port.rx_dropped", "port.tx_hwtstamp_timeouts", "port.rx_hwtstamp_cleared", "port.tx_hwtstamp_skipped"},
		QueueCounters: []string{"tx-%d.tx_packets", "rx-%d.rx_packets"},
		Queues:        2, FirstIRQ: 150,
		PHC: &PHCProfile{Extended: true},
	}
}

// BNXT is Broadcom NetXtreme-E (P5 and later) on bnxt_en, from 6.8 — after
// "bnxt_en: Skip nic close/open when configuring tstamp filters" — on
// firmware that stamps every RX packet (BNXT_FW_CAP_RX_ALL_PKT_TS):
// bnxt_ptp.c bnxt_hwtstamp_set, bnxt_hwrm_ptp_cfg,
// bnxt_ptp_cfg_tstamp_filters; bnxt_ethtool.c bnxt_get_ts_info. tx_type
// OFF/ON (ERANGE otherwise); NONE and ALL as asked; the PTP_V2 EVENT,
// SYNC and DELAY_REQ families (any layer) stored as PTP_V2_EVENT,
// PTP_V2_SYNC, PTP_V2_DELAY_REQ; anything else ERANGE. ts_info lists ALL
// only with that firmware capability (without it, ALL is EOPNOTSUPP: not
// modelled). TX stamps: BNXT_MAX_TX_TS outstanding, 4 since 6.11 ("Increase
// the max total outstanding PTP TX packets to 4"), 1 before; a packet over
// the limit goes out unstamped. Unsettled: which `ethtool -S` counter, if
// any, counts it (the driver reports TX stamp losses through ethtool's
// timestamping statistics) — this model has none; the 20 µs hold is a
// model figure.
func BNXT() *Profile {
	return &Profile{
		Name: "bnxt", Driver: "bnxt_en",
		Versions: "Linux 6.11 and later", Functions: []string{"bnxt_hwtstamp_set", "bnxt_hwrm_ptp_cfg", "bnxt_ptp_cfg_tstamp_filters", "bnxt_get_ts_info"},
		Caps: tstamp.Caps{SOF: sofSW | sofHW, PHCIndex: 10, TxTypes: txOffOn,
			RxFilters: rxAll | 1<<tstamp.FilterPTPv2Event | 1<<tstamp.FilterPTPv2L4Event | 1<<unix.HWTSTAMP_FILTER_PTP_V2_L2_EVENT |
				1<<unix.HWTSTAMP_FILTER_PTP_V2_SYNC | 1<<unix.HWTSTAMP_FILTER_PTP_V2_L4_SYNC | 1<<unix.HWTSTAMP_FILTER_PTP_V2_L2_SYNC |
				1<<unix.HWTSTAMP_FILTER_PTP_V2_DELAY_REQ | 1<<unix.HWTSTAMP_FILTER_PTP_V2_L4_DELAY_REQ | 1<<unix.HWTSTAMP_FILTER_PTP_V2_L2_DELAY_REQ},
		Start: off,
		Set: onOffSet(false, func(f tstamp.RxFilter) (tstamp.RxFilter, bool) {
			switch f {
			case tstamp.FilterNone, tstamp.FilterAll:
				return f, true
			case tstamp.FilterPTPv2Event, tstamp.FilterPTPv2L4Event, unix.HWTSTAMP_FILTER_PTP_V2_L2_EVENT:
				return tstamp.FilterPTPv2Event, true
			case unix.HWTSTAMP_FILTER_PTP_V2_SYNC, unix.HWTSTAMP_FILTER_PTP_V2_L4_SYNC, unix.HWTSTAMP_FILTER_PTP_V2_L2_SYNC:
				return unix.HWTSTAMP_FILTER_PTP_V2_SYNC, true
			case unix.HWTSTAMP_FILTER_PTP_V2_DELAY_REQ, unix.HWTSTAMP_FILTER_PTP_V2_L4_DELAY_REQ, unix.HWTSTAMP_FILTER_PTP_V2_L2_DELAY_REQ:
				return unix.HWTSTAMP_FILTER_PTP_V2_DELAY_REQ, true
			}
			return f, false
		}),
		TxSlots: 4, TxHold: 20 * time.Microsecond,
		Counters:      []string{"rx_total_discard_pkts", "tx_total_discard_pkts"},
		QueueCounters: []string{"[%d]: rx_ucast_packets", "[%d]: tx_ucast_packets"},
		Queues:        2, FirstIRQ: 160,
		PHC: &PHCProfile{Extended: true},
	}
}

// BNXTPre68 is bnxt_en from "Enable packet timestamping for all RX
// packets" (6.0) to 6.7: bnxt_hwrm_ptp_cfg closed and reopened a running
// NIC (bnxt_close_nic, bnxt_open_nic: carrier off and on inside the ioctl)
// whenever the filter it set was ALL, so turning rig's stamping on resets
// the port; one TX stamp outstanding (BNXT_MAX_TX_TS 1). 6.8–6.10 (no
// reset, one slot) is not a profile of its own.
func BNXTPre68() *Profile {
	p := BNXT()
	p.Name, p.Versions = "bnxt-pre6.8", "Linux 6.0–6.7"
	p.TxSlots = 1
	set := p.Set
	p.Set = func(cur, req tstamp.HWTstampConfig) Result {
		r := set(cur, req)
		r.Bounce = r.Err == 0 && r.Stored.RxFilter == tstamp.FilterAll
		return r
	}
	return p
}

// onOffSet is a handler that takes tx_type OFF or ON and the filter rx
// stores for the request's; any other tx_type, or a filter rx refuses, is
// ERANGE, and with noFlags any flag is EINVAL. Nothing changes on an error.
func onOffSet(noFlags bool, rx func(tstamp.RxFilter) (tstamp.RxFilter, bool)) func(cur, req tstamp.HWTstampConfig) Result {
	return func(cur, req tstamp.HWTstampConfig) Result {
		if noFlags && req.Flags != 0 {
			return fail(cur, unix.EINVAL)
		}
		f, granted := rx(req.RxFilter)
		if !txOnOff(req.TxType) || !granted {
			return fail(cur, unix.ERANGE)
		}
		return ok(tstamp.HWTstampConfig{TxType: req.TxType, RxFilter: f})
	}
}

// allSet is the handler of a device that stamps every packet or none: NONE
// is kept, any other filter but the refused ones is stored as ALL.
func allSet(noFlags bool, refused ...tstamp.RxFilter) func(cur, req tstamp.HWTstampConfig) Result {
	return onOffSet(noFlags, func(f tstamp.RxFilter) (tstamp.RxFilter, bool) {
		if f == tstamp.FilterNone {
			return f, true
		}
		return tstamp.FilterAll, !slices.Contains(refused, f)
	})
}

// ptpOnly is the igb 82576 / ixgbe 82599 filter switch.
func ptpOnly(f tstamp.RxFilter) (tstamp.RxFilter, bool) {
	switch f {
	case tstamp.FilterNone, unix.HWTSTAMP_FILTER_PTP_V1_L4_SYNC, unix.HWTSTAMP_FILTER_PTP_V1_L4_DELAY_REQ:
		return f, true
	case unix.HWTSTAMP_FILTER_PTP_V2_EVENT, unix.HWTSTAMP_FILTER_PTP_V2_L2_EVENT, unix.HWTSTAMP_FILTER_PTP_V2_L4_EVENT,
		unix.HWTSTAMP_FILTER_PTP_V2_SYNC, unix.HWTSTAMP_FILTER_PTP_V2_L2_SYNC, unix.HWTSTAMP_FILTER_PTP_V2_L4_SYNC,
		unix.HWTSTAMP_FILTER_PTP_V2_DELAY_REQ, unix.HWTSTAMP_FILTER_PTP_V2_L2_DELAY_REQ, unix.HWTSTAMP_FILTER_PTP_V2_L4_DELAY_REQ:
		return tstamp.FilterPTPv2Event, true
	}
	return f, false // ALL, SOME, PTP_V1_L4_EVENT, NTP_ALL
}

// ENA is AWS ENA with the out-of-tree driver (amzn-drivers
// kernel/linux/ena 2.17.0, April 2026) on a device that stamps RX only:
// ena_set_timestamp_config_internal accepts tx_type OFF/ON and every PTP
// filter, NTP_ALL and ALL as ALL (NONE kept; SOME and anything else
// ERANGE, before any change), stores the config, then ena_close() →
// ena_configure_hw_timestamping() → ena_up(): every accepted
// SIOCSHWTSTAMP resets the interface, even one that changes nothing. A
// request the device cannot do (TX ON here) fails in
// ena_configure_hw_timestamping with EOPNOTSUPP after the reset, and the
// stored config becomes OFF/NONE. ena_get_ts_info on an RX-only device:
// RX_HARDWARE without RAW_HARDWARE, no tx_types, rx NONE|ALL.
// ena_down/ena_up (netif_carrier_off/on) move carrier_changes by 2 and
// count interface_down/interface_up (ena_netdev.c ena_up, ena_down); the IRQs are freed and requested
// again with irq_update_affinity_hint (only the hint: a user's affinity
// stays). The PHC (ena_phc.c, phc_enable=1) has gettimex64 only; the
// device allows 125 get-time requests per second (docs/hardware.md), and
// ena_com_phc_get_timestamp blocks for block_timeout_usec (default 1000
// µs) after a failure, counting phc_cnt/phc_exp/phc_skp/phc_err_{dv,ts,eb}.
// ena_down and ena_up turn the carrier off and on inside the ioctl
// (LinkDown 0).
func ENA() *Profile {
	return &Profile{
		Name: "ena", Driver: "ena",
		Versions: "amzn-drivers 2.15–2.17", Functions: []string{"ena_set_timestamp_config_internal", "ena_configure_hw_timestamping", "ena_get_ts_info", "ena_phc_gettimex64"},
		Caps:  tstamp.Caps{SOF: tstamp.FlagTxSoftware | tstamp.FlagRxSoftware | tstamp.FlagSoftware | tstamp.FlagRxHardware, PHCIndex: 0, RxFilters: rxAll},
		Start: off,
		Set: func(cur, req tstamp.HWTstampConfig) Result {
			r := allSet(false, tstamp.FilterSome)(cur, req)
			if r.Err == 0 && req.TxType == tstamp.TxOn { // the device has no TX support
				return Result{Stored: off, Err: unix.EOPNOTSUPP, Bounce: true}
			}
			r.Bounce = r.Err == 0
			return r
		},
		Counters: []string{"total_resets", "reset_fail", "tx_timeout", "interface_down", "interface_up",
			"bw_in_allowance_exceeded", "bw_out_allowance_exceeded", "pps_allowance_exceeded",
			"conntrack_allowance_exceeded", "linklocal_allowance_exceeded",
			"phc_cnt", "phc_exp", "phc_skp", "phc_err_dv", "phc_err_ts", "phc_err_eb"},
		QueueCounters: []string{"queue_%d_tx_cnt", "queue_%d_tx_missed_tx", "queue_%d_rx_cnt", "queue_%d_rx_page_alloc_fail"},
		Queues:        2, FirstIRQ: 110,
		PHC: &PHCProfile{Extended: true, PerSecond: 125, Block: 1000 * time.Microsecond,
			Counters: [4]string{"phc_cnt", "phc_exp", "phc_skp", "phc_err_ts"}},
		Notes: []string{"RX stamps only on the instance types whose device reports it; TX hardware stamps need a device with TX support",
			"every SIOCSHWTSTAMP resets the interface (the ENI may carry ssh)"},
	}
}

// ENAAdminFailure is ENA on a device whose capabilities list RX stamps
// but which refuses the admin command that sets them (amzn-drivers issue
// 351: ena_linux 2.15.0 on Ubuntu's 6.8.0-1024-aws, "Admin command
// failed", EOPNOTSUPP). ena_set_timestamp_config_internal (2.15.0 to
// 2.17.0) stores the request and resets the interface;
// ena_configure_hw_timestamping's ena_com_set_hw_timestamping_configuration
// fails, so it stores OFF/NONE and drops the extended completion
// descriptors; ena_up brings the interface back all the same, and the
// ioctl returns EOPNOTSUPP: the config reads what it read before a write
// from OFF/NONE, yet the link bounced. A variant, not in Profiles.
func ENAAdminFailure() *Profile {
	p := ENA()
	p.Name = "ena-admin-failure"
	set := p.Set
	p.Set = func(cur, req tstamp.HWTstampConfig) Result {
		if r := set(cur, req); !r.Bounce {
			return r // refused before the reset (ERANGE)
		}
		return Result{Stored: off, Err: unix.EOPNOTSUPP, Bounce: true}
	}
	return p
}

// SlowLink is p (a profile whose Set resets the interface) with a link
// that comes back 2 s after the reset, and operstate 1 s behind a
// carrier-off: linkwatch delays a non-urgent event up to a second after
// its previous run (net/core/link_watch.c linkwatch_schedule_work). It
// plays a PHY that renegotiates after a reset (igb or ixgbe after
// `ethtool -G`, the link brought up by the watchdog) behind the SET that
// rig waits after. The 2 s is a model figure. A variant, not in Profiles.
func SlowLink(p *Profile) *Profile {
	p.Name += "+slow-link"
	p.LinkDown, p.OperLag = 2*time.Second, time.Second
	return p
}

// Liquidio is Cavium LiquidIO (drivers/net/ethernet/cavium/liquidio
// lio_main.c hwtstamp_ioctl and liquidio_ioctl, read in several copies up
// to the 2025 ndo conversion patch, lio_ethtool.c lio_get_ts_info): the
// ioctl handles SIOCSHWTSTAMP only — SIOCGHWTSTAMP
// ends in the default case, EOPNOTSUPP — rejects flags (EINVAL) and tx
// types other than OFF/ON (ERANGE), and takes NONE as NONE and ALL, SOME
// and every PTP filter as ALL. TX stamps are sent for every packet that
// asks whatever tx_type says (its ndo_hwtstamp_get conversion says "TX
// timestamping is technically always on"). ts_info advertises tx OFF|ON
// and rx NONE|PTP_V1_L4_EVENT|PTP_V2_L2_EVENT|PTP_V2_L4_EVENT — not ALL,
// although the handler grants it — so rig, deciding from the capability
// report, never asks it for ALL. The later ndo conversion (2025 net-next)
// adds a GET; this is the driver before it.
func Liquidio() *Profile {
	return &Profile{
		Name: "liquidio", Driver: "liquidio",
		Versions: "Linux 4.x–6.18 (before the ndo_hwtstamp conversion)", Functions: []string{"hwtstamp_ioctl", "liquidio_ioctl", "lio_get_ts_info"},
		Caps: tstamp.Caps{SOF: sofSW | sofHW, PHCIndex: 6, TxTypes: txOffOn,
			RxFilters: 1<<tstamp.FilterNone | 1<<unix.HWTSTAMP_FILTER_PTP_V1_L4_EVENT | 1<<unix.HWTSTAMP_FILTER_PTP_V2_L2_EVENT | 1<<tstamp.FilterPTPv2L4Event},
		Start:    off,
		GetErr:   unix.EOPNOTSUPP,
		TxAlways: true,
		Set:      allSet(true, tstamp.FilterNTPAll),
		Queues:   1, FirstIRQ: 120,
	}
}

// NoGet is liquidio's SIOCSHWTSTAMP handling (SET only, every filter
// granted as ALL) with a capability report that includes ALL, as a
// driver without SIOCGHWTSTAMP but with a correct ts_info would give. It
// is the one composite profile: it exists so that rig's path for a
// config it cannot read (leave it alone, request hardware stamps, let
// the first packets decide) runs against a driver that would stamp.
func NoGet() *Profile {
	p := Liquidio()
	p.Name = "noget"
	p.Versions = "composite: liquidio's handler, a ts_info with ALL"
	p.Caps.RxFilters |= 1 << tstamp.FilterAll
	return p
}

// Veth is veth (drivers/net/veth.c; virtio_net is the same for this):
// ethtool_op_get_ts_info (software stamps, no PHC), no ndo_hwtstamp_get/
// set and no ioctl for them, so SIOCGHWTSTAMP and SIOCSHWTSTAMP fail with
// EOPNOTSUPP (checked on this machine's 6.18 kernel). Per-queue XDP
// counters (veth_get_strings) follow the channel count.
func Veth() *Profile {
	return &Profile{
		Name: "veth", Driver: "veth",
		Versions: "Linux 6.18", Functions: []string{"ethtool_op_get_ts_info", "veth_get_strings"},
		Caps:     tstamp.Caps{SOF: sofSW, PHCIndex: -1},
		Start:    off,
		GetErr:   unix.EOPNOTSUPP,
		Counters: []string{"peer_ifindex"},
		QueueCounters: []string{"rx_queue_%d_xdp_packets", "rx_queue_%d_xdp_bytes", "rx_queue_%d_drops",
			"rx_queue_%d_xdp_redirect", "rx_queue_%d_xdp_drops", "rx_queue_%d_xdp_tx", "rx_queue_%d_xdp_tx_errors",
			"tx_queue_%d_xdp_xmit", "tx_queue_%d_xdp_xmit_errors"},
		Queues: 1,
	}
}

// VirtioNet is virtio_net: software stamps only, like Veth.
func VirtioNet() *Profile {
	p := Veth()
	p.Name, p.Driver = "virtio_net", "virtio_net"
	p.Functions = []string{"ethtool_op_get_ts_info", "virtnet_get_strings"}
	p.Counters = nil
	p.QueueCounters = []string{"rx_queue_%d_packets", "rx_queue_%d_drops", "tx_queue_%d_packets"}
	return p
}

// Profiles returns a fresh copy of every profile, in table order.
func Profiles() []*Profile {
	return []*Profile{ExaNIC(), MLX5(), MLX5Pre616(), ICE(), IGB82576(), IGBI210(), IXGBE82599(), IXGBEX550(), I40E(), BNXT(), BNXTPre68(), ENA(), Liquidio(), NoGet(), Veth(), VirtioNet()}
}

// PTP4L is what linuxptp's ptp4l does to a NIC when it starts with
// hardware timestamping (sk.c hwts_init, HWTS_FILTER_NORMAL): SIOCSHWTSTAMP
// with tx_type ON and rx_filter PTP_V2_L4_EVENT (UDPv4 transport), then,
// if the driver refuses, PTP_V2_EVENT. It uses the driver's own handler,
// so the NIC ends in the config ptp4l would leave, and returns it. The
// calls are recorded like any other; ResetSets forgets them.
func PTP4L(n *NIC) (tstamp.HWTstampConfig, error) {
	var err error
	for _, f := range []tstamp.RxFilter{tstamp.FilterPTPv2L4Event, tstamp.FilterPTPv2Event} {
		c := tstamp.HWTstampConfig{TxType: tstamp.TxOn, RxFilter: f}
		if err = n.SetHWTstamp(n.Ifname, &c); err == nil {
			return c, nil
		}
	}
	return n.Config(), err
}

// ResetSets forgets the recorded SIOCSHWTSTAMP calls and their link
// bounces (after a test set the NIC up), waiting for link changes first.
func (n *NIC) ResetSets() error {
	err := n.Wait()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.calls = nil
	return err
}
