package main

import (
	"context"
	"flag"

	"github.com/rig-project/rig/capture"
	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/tstamp"
)

func init() {
	register(&command{name: "capture", summary: "timestamp requests and replies on a mirror/tap port",
		usage: "--iface IF [flags]", flags: captureFlags})
}

func captureFlags(fs *flag.FlagSet) func(context.Context) error {
	var f probe.Capture
	f.Register(fs)
	return func(ctx context.Context) error {
		if err := parseProbe(fs, f.Parse, &f.CPU); err != nil {
			return err
		}
		undo, err := prepareNIC(ctx, "capture", f.Common, tstamp.NeedCapture)
		if err != nil {
			return err
		}
		defer undo()
		c, err := capture.New(f, capture.Options{Ready: func() {
			logf("rig capture: ready on %s (%s)", f.Iface, map[bool]string{true: "VXLAN mirror copies", false: "frames as on the wire"}[f.VXLAN])
		}})
		if err != nil {
			return setupError(err)
		}
		defer c.Close()
		logf("rig capture: timestamps %s (hardware columns cap_req_hw/cap_rep_hw: %s)", c.Granted(), map[bool]string{true: "requested; the first frames prove them", false: "none: software stamps"}[c.Source() == "hw"])
		if f.Duration > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, f.Duration)
			defer cancel()
		}
		ctx, cancel := f.Bound(ctx)
		defer cancel()
		restore := cpusched.TuneRuntime() // GC off, ≥ 2 Ps: the capture's
		runErr := c.Run(ctx)
		restore()
		n := c.Counters()
		logf("rig capture: frames %d, paired %d, unpaired %d, duplicated %d, foreign %d, malformed %d, outgoing (dropped) %d, missing stamps %d, dropped by the kernel %d; hardware stamps: %s",
			c.Frames(), len(c.Records())-int(n.Unpaired), n.Unpaired, n.Duplicated, n.Foreign, n.Malformed, n.Outgoing, n.RxStampsMissing, n.KernelDrops, c.HardwareStamps())
		if f.Out != "" {
			if err := c.WriteFile(f.Out, f.ArmIndex, f.Round); err != nil {
				return err
			}
			logf("rig capture: wrote %s", f.Out)
		}
		if f.Pcap != "" {
			if err := c.WritePcap(f.Pcap); err != nil {
				return err
			}
			logf("rig capture: wrote %s (stamped as the cap_*_%s columns)", f.Pcap, c.Source())
		}
		return f.Ended(ctx, runErr)
	}
}
