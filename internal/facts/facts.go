package facts

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"

	"github.com/rig-project/rig/internal/power"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/tstamp"
)

// Facts is what validation needs to know about one host, read once: by
// Read on this machine, or by the host's agent, which sends it as
// JSON. Validation reads the struct; where a field may be absent (an older
// agent, a host without the facility) the lookups below say so with an
// error wrapping os.ErrNotExist.
type Facts struct {
	// Timestamping is each interface's timestamping state (capabilities,
	// current config, owner, management), for the validation of
	// `timestamps:` and the dry-run plan; an interface missing here could
	// not be asked (TimestampingErr says why).
	Timestamping map[string]tstamp.NICState `json:"timestamping,omitempty"`
	// TimestampingErr says, per interface, why its timestamping could not
	// be read (a fake host root has no kernel to ask).
	TimestampingErr map[string]string `json:"timestamping_errors,omitempty"`
	Online          []int             `json:"online"`
	// Siblings lists the SMT siblings of every online CPU, the CPU
	// included.
	Siblings map[int][]int `json:"siblings"`
	Isolated []int         `json:"isolated"`
	NohzFull []int         `json:"nohz_full"`
	Ifaces   []string      `json:"ifaces"`
	StressNG bool          `json:"stress_ng"`
	// Node is each online CPU's NUMA node, NICNode each interface's
	// (-1: the platform gives none); CPUs the kernel places on no node are
	// left out. nil: an older agent.
	Node    map[int]int    `json:"numa_node,omitempty"`
	NICNode map[string]int `json:"nic_numa_node,omitempty"`
	// SchedRT is the RT bandwidth; nil when not read.
	SchedRT *rundir.SchedRT `json:"sched_rt,omitempty"`
	// BootID is the kernel's boot_id: hosts that report the same one are
	// one machine (namespaces of it), sharing its CPUs. "": unknown.
	BootID string `json:"boot_id,omitempty"`
	// IdleStates lists each CPU's cpuidle state names in index order.
	IdleStates map[int][]string `json:"idle_states"`
	// MgmtIfaces are the management interfaces rig does not change
	// unless told to (ReadMgmt), MgmtWhy says why each is one;
	// nil (an older agent) means unknown.
	MgmtIfaces []string          `json:"mgmt_ifaces"`
	MgmtWhy    map[string]string `json:"mgmt_why,omitempty"`
	// Addrs are each interface's IPv4 addresses, sorted (where unicast
	// requests can go); nil (an older agent, a fake root) means unknown.
	Addrs map[string][]netip.Addr `json:"addrs"`
	// Missing names facilities the host lacks (isolated, nohz_full,
	// cpuidle, net, sched_rt, boot_id).
	Missing []string `json:"missing,omitempty"`
	// Power is the frequency control (cpufreq, turbo, tuned:
	// power.ReadFacts); nil from an agent that does not report it, which
	// then cannot take power knobs.
	Power *power.Facts `json:"power,omitempty"`
	// What the node knobs need of the host, which a pod lacks: /sys
	// mounted writable (statfs without ST_RDONLY: cpuidle, cpufreq,
	// tuned), a writable /proc/irq (access W_OK on an
	// smp_affinity_list), and /dev/cpu_dma_latency. nil: not known (an
	// older agent, a fake host root, a host without numbered IRQs).
	SysfsWritable   *bool `json:"sysfs_writable,omitempty"`
	ProcIRQWritable *bool `json:"proc_irq_writable,omitempty"`
	CPUDMALatency   *bool `json:"cpu_dma_latency,omitempty"`
	// Stacks are the kernel-bypass stacks of probe.StackTable as the host
	// has them: "" for one rig respond finds (its launcher on PATH, or its
	// library where the loader finds it), else what is missing. nil: not
	// known (an older agent).
	Stacks map[probe.StackName]string `json:"stacks,omitempty"`
	// SendNative and RespondNative are why rig send and rig respond
	// --engine native would refuse here (native.Find: the program missing,
	// and how to get it), "" where they find it; nil: not known (an older
	// agent).
	SendNative    *string `json:"send_native,omitempty"`
	RespondNative *string `json:"respond_native,omitempty"`
	// IOUring is whether rig's processes can set up an io_uring there
	// (nil: not known: an older agent, or a fake root that cannot say).
	IOUring *IOUring `json:"io_uring,omitempty"`
	// NAPI are each interface's NAPI knobs as sysfs shows them (an
	// interface missing here was not read).
	NAPI map[string]NAPIKnobs `json:"napi,omitempty"`
}

// IOUring says why io_uring_setup fails, plain and with
// IORING_SETUP_SQPOLL ("": it works).
type IOUring struct {
	Refused       string `json:"refused,omitempty"`
	SQPollRefused string `json:"sqpoll_refused,omitempty"`
}

func (f *Facts) lacks(what string) error {
	if slices.Contains(f.Missing, what) {
		return fmt.Errorf("%s: %w", what, os.ErrNotExist)
	}
	return nil
}

// SiblingsOf lists the SMT siblings of cpu, cpu included.
func (f *Facts) SiblingsOf(cpu int) ([]int, error) {
	if s, ok := f.Siblings[cpu]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("cpu%d/topology: %w", cpu, os.ErrNotExist)
}

// TimestampingOf is iface's timestamping (NIC.Timestamping): an error
// wrapping os.ErrNotExist for an interface the host does not have,
// errors.ErrUnsupported for one that could not be asked.
func (f *Facts) TimestampingOf(iface string) (tstamp.NICState, error) {
	if !slices.Contains(f.Ifaces, iface) {
		return tstamp.NICState{}, fmt.Errorf("interface %s: %w", iface, os.ErrNotExist)
	}
	st, ok := f.Timestamping[iface]
	if !ok {
		why := f.TimestampingErr[iface]
		if why == "" {
			why = "the host's agent could not read it"
		}
		return st, fmt.Errorf("timestamping of %s: %s: %w", iface, why, errors.ErrUnsupported)
	}
	return st, nil
}

// Management lists the management interfaces.
func (f *Facts) Management() ([]string, error) {
	if f.MgmtIfaces == nil {
		return nil, fmt.Errorf("default routes: the host does not report them: %w", os.ErrNotExist)
	}
	return f.MgmtIfaces, nil
}

// AddrsOf lists iface's IPv4 addresses, sorted.
func (f *Facts) AddrsOf(iface string) ([]netip.Addr, error) {
	switch {
	case !slices.Contains(f.Ifaces, iface):
		return nil, fmt.Errorf("interface %s: %w", iface, os.ErrNotExist)
	case f.Addrs == nil:
		return nil, fmt.Errorf("addresses: not read (a fake host root, or an older rig on the host): %w", os.ErrNotExist)
	}
	return f.Addrs[iface], nil
}

// PowerFacts is the host's frequency control.
func (f *Facts) PowerFacts() (power.Facts, error) {
	if f.Power == nil {
		return power.Facts{}, fmt.Errorf("the host does not report the frequency control (an older rig): %w", os.ErrNotExist)
	}
	return *f.Power, nil
}

// IdleStatesOf lists the cpuidle state names of cpu in index order.
func (f *Facts) IdleStatesOf(cpu int) ([]string, error) {
	if err := f.lacks("cpuidle"); err != nil {
		return nil, err
	}
	if s, ok := f.IdleStates[cpu]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("cpu%d/cpuidle: %w", cpu, os.ErrNotExist)
}

// NICNodeOf is iface's NUMA node, -1 when the platform gives none; an
// error wrapping os.ErrNotExist when the host does not report it.
func (f *Facts) NICNodeOf(iface string) (int, error) {
	if n, ok := f.NICNode[iface]; ok {
		return n, nil
	}
	return -1, fmt.Errorf("NUMA node of %s: the host does not report it (an older rig, or no such interface): %w", iface, os.ErrNotExist)
}

// NodeCPUs lists the online CPUs on NUMA node n.
func (f *Facts) NodeCPUs(n int) []int {
	var l []int
	for _, c := range f.Online {
		if nc, ok := f.Node[c]; ok && nc == n {
			l = append(l, c)
		}
	}
	return l
}
