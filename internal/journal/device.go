package journal

import (
	"errors"
	"fmt"
	"net"

	"github.com/rig-project/rig/internal/owner"
	"golang.org/x/sys/unix"
)

// Device identifies the network device a change was made to beyond its
// name, which a new device can take after the old one is gone. The
// namespace's inode (Record.NetNS) is no better: the kernel reuses it once
// the namespace is gone. The namespace cookie (SO_NETNS_COOKIE) is never
// reused while the machine runs, the boot id tells boots apart, and the
// ifindex and MAC tell a recreated device from the one that was changed.
type Device struct {
	Name string `json:"name"`
	// Ifindex and MAC are 0 and "" when the namespace had no kernel device
	// of that name when the change was made: only a fake NIC in tests, as
	// the change itself goes to the kernel's device. Nothing is compared
	// then.
	Ifindex int    `json:"ifindex,omitempty"`
	MAC     string `json:"mac,omitempty"`
	// NetNSCookie is 0 where SO_NETNS_COOKIE is unknown (kernels before
	// 5.14, qemu-user).
	NetNSCookie uint64 `json:"netns_cookie,omitempty"`
	Boot        string `json:"boot_id,omitempty"`
}

// identify returns the identity of device name in this process's network
// namespace. It is a variable for tests.
var identify = LookupDevice

// LookupDevice identifies device name in this process's network namespace.
// A name with no device gives a Device with only Name, NetNSCookie and
// Boot set.
func LookupDevice(name string) (Device, error) {
	d := Device{Name: name, Boot: owner.BootID()}
	c, err := netnsCookie()
	if err != nil {
		return d, err
	}
	d.NetNSCookie = c
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		// net has no exported sentinel for it.
		var ne *net.OpError
		if errors.As(err, &ne) && ne.Err != nil && ne.Err.Error() == "no such network interface" {
			return d, nil
		}
		return d, fmt.Errorf("device %s: %w", name, err)
	}
	d.Ifindex, d.MAC = ifi.Index, ifi.HardwareAddr.String()
	return d, nil
}

// netnsCookie is this process's network namespace cookie, 0 where the
// kernel has none.
func netnsCookie() (uint64, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("network namespace cookie: %w", err)
	}
	defer unix.Close(fd) // a probe socket: closing it cannot lose anything
	v, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE)
	// Kernels before 5.14 do not know the option (ENOPROTOOPT), nor do
	// emulators such as qemu-user (EINVAL): no cookie, the ifindex and MAC
	// still tell devices apart.
	if errors.Is(err, unix.ENOPROTOOPT) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("network namespace cookie: %w", err)
	}
	return v, nil
}

// check returns an error unless the device of that name found now is the
// one d was recorded from. The error says what differs and what to do;
// the entry then stays open.
func (d *Device) check() error {
	cur, err := identify(d.Name)
	if err != nil {
		return err
	}
	const discard = "if the device that was changed is gone, `rig restore --discard` drops the entry"
	switch {
	case d.Boot != "" && cur.Boot != "" && d.Boot != cur.Boot:
		return fmt.Errorf("device %s was changed in another boot (boot id %s, now %s): its previous value would go to whatever device has that name now; %s", d.Name, d.Boot, cur.Boot, discard)
	case d.NetNSCookie != 0 && cur.NetNSCookie != 0 && d.NetNSCookie != cur.NetNSCookie:
		return fmt.Errorf("device %s was changed in another network namespace (cookie %d, this process is in %d; the inode may match, the kernel reuses it): run `ip netns exec NAME rig restore` in the namespace where it was changed; %s", d.Name, d.NetNSCookie, cur.NetNSCookie, discard)
	case d.Ifindex == 0:
		return nil
	case cur.Ifindex == 0:
		return fmt.Errorf("device %s (ifindex %d, MAC %s) is not in this network namespace any more: %s", d.Name, d.Ifindex, d.MAC, discard)
	case cur.Ifindex != d.Ifindex || cur.MAC != d.MAC:
		return fmt.Errorf("device %s is now ifindex %d MAC %s, the change was made to ifindex %d MAC %s: not the same device (it was recreated); %s", d.Name, cur.Ifindex, cur.MAC, d.Ifindex, d.MAC, discard)
	}
	return nil
}
