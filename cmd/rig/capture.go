package main

import (
	"context"

	"github.com/rig-project/rig/capture"
)

func init() {
	register(&command{name: "capture", summary: "timestamp requests and replies on a mirror/tap port", run: runCapture})
}

func runCapture(ctx context.Context, args []string) error {
	fs := newFlagSet("capture", "--iface IF [flags]")
	var pf probeFlags
	pf.register(fs)
	replyPort := fs.Int("reply-port", 0, "UDP port of the replies when it differs from the group port (rig send uses the group port as its source port by default)")
	pcap := fs.String("pcap", "", "also write the frames as pcap with nanosecond stamps")
	capacity := fs.Int("capacity", 100000, "sequences recorded (0..capacity-1)")
	duration := fs.Duration("duration", 0, "stop after this long (0: until Ctrl-C)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	surviveEPIPE()
	group, mode, runID, err := pf.parse()
	if err != nil {
		return err
	}
	ports := []uint16{group.Port()}
	if *replyPort > 0 {
		if *replyPort > 65535 {
			return usagef("--reply-port %d: want 1..65535", *replyPort)
		}
		ports = append(ports, uint16(*replyPort))
	}
	cfg := capture.Config{Iface: pf.iface, Ports: ports, Timestamps: mode, RunID: runID,
		Capacity: *capacity, Arm: pf.arm,
		Ready: func() { logf("rig capture: ready on %s", pf.iface) }}
	if *pcap != "" {
		cfg.PcapFrames = 2 * *capacity
	}
	c, err := capture.New(cfg)
	if err != nil {
		return setupError("capture", err)
	}
	defer c.Close()
	logf("rig capture: timestamps %s (cap_req/cap_rep source: %s)", c.Granted(), c.Source())
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	ctx, cancel := pf.bound(ctx)
	defer cancel()
	runErr := c.Run(ctx)
	n := c.Counters()
	logf("rig capture: frames %d, paired %d, unpaired %d, duplicated %d, foreign %d, missing stamps %d",
		c.Frames(), len(c.Records())-int(n.Unpaired), n.Unpaired, n.Duplicated, n.Foreign, n.RxStampsMissing)
	if pf.out != "" {
		if err := c.WriteFile(pf.out, pf.armIndex, pf.round); err != nil {
			return err
		}
		logf("rig capture: wrote %s", pf.out)
	}
	if *pcap != "" {
		if err := c.WritePcap(*pcap); err != nil {
			return err
		}
		logf("rig capture: wrote %s", *pcap)
	}
	if err := pf.expired(ctx); err != nil {
		return err
	}
	if runErr != nil && ctx.Err() == nil {
		return runErr
	}
	return nil
}
