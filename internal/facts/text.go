//go:build linux

package facts

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

func opt[T any](p *T) string {
	if p == nil {
		return "n/a"
	}
	return fmt.Sprint(*p)
}

// WriteText prints the Info the way `rig nicctl show` does.
func (in *Info) WriteText(w io.Writer) {
	fmt.Fprintf(w, "%s: driver %s, bus %s, %s, mtu %d", in.Iface, or(in.Driver, "none (virtual)"), or(in.BDF, "-"), in.OperState, in.MTU)
	if in.SpeedMbps > 0 {
		fmt.Fprintf(w, ", %d Mb/s", in.SpeedMbps)
	}
	if in.Mgmt != "" {
		fmt.Fprint(w, " [management: "+in.Mgmt+"]")
	} else if in.DefaultRoute {
		fmt.Fprint(w, " [has a default route, not the lowest-metric one: not management]")
	}
	fmt.Fprintln(w)
	if l := in.Link; l != nil {
		speed := "unknown"
		if l.SpeedMbps > 0 {
			speed = strconv.Itoa(l.SpeedMbps) + " Mb/s"
		}
		fmt.Fprintf(w, "link:      up %v, speed %s, duplex %s, autoneg %v, port %s\n", l.Up, speed, l.Duplex, l.Autoneg, or(l.Port, "-"))
	}
	if d := in.DrvInfo; d != nil {
		fmt.Fprintf(w, "driver:    %s %s, firmware %s, bus-info %s\n", d.Driver, d.Version, or(d.Firmware, "-"), or(d.BusInfo, "-"))
	}
	if e := in.ENA; e != nil {
		tree := "in-tree"
		if e.OutOfTree {
			tree = "out-of-tree (amzn-drivers)"
		}
		ts := "none"
		if t := e.HWTimestamping; t != nil {
			ts = fmt.Sprintf("RX offered %v on %v, TX offered %v on %v", t.RXSupported, t.RXEnabled, t.TXSupported, t.TXEnabled)
		}
		srd := "n/a"
		if e.SRDMode != nil {
			srd = fmt.Sprintf("mode %d (express %v, udp %v)", *e.SRDMode, e.ExpressOn(), e.UDPOverSRD())
		}
		fmt.Fprintf(w, "ena:       %s %s, packet stamps %s, phc_enable %s, LLQ %s (header %s B), ENA Express %s\n",
			tree, or(e.Version, "?"), ts, opt(e.PHCEnable), or(e.LLQ, "n/a"), opt(e.LLQHeaderBytes), srd)
	}
	if c := in.Channels; c != nil {
		fmt.Fprintf(w, "channels:  rx %s/%s  tx %s/%s  other %s/%s  combined %s/%s (current/max)\n",
			opt(c.Rx), opt(c.RxMax), opt(c.Tx), opt(c.TxMax), opt(c.Other), opt(c.OtherMax), opt(c.Combined), opt(c.CombinedMax))
	}
	if r := in.Rings; r != nil {
		fmt.Fprintf(w, "rings:     rx %s/%s  tx %s/%s (current/max)\n", opt(r.Rx), opt(r.RxMax), opt(r.Tx), opt(r.TxMax))
	}
	if c := in.Coalesce; c != nil {
		fmt.Fprintf(w, "coalesce:  rx-usecs %s rx-frames %s tx-usecs %s tx-frames %s adaptive-rx %s adaptive-tx %s\n",
			opt(c.RxUsecs), opt(c.RxFrames), opt(c.TxUsecs), opt(c.TxFrames), opt(c.AdaptiveRx), opt(c.AdaptiveTx))
	}
	if k := in.NAPI; k != nil {
		fmt.Fprintf(w, "napi:      napi_defer_hard_irqs %s gro_flush_timeout %s ns\n", opt(k.DeferHardIRQs), opt(k.GROFlushTimeout))
	}
	for _, n := range in.NAPIs {
		fmt.Fprintf(w, "napi %d:  defer-hard-irqs %s gro-flush-timeout %s ns irq-suspend-timeout %s ns\n",
			n.ID, opt(n.DeferHardIRQs), opt(n.GROFlushTimeout), opt(n.IRQSuspendTimeout))
	}
	if t := in.Timestamping; t != nil {
		c := t.Caps
		phc := "none"
		if c.PHCIndex >= 0 {
			phc = "/dev/ptp" + strconv.Itoa(c.PHCIndex)
		}
		fmt.Fprintf(w, "timestamping: %s (%#x); tx types: %s; rx filters: %s; PHC %s\n",
			c.SOF.EthtoolNames(), uint32(c.SOF), c.TxTypesString(), c.RxFiltersString(), phc)
		cfg := "unknown (" + t.ConfigErr + ")"
		if t.ConfigKnown {
			cfg = t.Config.String()
		}
		fmt.Fprintf(w, "hwtstamp config: %s\n", cfg)
		if t.Owner != "" {
			fmt.Fprintf(w, "hwtstamp owner: %s\n", t.Owner)
		}
	}
	keys := make([]string, 0, len(in.Errors))
	for k := range in.Errors {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "%s: %s\n", k, in.Errors[k])
	}
	if b := in.IRQBalance; b != nil {
		switch {
		case !b.Running:
			fmt.Fprintln(w, "irqbalance: not running")
		default:
			fmt.Fprintf(w, "irqbalance: running, pid %d, systemd %v, banned CPUs %s\n", b.PID, b.Systemd, or(b.BannedCPUs, "default (isolated ∪ nohz_full)"))
		}
	}
	if len(in.IRQs) == 0 {
		fmt.Fprintln(w, "IRQs: none found")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	hdr := []string{"IRQ", "NAME", "KIND", "QUEUE", "AFFINITY", "EFFECTIVE", "MANAGED"}
	for _, c := range in.CPUs {
		hdr = append(hdr, "CPU"+strconv.Itoa(c))
	}
	fmt.Fprintln(tw, strings.Join(hdr, "\t"))
	for _, q := range in.IRQs {
		queue := "-"
		if q.Queue >= 0 {
			queue = strconv.Itoa(q.Queue)
		}
		row := []string{strconv.Itoa(q.Number), or(q.Name, "-"), q.Kind, queue, q.Affinity, or(q.Effective, "-"), strconv.FormatBool(q.Managed)}
		for _, n := range q.Counts {
			row = append(row, strconv.FormatUint(n, 10))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	tw.Flush()
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
