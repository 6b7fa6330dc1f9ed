package reflector

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

// Mode is how the program is attached to the interface.
type Mode int

const (
	// Driver runs the program in the driver's receive path (native XDP),
	// before any socket buffer is allocated: the floor this arm measures.
	Driver Mode = iota
	// Generic runs it in the stack's receive path after the socket buffer
	// is built (for drivers without native XDP): a higher floor.
	Generic
	// TC runs it at tc ingress (tcx) and sends the reply out of the
	// interface's egress: the stack's receive and transmit entry too.
	TC
)

func (m Mode) String() string { return [...]string{"driver", "generic", "tc"}[m] }

// Reflector is the program loaded, with its counters, and once Attach
// succeeds attached to an interface through a BPF link: the link is this
// process's file, so the program goes with the process, however it ends.
type Reflector struct {
	prog     *ebpf.Program
	counters *ebpf.Map
	link     link.Link
}

// Load checks p and loads the program for it at hook h. Without CAP_BPF
// and CAP_NET_ADMIN the kernel refuses, and the error says which.
func Load(p Params, h Hook) (*Reflector, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "rig_reflect_cnt", Type: ebpf.PerCPUArray, KeySize: 4, ValueSize: 8, MaxEntries: nCounters})
	if err != nil {
		return nil, permission("creating its counters map", err)
	}
	typ := ebpf.XDP
	if h.TCIfindex != 0 {
		typ = ebpf.SchedCLS
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "rig_reflect", Type: typ, License: "Apache-2.0", Instructions: Instructions(p, m.FD(), h)})
	if err != nil {
		m.Close()
		return nil, permission("loading the program", err)
	}
	return &Reflector{prog: prog, counters: m}, nil
}

// permission explains a refusal for want of privilege.
func permission(what string, err error) error {
	if errors.Is(err, os.ErrPermission) { // EPERM, EACCES
		return fmt.Errorf("reflector: %s: %w (the XDP engine needs CAP_BPF and CAP_NET_ADMIN, or root)", what, err)
	}
	return fmt.Errorf("reflector: %s: %w", what, err)
}

// Attach attaches the program to interface ifindex (named iface) in mode.
// A driver that refuses native XDP is refused, with what to try instead.
func (r *Reflector) Attach(iface string, ifindex int, mode Mode) error {
	if mode == TC {
		l, err := link.AttachTCX(link.TCXOptions{Program: r.prog, Interface: ifindex, Attach: ebpf.AttachTCXIngress})
		if err != nil {
			return permission(fmt.Sprintf("attaching to %s's tc ingress (tcx, Linux 6.6 or later)", iface), err)
		}
		r.link = l
		return nil
	}
	flags := link.XDPDriverMode
	if mode == Generic {
		flags = link.XDPGenericMode
	}
	l, err := link.AttachXDP(link.XDPOptions{Program: r.prog, Interface: ifindex, Flags: flags})
	switch {
	case err == nil:
		r.link = l
		return nil
	case mode == Driver && !errors.Is(err, os.ErrPermission):
		return fmt.Errorf("reflector: %s refuses XDP in driver mode: %w (--engine xdp-generic runs it in the stack's receive path, --engine tc at tc ingress: higher floors)", iface, err)
	}
	return permission(fmt.Sprintf("attaching to %s in %s mode", iface, mode), err)
}

// Counts returns the counters summed over the CPUs: answered and passed.
func (r *Reflector) Counts() (answered, passed uint64, err error) {
	var out [nCounters]uint64
	for k := range out {
		var per []uint64
		if err := r.counters.Lookup(uint32(k), &per); err != nil {
			return 0, 0, fmt.Errorf("reflector: reading its counters: %w", err)
		}
		for _, n := range per {
			out[k] += n
		}
	}
	return out[Answered], out[Passed], nil
}

// Close detaches the program and releases it.
func (r *Reflector) Close() error {
	var err error
	if r.link != nil {
		err = r.link.Close()
	}
	return errors.Join(err, r.prog.Close(), r.counters.Close())
}

// AttachPass attaches a program that passes every frame to interface
// ifindex (named iface), in driver mode, until the returned link is
// closed or its holder ends. A veth needs it on the reflector's peer in
// driver mode: veth hands the frames the reflector sends back (XDP_TX) to
// the peer's ring and wakes the peer's NAPI for them only when the peer
// runs an XDP program of its own (veth_xdp_flush); GRO on the peer gives
// it a ring and a NAPI, but nothing wakes it for them.
func AttachPass(iface string, ifindex int) (io.Closer, error) {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "rig_pass", Type: ebpf.XDP, License: "Apache-2.0",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 2), asm.Return()}}) // XDP_PASS
	if err != nil {
		return nil, permission("loading a pass program", err)
	}
	defer prog.Close() // the link holds it
	l, err := link.AttachXDP(link.XDPOptions{Program: prog, Interface: ifindex, Flags: link.XDPDriverMode})
	if err != nil {
		return nil, permission("attaching a pass program to "+iface, err)
	}
	return l, nil
}
