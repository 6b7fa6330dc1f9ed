//go:build linux

package facts

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/native"
	"github.com/rig-project/rig/internal/power"
	"github.com/rig-project/rig/internal/tstamp"
)

// Read reads the facts of the machine below fs (the interfaces of
// this network namespace). A facility the host lacks is named in Missing;
// an interface whose timestamping or addresses cannot be asked (a fake
// root) is left out of those maps. Other read failures are errors.
func Read(fs hostfs.FS) (*Facts, error) {
	f := &Facts{Siblings: map[int][]int{}, Timestamping: map[string]tstamp.NICState{}, IdleStates: map[int][]string{}, Node: map[int]int{}, NICNode: map[string]int{}}
	var err error
	if f.Online, err = hostinfo.OnlineCPUs(fs); err != nil {
		return nil, err
	}
	missing := func(what string, err error) error {
		if errors.Is(err, os.ErrNotExist) {
			f.Missing = append(f.Missing, what)
			return nil
		}
		return err
	}
	if f.Isolated, err = hostinfo.IsolatedCPUs(fs); missing("isolated", err) != nil {
		return nil, err
	}
	if f.NohzFull, err = hostinfo.NohzFullCPUs(fs); missing("nohz_full", err) != nil {
		return nil, err
	}
	for _, c := range f.Online {
		if f.Siblings[c], err = hostinfo.ThreadSiblings(fs, c); err != nil {
			return nil, err
		}
		if n := hostinfo.CPUNode(fs, c); n >= 0 {
			f.Node[c] = n
		}
		st, err := hostinfo.ReadIdleStates(fs, c)
		switch {
		case err == nil:
			for _, s := range st {
				f.IdleStates[c] = append(f.IdleStates[c], s.Name)
			}
		case !slices.Contains(f.Missing, "cpuidle"):
			if missing("cpuidle", err) != nil {
				return nil, err
			}
		}
	}
	// A host root without /sys/class/net (a fake tree made for an
	// emulated run, whose lab makes its own interfaces) has none.
	ents, err := fs.ReadDir("/sys/class/net")
	if missing("net", err) != nil {
		return nil, err
	}
	for _, e := range ents {
		f.Ifaces = append(f.Ifaces, e.Name())
	}
	for _, i := range f.Ifaces {
		switch n, err := hostinfo.NICNode(fs, i); {
		case err == nil:
			f.NICNode[i] = n
		case !errors.Is(err, os.ErrNotExist): // else gone since the listing
			return nil, err
		}
		f.readNIC(fs, i)
	}
	if rt, err := hostinfo.ReadSchedRT(fs); missing("sched_rt", err) != nil {
		return nil, err
	} else if err == nil {
		f.SchedRT = &rt
	}
	if f.BootID, err = fs.ReadString("/proc/sys/kernel/random/boot_id"); missing("boot_id", err) != nil {
		return nil, err
	}
	if f.StressNG, err = hasStressNG(); err != nil {
		return nil, err
	}
	f.Stacks, f.IOUring = readStacks(), readIOUring(fs)
	f.SendNative, f.RespondNative = readNative(native.SendProgram), readNative(native.RespondProgram)
	pf, err := power.ReadFacts(context.Background(), fs, power.HostTuned(fs))
	if err != nil {
		return nil, fmt.Errorf("power facts: %w", err)
	}
	f.Power = &pf
	if err := f.readWritable(fs); err != nil {
		return nil, err
	}
	// Never nil when known: nil says "unknown" (no route table here, or
	// an older agent).
	switch mg, err := ReadMgmt(fs); {
	case err == nil:
		f.MgmtIfaces, f.MgmtWhy = mg.Ifaces(), mg.Why
	case !errors.Is(err, os.ErrNotExist):
		return nil, err
	}
	return f, nil
}

// readNIC reads iface's NAPI knobs (sysfs, a fake root's too) and asks
// the kernel (ETHTOOL_GET_TS_INFO, SIOCGHWTSTAMP, RTM_GETADDR, the process
// table) about it. A fake fs has no kernel behind it, and
// an interface may be gone since the listing: what cannot be asked is left
// out, with the reason for timestamping.
func (f *Facts) readNIC(fs hostfs.FS, iface string) {
	if k, err := ReadNAPIKnobs(fs, iface); err == nil {
		if f.NAPI == nil {
			f.NAPI = map[string]NAPIKnobs{}
		}
		f.NAPI[iface] = k
	}
	if !fs.IsReal() {
		f.noTimestamping(iface, "cannot ask a fake host root")
		return
	}
	if st, err := (&NIC{FS: fs}).Timestamping(iface); err == nil {
		f.Timestamping[iface] = st
	} else {
		f.noTimestamping(iface, err.Error())
	}
	if as, err := IPv4Addrs(iface); err == nil {
		if f.Addrs == nil {
			f.Addrs = map[string][]netip.Addr{}
		}
		f.Addrs[iface] = append([]netip.Addr{}, as...)
	}
}

// readWritable asks, without writing anything, whether this host lets
// rig change node knobs: a pod's /sys and /proc/irq are mounted read-only
// and its /dev has no cpu_dma_latency. A fake host root is not asked.
func (f *Facts) readWritable(fs hostfs.FS) error {
	if !fs.IsReal() {
		return nil
	}
	var st unix.Statfs_t
	if err := unix.Statfs("/sys", &st); err != nil {
		return fmt.Errorf("statfs /sys: %w", err)
	}
	sysfs, dma := st.Flags&unix.ST_RDONLY == 0, fs.Exists(hostinfo.DMALatencyPath)
	f.SysfsWritable, f.CPUDMALatency = &sysfs, &dma
	irqs, err := hostinfo.ListIRQs(fs)
	if err != nil {
		return err
	}
	for _, n := range irqs {
		p := fmt.Sprintf("/proc/irq/%d/smp_affinity_list", n)
		if !fs.Exists(p) {
			continue
		}
		err := unix.Access(p, unix.W_OK)
		w := err == nil
		if err != nil && !errors.Is(err, unix.EROFS) && !errors.Is(err, unix.EACCES) && !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("access %s: %w", p, err)
		}
		f.ProcIRQWritable = &w
		break
	}
	return nil
}

func (f *Facts) noTimestamping(iface, why string) {
	if f.TimestampingErr == nil {
		f.TimestampingErr = map[string]string{}
	}
	f.TimestampingErr[iface] = why
}

// hasStressNG looks stress-ng up in $PATH: only meaningful for the live
// host, whatever the host root.
func hasStressNG() (bool, error) {
	_, err := exec.LookPath("stress-ng")
	if errors.Is(err, exec.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
