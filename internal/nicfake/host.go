package nicfake

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rig-project/rig/internal/hostfs"
)

// Host is a fake host root (for hostfs.FS) holding one NIC: the files
// rig's NIC code reads besides the ioctls — /proc (processes, the routing
// table) and the NIC's /sys/class/net and /proc/irq entries, which the NIC
// keeps current.
type Host struct {
	FS  hostfs.FS
	NIC *NIC
}

// NewHost builds a host root in dir with nic attached: a process table of
// kthreadd alone (PID 2: the host's PID namespace, hostinfo.HostPIDs) and
// a routing table whose default route leaves through mgmtIface
// ("" for none; pass nic.Ifname to make the NIC the management interface).
func NewHost(dir string, nic *NIC, mgmtIface string) (*Host, error) {
	h := &Host{FS: hostfs.FS{Root: dir}, NIC: nic}
	route := "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"
	if mgmtIface != "" {
		route += mgmtIface + "\t00000000\t0100000A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n"
	}
	if err := h.write("/proc/net/route", route); err != nil {
		return nil, err
	}
	if err := h.AddProcess(2, "kthreadd"); err != nil {
		return nil, err
	}
	if err := nic.Attach(dir); err != nil {
		return nil, err
	}
	return h, nil
}

func (h *Host) write(path, v string) error {
	p := filepath.Join(h.FS.Root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(v), 0o644)
}

// AddProcess adds /proc/PID/{comm,cmdline} for a running program.
func (h *Host) AddProcess(pid int, argv ...string) error {
	if len(argv) == 0 {
		return fmt.Errorf("nicfake: process %d without a command line", pid)
	}
	base := "/proc/" + strconv.Itoa(pid) + "/"
	if err := h.write(base+"comm", filepath.Base(argv[0])+"\n"); err != nil {
		return err
	}
	return h.write(base+"cmdline", strings.Join(argv, "\x00")+"\x00")
}

// StartPTP4L starts a fake ptp4l that owns the host's NIC: its process
// (ptp4l -i IF, plus args) and, unless software is set (ptp4l -S), the
// config linuxptp leaves on the NIC (PTP4L). The SIOCSHWTSTAMP calls it
// made are forgotten, so a test counts only rig's.
func (h *Host) StartPTP4L(pid int, software bool, args ...string) error {
	argv := append([]string{"ptp4l", "-i", h.NIC.Ifname}, args...)
	if software {
		argv = append(argv, "-S")
	}
	if err := h.AddProcess(pid, argv...); err != nil {
		return err
	}
	if !software {
		if _, err := PTP4L(h.NIC); err != nil {
			return fmt.Errorf("nicfake: ptp4l on %s: %w", h.NIC, err)
		}
	}
	return h.NIC.ResetSets()
}

// Operstate reads the NIC's operstate from the host root.
func (h *Host) Operstate() (string, error) {
	return h.FS.ReadString("/sys/class/net/" + h.NIC.Ifname + "/operstate")
}

// Affinity reads /proc/irq/N/smp_affinity_list from the host root.
func (h *Host) Affinity(irq int) (string, error) {
	return h.FS.ReadString("/proc/irq/" + strconv.Itoa(irq) + "/smp_affinity_list")
}
