package main

import (
	"context"

	"github.com/rig-project/rig/capture"
	"github.com/rig-project/rig/internal/tstamp"
)

func init() {
	register(&command{name: "capture", summary: "timestamp requests and replies on a mirror/tap port", run: runCapture})
}

func runCapture(ctx context.Context, args []string) error {
	fs := newFlagSet("capture", "--iface IF [flags]")
	var pf probeFlags
	pf.register(fs)
	pf.registerUnicast(fs, "to", "unicast requests: the responder's IPv4 address:port (the sender's --to); its port is captured instead of --group's")
	replyPort := fs.Int("reply-port", 0, "UDP port of the replies when it differs from the group port (rig send uses the group port as its source port by default)")
	vxlan := fs.Bool("vxlan", false, "the port receives VXLAN-encapsulated copies (UDP 4789: AWS VPC Traffic Mirroring, rig lab up --mirror vxlan): filter and pair the frames inside; the stamps are the copies' arrival here, not the wire at the responder")
	pcap := fs.String("pcap", "", "also write the frames as pcap with nanosecond stamps")
	capacity := fs.Int("capacity", 100000, "sequences recorded (0..capacity-1)")
	duration := fs.Duration("duration", 0, "stop after this long (0: until Ctrl-C)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	surviveEPIPE()
	group, mode, runID, err := pf.parse()
	if err != nil {
		return err
	}
	if err := requireRunID("capture", runID); err != nil {
		return err
	}
	ports := []uint16{pf.dest(group).Port()}
	if *replyPort > 0 {
		if *replyPort > 65535 {
			return usagef("--reply-port %d: want 1..65535", *replyPort)
		}
		ports = append(ports, uint16(*replyPort))
	}
	cfg := capture.Config{Iface: pf.iface, Ports: ports, Timestamps: mode, Group: group, To: pf.unicast.addr, VXLAN: *vxlan, RunID: runID,
		ArmIndex: pf.armIndex, Round: pf.round, Capacity: *capacity, Arm: pf.arm,
		Ready: func() {
			logf("rig capture: ready on %s (%s)", pf.iface, map[bool]string{true: "VXLAN mirror copies", false: "frames as on the wire"}[*vxlan])
		}}
	if *pcap != "" {
		cfg.PcapFrames = 2 * *capacity
	}
	undo, err := prepareNIC(ctx, "capture", &pf, mode, tstamp.NeedCapture)
	if err != nil {
		return err
	}
	defer undo()
	c, err := capture.New(cfg)
	if err != nil {
		return setupError(err)
	}
	defer c.Close()
	logf("rig capture: timestamps %s (hardware columns cap_req_hw/cap_rep_hw: %s)", c.Granted(), map[bool]string{true: "requested; the first frames prove them", false: "none: software stamps"}[c.Source() == "hw"])
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	ctx, cancel := pf.bound(ctx)
	defer cancel()
	runErr := c.Run(ctx)
	n := c.Counters()
	logf("rig capture: frames %d, paired %d, unpaired %d, duplicated %d, foreign %d, malformed %d, outgoing (dropped) %d, missing stamps %d, dropped by the kernel %d; hardware stamps: %s",
		c.Frames(), len(c.Records())-int(n.Unpaired), n.Unpaired, n.Duplicated, n.Foreign, n.Malformed, n.Outgoing, n.RxStampsMissing, n.KernelDrops, c.HardwareStamps())
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
