package main

import (
	"fmt"
	"io"

	"github.com/rig-project/rig/analysis"
	"github.com/rig-project/rig/internal/samples"
)

// printSendSummary prints the one-screen summary of a round at the sender.
func printSendSummary(w io.Writer, j *samples.Joined, warmup int) error {
	c := j.Counters[samples.RoleSender]
	fmt.Fprintf(w, "sent %d  received %d  lost %d  duplicated %d  reordered %d  late %d  TX stamps missing %d\n",
		c.Sent, c.Received, c.Lost, c.Duplicated, c.Reordered, c.Late, c.TxStampsMissing)
	type metric struct {
		name, source string
		a, b         samples.Stamp
	}
	ms := []metric{
		{"rtt", "sw (kernel TX → kernel RX, CLOCK_REALTIME)", samples.TxSW, samples.RxSW},
		{"rtt", "user (before sendmsg → after recvmsg, CLOCK_REALTIME)", samples.TxUser, samples.RxUser},
		{"lateness", "user (tx_user − due, CLOCK_REALTIME)", samples.Due, samples.TxUser},
	}
	if j.Clocks[samples.TxHW.String()].Source == "hw" {
		ms = append([]metric{{"rtt", "hw (NIC TX → NIC RX, sender PHC)", samples.TxHW, samples.RxHW}}, ms...)
	}
	fmt.Fprintf(w, "%-9s %8s %10s %10s %10s %10s  %s\n", "metric", "n", "median", "p99", "p99.9", "worst", "clock source")
	for _, m := range ms {
		var v []int64
		for i := range j.Records {
			r := &j.Records[i]
			if r.Seq < uint64(warmup) || r.Flags&(samples.FlagLate|samples.FlagNotSent) != 0 {
				continue
			}
			if r.T[m.a] != 0 && r.T[m.b] != 0 {
				v = append(v, r.T[m.b]-r.T[m.a])
			}
		}
		st := analysis.Compute(v)
		if st.N == 0 {
			fmt.Fprintf(w, "%-9s %8d %10s %10s %10s %10s  %s\n", m.name, 0, "-", "-", "-", "-", m.source)
			continue
		}
		p := func(q analysis.Quantile) string {
			x, _ := st.Value(q)
			return analysis.FormatUS(x)
		}
		fmt.Fprintf(w, "%-9s %8d %10s %10s %10s %10s  %s\n", m.name, st.N, p(analysis.P50), p(analysis.P99), p(analysis.P999),
			analysis.FormatUS(*st.WorstNS), m.source)
	}
	fmt.Fprintf(w, "µs; exact nearest-rank percentiles; first %d sequences excluded (warm-up); late replies counted lost\n", warmup)
	return nil
}
