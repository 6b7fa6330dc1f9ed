package tstamp

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestABIConstants: the values the portable files write as numbers are
// the kernel's (x/sys names them on Linux).
func TestABIConstants(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"TX_HARDWARE", int64(FlagTxHardware), unix.SOF_TIMESTAMPING_TX_HARDWARE},
		{"TX_SOFTWARE", int64(FlagTxSoftware), unix.SOF_TIMESTAMPING_TX_SOFTWARE},
		{"RX_HARDWARE", int64(FlagRxHardware), unix.SOF_TIMESTAMPING_RX_HARDWARE},
		{"RX_SOFTWARE", int64(FlagRxSoftware), unix.SOF_TIMESTAMPING_RX_SOFTWARE},
		{"SOFTWARE", int64(FlagSoftware), unix.SOF_TIMESTAMPING_SOFTWARE},
		{"SYS_HARDWARE", int64(FlagSysHardware), unix.SOF_TIMESTAMPING_SYS_HARDWARE},
		{"RAW_HARDWARE", int64(FlagRawHardware), unix.SOF_TIMESTAMPING_RAW_HARDWARE},
		{"OPT_ID", int64(FlagOptID), unix.SOF_TIMESTAMPING_OPT_ID},
		{"TX_SCHED", int64(FlagTxSched), unix.SOF_TIMESTAMPING_TX_SCHED},
		{"TX_ACK", int64(FlagTxAck), unix.SOF_TIMESTAMPING_TX_ACK},
		{"OPT_CMSG", int64(FlagOptCmsg), unix.SOF_TIMESTAMPING_OPT_CMSG},
		{"OPT_TSONLY", int64(FlagOptTSOnly), unix.SOF_TIMESTAMPING_OPT_TSONLY},
		{"OPT_STATS", int64(FlagOptStats), unix.SOF_TIMESTAMPING_OPT_STATS},
		{"OPT_PKTINFO", int64(FlagOptPktinfo), unix.SOF_TIMESTAMPING_OPT_PKTINFO},
		{"OPT_TX_SWHW", int64(FlagOptTxSwHw), unix.SOF_TIMESTAMPING_OPT_TX_SWHW},
		{"BIND_PHC", int64(FlagBindPHC), unix.SOF_TIMESTAMPING_BIND_PHC},
		{"OPT_ID_TCP", int64(FlagOptIDTCP), unix.SOF_TIMESTAMPING_OPT_ID_TCP},
		{"TX_OFF", int64(TxOff), unix.HWTSTAMP_TX_OFF},
		{"TX_ON", int64(TxOn), unix.HWTSTAMP_TX_ON},
		{"TX_ONESTEP_SYNC", int64(TxOneStepSync), unix.HWTSTAMP_TX_ONESTEP_SYNC},
		{"TX_ONESTEP_P2P", int64(TxOneStepP2P), unix.HWTSTAMP_TX_ONESTEP_P2P},
		{"FILTER_NONE", int64(FilterNone), unix.HWTSTAMP_FILTER_NONE},
		{"FILTER_ALL", int64(FilterAll), unix.HWTSTAMP_FILTER_ALL},
		{"FILTER_SOME", int64(FilterSome), unix.HWTSTAMP_FILTER_SOME},
		{"FILTER_PTP_V1_L4_EVENT", int64(FilterPTPv1L4Event), unix.HWTSTAMP_FILTER_PTP_V1_L4_EVENT},
		{"FILTER_PTP_V2_L4_EVENT", int64(FilterPTPv2L4Event), unix.HWTSTAMP_FILTER_PTP_V2_L4_EVENT},
		{"FILTER_PTP_V2_EVENT", int64(FilterPTPv2Event), unix.HWTSTAMP_FILTER_PTP_V2_EVENT},
		{"FILTER_NTP_ALL", int64(FilterNTPAll), unix.HWTSTAMP_FILTER_NTP_ALL},
		{"SCM_TSTAMP_SND", int64(KindSnd), unix.SCM_TSTAMP_SND},
		{"SCM_TSTAMP_SCHED", int64(KindSched), unix.SCM_TSTAMP_SCHED},
		{"SCM_TSTAMP_ACK", int64(KindAck), unix.SCM_TSTAMP_ACK},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, the kernel's is %d", c.name, c.got, c.want)
		}
	}
}
