// Package reflectortest is what tests of the XDP reflector on veth need
// beside the reflector itself.
package reflectortest

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

// AttachPass attaches a program that passes every frame to interface
// ifindex (named iface), in driver mode, until the returned link is
// closed. A veth needs it on the reflector's peer: veth hands the frames
// a program sends back (XDP_TX) to its peer's NAPI, and schedules that
// NAPI only when the peer runs an XDP program of its own (veth_xdp_flush);
// GRO alone gives the peer a NAPI that nothing wakes for them.
func AttachPass(iface string, ifindex int) (link.Link, error) {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "rig_pass", Type: ebpf.XDP, License: "Apache-2.0",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2), asm.Return()}})
	if err != nil {
		return nil, fmt.Errorf("reflectortest: loading a pass program: %w", err)
	}
	defer prog.Close() // the link holds it
	l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifindex, Flags: link.XDPDriverMode})
	if err != nil {
		return nil, fmt.Errorf("reflectortest: attaching a pass program to %s: %w", iface, err)
	}
	return l, nil
}
