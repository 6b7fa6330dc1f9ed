package netlab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
	"unsafe"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/reflector"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// netnsDir is where named network namespaces are bind-mounted, shared with
// ip-netns(8) so `ip netns exec` finds rig's namespaces and vice versa.
const netnsDir = "/run/netns"

// procFS is the live /proc: namespaced sysctls only mean something on the
// running kernel, so a fake $RIG_HOST_ROOT tree is never right here.
var procFS = hostfs.FS{Root: "/"}

// Up builds lab name, or returns it if a complete lab of that name with the
// same options already exists. A partial lab (a crash half-way, a namespace
// deleted by hand) is torn down and rebuilt. A complete lab built with other
// options is an error matching os.ErrExist: it may be in use, so Up does not
// rebuild it behind the user's back.
//
// Up needs CAP_NET_ADMIN and CAP_SYS_ADMIN (an error matching
// os.ErrPermission says which is missing). On failure nothing is left behind.
func Up(ctx context.Context, name string, opts Options) (*Topology, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	o, err := opts.normalize(name)
	if err != nil {
		return nil, err
	}
	if err := checkPrivileges("build lab " + name); err != nil {
		return nil, err
	}
	unlock, err := lockDir()
	if err != nil {
		return nil, err
	}
	defer unlock()

	want := plan(name, o)
	if old, err := Load(name); err == nil {
		if cerr := old.Check(); cerr == nil {
			if !old.sameShape(want) {
				return nil, errorKind(os.ErrExist, "netlab: lab %q is already up with %s, asked for %s; run rig lab down --name %s first",
					name, old.shape(), want.shape(), name)
			}
			return old, nil
		}
	}
	// Missing, partial or broken: start from nothing.
	if err := down(name); err != nil {
		return nil, fmt.Errorf("netlab: clearing a partial lab %q: %w", name, err)
	}
	// An owner killed while building leaves namespaces without a
	// description: this record says whose they are until save.
	if o.Owner != nil {
		if err := writeBuilding(name, *o.Owner); err != nil {
			return nil, err
		}
	}
	if err := build(ctx, want); err != nil {
		return nil, errors.Join(fmt.Errorf("netlab: building lab %q: %w", name, err), down(name))
	}
	want.CreatedAt = time.Now().UTC()
	if err := want.save(); err != nil {
		return nil, errors.Join(err, down(name))
	}
	return want, nil
}

// Down removes lab name: its four namespaces (which takes their veths, the
// bridge and the tc filters with them) and its description. A lab that does
// not exist is not an error; use Exists to tell the user. A process still
// running inside a namespace keeps that namespace alive in the kernel after
// Down, but it no longer has a name.
func Down(name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	if !Exists(name) {
		return nil
	}
	if err := checkPrivileges("remove lab " + name); err != nil {
		return err
	}
	unlock, err := lockDir()
	if err != nil {
		return err
	}
	defer unlock()
	if err := down(name); err != nil {
		return fmt.Errorf("netlab: removing lab %q: %w", name, err)
	}
	return nil
}

// RemoveStale removes every lab whose owner no longer runs (see
// Listed.Stale), built or not, and returns them. It keeps going after a
// failure and joins the errors.
func RemoveStale() ([]Listed, error) {
	labs, err := List()
	if err != nil {
		return nil, err
	}
	var out []Listed
	var errs []error
	for _, l := range labs {
		if !l.Stale() {
			continue
		}
		l.Netns, _ = Present(l.Name)
		if err := Down(l.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, l)
	}
	return out, errors.Join(errs...)
}

// Exists reports whether any part of lab name is present: a namespace,
// the description file or the record of an unfinished build.
func Exists(name string) bool {
	ns, files := Present(name)
	return len(ns)+len(files) > 0
}

// Present lists the parts of lab name that exist now: its namespaces (of
// Namespaces(name), every name it may use) and its files (the description,
// the record of an unfinished build).
func Present(name string) (netns, files []string) {
	if ValidateName(name) != nil {
		return nil, nil
	}
	for _, ns := range Namespaces(name) {
		if _, err := os.Lstat(filepath.Join(netnsDir, ns)); err == nil {
			netns = append(netns, ns)
		}
	}
	for _, p := range labFiles(name) {
		if _, err := os.Lstat(p); err == nil {
			files = append(files, p)
		}
	}
	return netns, files
}

// labFiles are the description, the building record and the temporary
// files of an atomic write of either that an owner killed mid-write left.
func labFiles(name string) []string {
	tmp, _ := filepath.Glob(filepath.Join(Dir(), "."+name+".*.tmp*"))
	return append([]string{Path(name), buildingPath(name)}, tmp...)
}

func down(name string) error {
	var errs []error
	for _, ns := range Namespaces(name) {
		errs = append(errs, deleteNetns(ns))
	}
	for _, p := range labFiles(name) {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Do runs fn on a locked OS thread switched into the named network
// namespace. Sockets fn creates stay in that namespace for life and may be
// used from any goroutine afterwards. The thread is never returned to the
// scheduler: the goroutine exits locked, so the runtime discards the thread
// and no other goroutine ever runs in the wrong namespace. A panic in fn is
// re-raised in the caller, and runtime.Goexit (t.FailNow) ends the caller
// too. A missing namespace gives an error matching
// os.ErrNotExist.
func Do(nsName string, fn func() error) error {
	if err := checkNetnsName(nsName); err != nil {
		return err
	}
	type result struct {
		err    error
		panic  any
		goexit bool
	}
	done := make(chan result, 1)
	go func() {
		// The thread goes back to the pool only if it is back in its own
		// network namespace; otherwise it dies with the goroutine. That
		// matters for the main thread, which the runtime parks instead of
		// ending: /proc/self/net follows it, so a main thread left in a lab
		// namespace would show the lab's routes to the whole process.
		runtime.LockOSThread()
		orig, oerr := netns.Get()
		r := result{goexit: true}
		defer func() {
			if p := recover(); p != nil {
				r = result{panic: p}
			}
			if oerr == nil {
				if netns.Set(orig) == nil {
					runtime.UnlockOSThread()
				}
				orig.Close()
			}
			done <- r
		}()
		ns, err := netns.GetFromName(nsName)
		if err != nil {
			r = result{err: fmt.Errorf("netlab: netns %q: %w", nsName, err)}
			return
		}
		defer ns.Close()
		if err := netns.Set(ns); err != nil {
			r = result{err: fmt.Errorf("netlab: entering netns %q: %w", nsName, err)}
			return
		}
		r = result{err: fn()}
	}()
	r := <-done
	switch {
	case r.panic != nil:
		panic(r.panic)
	case r.goexit:
		// fn called runtime.Goexit (t.FailNow in a test): end the caller too.
		runtime.Goexit()
	}
	return r.err
}

// PassXDP readies role r's switch port for the reflector in driver mode
// on r's veth: it attaches a program that passes every frame to the port
// (reflector.AttachPass), which veth needs to deliver the reflector's
// XDP_TX frames, until the closer is closed. The link is the calling
// process's file, pinned nowhere: however that process ends, the kernel
// detaches the program, and Down takes the port itself. Nothing else is
// needed: attaching XDP to a veth turns TSO off on its peer
// (veth_fix_features), so forwarded frames reach the program's NAPI.
func (t *Topology) PassXDP(r Role) (io.Closer, error) {
	h, err := t.Host(r)
	if err != nil {
		return nil, err
	}
	var c io.Closer
	err = Do(t.Switch.Netns, func() (err error) { c, err = reflector.AttachPass(h.Port, h.PortIfindex); return err })
	if err != nil {
		return nil, fmt.Errorf("netlab: lab %q: %w", t.Name, err)
	}
	return c, nil
}

// Do runs fn in the namespace of role r; see the package function Do.
func (t *Topology) Do(r Role, fn func() error) error {
	ns := t.Netns(r)
	if ns == "" {
		return fmt.Errorf("netlab: unknown role %q", r)
	}
	return Do(ns, fn)
}

func checkNetnsName(ns string) error {
	if ns == "" || ns == "." || ns == ".." || filepath.Base(ns) != ns {
		return fmt.Errorf("netlab: %q is not a network namespace name", ns)
	}
	return nil
}

// checkPrivileges fails early with the capabilities to grant, rather than
// with an EPERM from the middle of a build.
func checkPrivileges(what string) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("netlab: reading capabilities: %w", err)
	}
	var missing []string
	if data[0].Effective&(1<<unix.CAP_NET_ADMIN) == 0 {
		missing = append(missing, "CAP_NET_ADMIN")
	}
	if data[0].Effective&(1<<unix.CAP_SYS_ADMIN) == 0 {
		missing = append(missing, "CAP_SYS_ADMIN")
	}
	if len(missing) > 0 {
		return errorKind(os.ErrPermission, "netlab: to %s rig needs CAP_NET_ADMIN (veths, bridge, tc) and CAP_SYS_ADMIN (namespace mounts), missing %s: run it as root (sudo)",
			what, strings.Join(missing, " and "))
	}
	return nil
}

// lockDir serialises Up and Down across processes with an flock on the
// state directory, so two `rig lab up` never build the same lab at once.
func lockDir() (unlock func(), err error) {
	dir := Dir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("netlab: state directory: %w", err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("netlab: opening %s: %w", dir, err)
	}
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netlab: locking %s: %w", dir, err)
	}
	return func() { unix.Close(fd) }, nil
}

// ensureNetnsDir makes /run/netns a shared mount point the way ip-netns(8)
// does, so namespace mounts propagate to mount namespaces created later
// (`ip netns exec` and rig processes behave the same whoever created it).
func ensureNetnsDir() error {
	if err := os.MkdirAll(netnsDir, 0o755); err != nil {
		return err
	}
	for range 2 {
		err := unix.Mount("", netnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("making %s shared: %w", netnsDir, err)
		}
		// Not a mount point yet: bind it onto itself, then retry.
		if err := unix.Mount(netnsDir, netnsDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind-mounting %s: %w", netnsDir, err)
		}
	}
	return fmt.Errorf("making %s a shared mount point failed", netnsDir)
}

// createNetns creates a named network namespace on a throw-away thread:
// unshare moves the thread into the new namespace, the bind mount names it,
// and the thread dies with it instead of having to switch back.
func createNetns(name string) error {
	if err := ensureNetnsDir(); err != nil {
		return err
	}
	path := filepath.Join(netnsDir, name)
	done := make(chan error, 1)
	go func() {
		// Unshare moves this thread into the new netns; it returns to the
		// pool only once it is back in its own (see Do for why).
		runtime.LockOSThread()
		if orig, err := netns.Get(); err == nil {
			defer func() {
				if netns.Set(orig) == nil {
					runtime.UnlockOSThread()
				}
				orig.Close()
			}()
		}
		f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
		if err != nil {
			done <- fmt.Errorf("creating netns %q: %w", name, err)
			return
		}
		f.Close()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			os.Remove(path)
			done <- fmt.Errorf("creating netns %q: unshare: %w", name, err)
			return
		}
		self := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
		if err := unix.Mount(self, path, "none", unix.MS_BIND, ""); err != nil {
			os.Remove(path)
			done <- fmt.Errorf("creating netns %q: bind mount: %w", name, err)
			return
		}
		done <- nil
	}()
	return <-done
}

// deleteNetns unmounts and removes a named namespace; a missing one, or a
// stale file that is no longer a mount, is fine.
func deleteNetns(name string) error {
	path := filepath.Join(netnsDir, name)
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmounting netns %q: %w", name, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing netns %q: %w", name, err)
	}
	return nil
}

// nsHandle is an open namespace plus a netlink handle bound to it, so
// netlink work needs no thread switching.
type nsHandle struct {
	name string
	fd   netns.NsHandle
	*netlink.Handle
}

func openNS(name string) (*nsHandle, error) {
	fd, err := netns.GetFromName(name)
	if err != nil {
		return nil, fmt.Errorf("netns %q: %w", name, err)
	}
	h, err := netlink.NewHandleAt(fd)
	if err != nil {
		fd.Close()
		return nil, fmt.Errorf("netlink in netns %q: %w", name, err)
	}
	return &nsHandle{name: name, fd: fd, Handle: h}, nil
}

func (n *nsHandle) close() {
	n.Handle.Close()
	n.fd.Close()
}

// openAll opens every namespace of t, keyed by role.
func openAll(t *Topology) (map[Role]*nsHandle, func(), error) {
	hs := map[Role]*nsHandle{}
	closeAll := func() {
		for _, h := range hs {
			h.close()
		}
	}
	for _, r := range t.roles() {
		h, err := openNS(t.Netns(r))
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		hs[r] = h
	}
	return hs, closeAll, nil
}

// disableIPv6 sets disable_ipv6 for the given conf entries ("all",
// "default", an interface) inside ns. IPv6 on the veths would put MLD
// reports and neighbour discovery into every capture. A kernel without IPv6
// has nothing to disable.
func disableIPv6(ns string, entries ...string) error {
	return Do(ns, func() error {
		if !procFS.Exists("/proc/sys/net/ipv6") {
			return nil
		}
		for _, e := range entries {
			p := "/proc/sys/net/ipv6/conf/" + e + "/disable_ipv6"
			if err := procFS.WriteFile(p, "1"); err != nil {
				return fmt.Errorf("netns %s: %s: %w", ns, p, err)
			}
		}
		return nil
	})
}

var mcastNet = &net.IPNet{IP: net.IPv4(224, 0, 0, 0).To4(), Mask: net.CIDRMask(4, 32)}

// build creates the namespaces, links, addresses, routes and mirror of t
// and fills in the ifindexes and MACs. The caller tears down on error.
func build(ctx context.Context, t *Topology) error {
	for _, ns := range t.Namespaces() {
		if err := createNetns(ns); err != nil {
			return err
		}
	}
	hs, closeAll, err := openAll(t)
	if err != nil {
		return err
	}
	defer closeAll()
	sw := hs[Switch]

	for _, r := range t.roles() {
		if err := disableIPv6(t.Netns(r), "all", "default"); err != nil {
			return err
		}
		lo, err := hs[r].LinkByName("lo")
		if err == nil {
			err = hs[r].LinkSetUp(lo)
		}
		if err != nil {
			return fmt.Errorf("netns %s: lo up: %w", t.Netns(r), err)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}

	// Hub mode: ageing 0 forgets every MAC at once, so the bridge floods
	// like a hub; without snooping, multicast reaches every port.
	zero, off := uint32(0), false
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: t.Switch.Bridge, MTU: t.MTU},
		AgeingTime: &zero, MulticastSnooping: &off}
	if err := sw.LinkAdd(br); err != nil {
		return fmt.Errorf("switch: bridge %s: %w", t.Switch.Bridge, err)
	}
	brLink, err := sw.LinkByName(t.Switch.Bridge)
	if err != nil {
		return fmt.Errorf("switch: bridge %s: %w", t.Switch.Bridge, err)
	}
	t.Switch.BridgeIfindex = brLink.Attrs().Index

	for _, r := range t.hostRoles() {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, _ := t.Host(r)
		la := netlink.LinkAttrs{Name: h.Interface, MTU: t.MTU}
		if r == Responder {
			// The peer inherits the queue counts: veth_xmit picks the
			// receiving rx queue from the sending tx queue.
			la.NumRxQueues, la.NumTxQueues = t.RxQueues, t.TxQueues
		}
		// Created from inside the host namespace with the peer placed
		// straight into the switch: neither end ever exists in the host's
		// own namespace.
		veth := &netlink.Veth{LinkAttrs: la, PeerName: h.Port, PeerNamespace: netlink.NsFd(int(sw.fd))}
		if err := hs[r].LinkAdd(veth); err != nil {
			return fmt.Errorf("%s: veth %s/%s: %w", r, h.Interface, h.Port, err)
		}
		if err := disableIPv6(h.Netns, h.Interface); err != nil {
			return err
		}
		if err := disableIPv6(t.Switch.Netns, h.Port); err != nil {
			return err
		}
		l, err := hs[r].LinkByName(h.Interface)
		if err != nil {
			return fmt.Errorf("%s: %s: %w", r, h.Interface, err)
		}
		h.Ifindex, h.MAC = l.Attrs().Index, l.Attrs().HardwareAddr.String()
		p, err := sw.LinkByName(h.Port)
		if err != nil {
			return fmt.Errorf("switch: %s: %w", h.Port, err)
		}
		h.PortIfindex = p.Attrs().Index
		// The capture port stays out of the bridge: it receives only the
		// mirror's copies, so each packet appears there exactly once.
		if r != Capture {
			if err := sw.LinkSetMasterByIndex(p, t.Switch.BridgeIfindex); err != nil {
				return fmt.Errorf("switch: %s into %s: %w", h.Port, t.Switch.Bridge, err)
			}
		}
		if err := sw.LinkSetUp(p); err != nil {
			return fmt.Errorf("switch: %s up: %w", h.Port, err)
		}
		if h.Addr.IsValid() {
			a := &netlink.Addr{IPNet: &net.IPNet{IP: h.Addr.AsSlice(), Mask: net.CIDRMask(t.Subnet.Bits(), 32)}}
			if err := hs[r].AddrAdd(l, a); err != nil {
				return fmt.Errorf("%s: address %v on %s: %w", r, h.Addr, h.Interface, err)
			}
		}
		if err := hs[r].LinkSetUp(l); err != nil {
			return fmt.Errorf("%s: %s up: %w", r, h.Interface, err)
		}
		if r != Capture {
			rt := &netlink.Route{LinkIndex: h.Ifindex, Dst: mcastNet, Scope: netlink.SCOPE_LINK}
			if err := hs[r].RouteAdd(rt); err != nil {
				return fmt.Errorf("%s: route 224.0.0.0/4 dev %s: %w", r, h.Interface, err)
			}
		}
	}
	if err := disableIPv6(t.Switch.Netns, t.Switch.Bridge); err != nil {
		return err
	}
	if err := sw.LinkSetUp(brLink); err != nil {
		return fmt.Errorf("switch: %s up: %w", t.Switch.Bridge, err)
	}

	if t.StaticNeighbors {
		var pairs [][2]*Host
		for _, r := range t.ResponderHosts() {
			pairs = append(pairs, [2]*Host{&t.Sender, r}, [2]*Host{r, &t.Sender})
		}
		for _, p := range pairs {
			mac, _ := net.ParseMAC(p[1].MAC)
			n := &netlink.Neigh{LinkIndex: p[0].Ifindex, Family: netlink.FAMILY_V4,
				State: netlink.NUD_PERMANENT, IP: p[1].Addr.AsSlice(), HardwareAddr: mac}
			if err := hs[p[0].Role].NeighAdd(n); err != nil {
				return fmt.Errorf("%s: neighbour %v: %w", p[0].Role, p[1].Addr, err)
			}
		}
	}

	if !t.TxChecksumOffload {
		for _, h := range append([]*Host{&t.Sender}, t.ResponderHosts()...) {
			if err := Do(h.Netns, func() error { return setTxChecksum(h.Interface, false) }); err != nil {
				return fmt.Errorf("%s: %w", h.Role, err)
			}
		}
	}

	target := t.Capture.PortIfindex
	if t.VXLAN != nil {
		if target, err = addVXLAN(sw, t); err != nil {
			return fmt.Errorf("switch: vxlan mirror %s: %w", t.VXLAN.Device, err)
		}
	}
	for _, h := range append([]*Host{&t.Sender}, t.ResponderHosts()...) {
		if err := addMirror(sw, h.PortIfindex, target); err != nil {
			return fmt.Errorf("switch: mirror %s → %s: %w", h.Port, t.Capture.Port, err)
		}
	}
	return ctx.Err()
}

// addVXLAN builds the encapsulating mirror: an address on the switch's
// capture port, a static neighbour for the capture host's underlay
// address (its MAC: the capture interface), and a vxlan device sending to
// it. It returns the device's ifindex, the mirror's target.
func addVXLAN(sw *nsHandle, t *Topology) (int, error) {
	v := t.VXLAN
	port, err := sw.LinkByIndex(t.Capture.PortIfindex)
	if err != nil {
		return 0, err
	}
	a := &netlink.Addr{IPNet: &net.IPNet{IP: v.Local.AsSlice(), Mask: net.CIDRMask(30, 32)}}
	if err := sw.AddrAdd(port, a); err != nil {
		return 0, fmt.Errorf("address %v on %s: %w", v.Local, t.Capture.Port, err)
	}
	mac, err := net.ParseMAC(t.Capture.MAC)
	if err != nil {
		return 0, err
	}
	n := &netlink.Neigh{LinkIndex: t.Capture.PortIfindex, Family: netlink.FAMILY_V4, State: netlink.NUD_PERMANENT,
		IP: v.Remote.AsSlice(), HardwareAddr: mac}
	if err := sw.NeighAdd(n); err != nil {
		return 0, fmt.Errorf("neighbour %v: %w", v.Remote, err)
	}
	vx := &netlink.Vxlan{LinkAttrs: netlink.LinkAttrs{Name: v.Device, MTU: t.MTU}, VxlanId: int(v.VNI),
		VtepDevIndex: t.Capture.PortIfindex, SrcAddr: v.Local.AsSlice(), Group: v.Remote.AsSlice(), Port: tstampVXLANPort}
	if err := sw.LinkAdd(vx); err != nil {
		return 0, err
	}
	if err := disableIPv6(t.Switch.Netns, v.Device); err != nil {
		return 0, err
	}
	l, err := sw.LinkByName(v.Device)
	if err != nil {
		return 0, err
	}
	if err := sw.LinkSetUp(l); err != nil {
		return 0, err
	}
	v.Ifindex = l.Attrs().Index
	return v.Ifindex, nil
}

// tstampVXLANPort is VXLAN's IANA port (tstamp.VXLANPort; netlab does not
// import tstamp).
const tstampVXLANPort = 4789

// addMirror copies every frame entering port (i.e. sent by the host behind
// it) out of capturePort. U32 with no selector matches all: matchall and
// flower are not built into every kernel (the CI kernel lacks both). The
// mirred action must be egress *mirror* with PIPE; the library default is
// redirect + STOLEN, which would divert the traffic instead of copying it.
func addMirror(sw *nsHandle, port, capturePort int) error {
	q := &netlink.GenericQdisc{QdiscType: "clsact", QdiscAttrs: netlink.QdiscAttrs{
		LinkIndex: port, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT}}
	if err := sw.QdiscAdd(q); err != nil {
		return fmt.Errorf("clsact qdisc: %w", err)
	}
	mirror := &netlink.MirredAction{
		ActionAttrs:  netlink.ActionAttrs{Action: netlink.TC_ACT_PIPE},
		MirredAction: netlink.TCA_EGRESS_MIRROR,
		Ifindex:      capturePort,
	}
	f := &netlink.U32{FilterAttrs: netlink.FilterAttrs{LinkIndex: port, Parent: netlink.HANDLE_MIN_INGRESS,
		Priority: 1, Protocol: unix.ETH_P_ALL}, Actions: []netlink.Action{mirror}}
	if err := sw.FilterAdd(f); err != nil {
		return fmt.Errorf("u32 mirred filter: %w", err)
	}
	return nil
}

// Check compares the live lab with its description: every namespace,
// interface (same ifindex and MAC, up), address, multicast route, bridge
// membership, responder queue count and mirror filter. It returns all
// differences joined; a missing namespace matches os.ErrNotExist.
func (t *Topology) Check() error {
	if err := t.Validate(); err != nil {
		return err
	}
	hs, closeAll, err := openAll(t)
	if err != nil {
		return fmt.Errorf("netlab: lab %q: %w", t.Name, err)
	}
	defer closeAll()
	sw := hs[Switch]
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	brLink, err := sw.LinkByName(t.Switch.Bridge)
	switch {
	case err != nil:
		bad("switch: bridge %s: %w", t.Switch.Bridge, err)
	case brLink.Attrs().Index != t.Switch.BridgeIfindex:
		bad("switch: bridge %s has ifindex %d, described %d", t.Switch.Bridge, brLink.Attrs().Index, t.Switch.BridgeIfindex)
	case brLink.Attrs().Flags&net.FlagUp == 0:
		bad("switch: bridge %s is down", t.Switch.Bridge)
	}
	for _, r := range t.hostRoles() {
		h, _ := t.Host(r)
		l, err := hs[r].LinkByName(h.Interface)
		if err != nil {
			bad("%s: %s: %w", r, h.Interface, err)
			continue
		}
		a := l.Attrs()
		if a.Index != h.Ifindex || a.HardwareAddr.String() != h.MAC {
			bad("%s: %s is ifindex %d mac %s, described %d %s", r, h.Interface, a.Index, a.HardwareAddr, h.Ifindex, h.MAC)
		}
		if a.Flags&net.FlagUp == 0 {
			bad("%s: %s is down", r, h.Interface)
		}
		if r != Capture {
			var on bool
			err := Do(h.Netns, func() (err error) { on, err = txChecksum(h.Interface); return err })
			if err != nil || on != t.TxChecksumOffload {
				bad("%s: %s tx checksum offload %v (%v), described %v", r, h.Interface, on, err, t.TxChecksumOffload)
			}
		}
		if r == Responder && (a.NumRxQueues != t.RxQueues || a.NumTxQueues != t.TxQueues) {
			bad("%s: %s has rx %d tx %d queues, described %d %d", r, h.Interface, a.NumRxQueues, a.NumTxQueues, t.RxQueues, t.TxQueues)
		}
		if h.Addr.IsValid() {
			addrs, err := hs[r].AddrList(l, netlink.FAMILY_V4)
			found := false
			for _, ad := range addrs {
				ones, _ := ad.Mask.Size()
				if ad.IP.Equal(h.Addr.AsSlice()) && ones == t.Subnet.Bits() {
					found = true
				}
			}
			if err != nil || !found {
				bad("%s: %s lacks address %v/%d (%v)", r, h.Interface, h.Addr, t.Subnet.Bits(), err)
			}
			routes, err := hs[r].RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{LinkIndex: h.Ifindex, Dst: mcastNet},
				netlink.RT_FILTER_OIF|netlink.RT_FILTER_DST)
			if err != nil || len(routes) == 0 {
				bad("%s: no route 224.0.0.0/4 dev %s (%v)", r, h.Interface, err)
			}
		}
		p, err := sw.LinkByName(h.Port)
		if err != nil {
			bad("switch: %s: %w", h.Port, err)
			continue
		}
		pa := p.Attrs()
		wantMaster := t.Switch.BridgeIfindex
		if r == Capture {
			wantMaster = 0
		}
		if pa.Index != h.PortIfindex || pa.MasterIndex != wantMaster || pa.Flags&net.FlagUp == 0 {
			bad("switch: %s is ifindex %d master %d up %v, want %d master %d up", h.Port, pa.Index, pa.MasterIndex, pa.Flags&net.FlagUp != 0, h.PortIfindex, wantMaster)
		}
		if r != Capture {
			target := t.Capture.PortIfindex
			if t.VXLAN != nil {
				target = t.VXLAN.Ifindex
			}
			if err := checkMirror(sw, p, target); err != nil {
				bad("switch: %s: %w", h.Port, err)
			}
		}
	}
	if v := t.VXLAN; v != nil {
		l, err := sw.LinkByName(v.Device)
		switch {
		case err != nil:
			bad("switch: vxlan %s: %w", v.Device, err)
		case l.Attrs().Index != v.Ifindex || l.Attrs().Flags&net.FlagUp == 0:
			bad("switch: vxlan %s is ifindex %d up %v, described %d", v.Device, l.Attrs().Index, l.Attrs().Flags&net.FlagUp != 0, v.Ifindex)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("netlab: lab %q differs from its description: %w", t.Name, errors.Join(errs...))
	}
	return nil
}

func checkMirror(sw *nsHandle, port netlink.Link, capturePort int) error {
	fs, err := sw.FilterList(port, netlink.HANDLE_MIN_INGRESS)
	if err != nil {
		return fmt.Errorf("listing ingress filters: %w", err)
	}
	for _, f := range fs {
		u, ok := f.(*netlink.U32)
		if !ok {
			continue
		}
		for _, a := range u.Actions {
			m, ok := a.(*netlink.MirredAction)
			if ok && m.MirredAction == netlink.TCA_EGRESS_MIRROR && m.Ifindex == capturePort && m.Attrs().Action == netlink.TC_ACT_PIPE {
				return nil
			}
		}
	}
	return fmt.Errorf("no ingress u32 filter with mirred egress mirror (pipe) to ifindex %d", capturePort)
}

// ifreqPtr is struct ifreq with its union holding a pointer, as
// SIOCETHTOOL wants. A typed pointer field keeps the GC and stack copying
// aware of the ethtool_value it points to.
type ifreqPtr struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [16]byte
}

type ethtoolValue struct{ cmd, data uint32 }

// ethtoolValueIoctl runs a legacy get/set ethtool_value command on ifname in
// the calling thread's namespace. ethtool netlink (mdlayher/ethtool) has no
// features call yet; the legacy ioctl is small and always present.
func ethtoolValueIoctl(ifname string, cmd, data uint32) (uint32, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	ev := ethtoolValue{cmd: cmd, data: data}
	var ifr ifreqPtr
	copy(ifr.name[:unix.IFNAMSIZ-1], ifname)
	ifr.data = unsafe.Pointer(&ev)
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr))); errno != 0 {
		return 0, errno
	}
	return ev.data, nil
}

// setTxChecksum switches TX checksum offload on a veth. With it on (the
// veth default) packets cross the lab with the UDP checksum never filled
// in, so every captured frame and pcap shows a bad checksum; off, the stack
// computes it as it would for a NIC without offload.
func setTxChecksum(ifname string, on bool) error {
	var v uint32
	if on {
		v = 1
	}
	if _, err := ethtoolValueIoctl(ifname, unix.ETHTOOL_STXCSUM, v); err != nil {
		return fmt.Errorf("%s: setting tx checksum offload %v: %w", ifname, on, err)
	}
	return nil
}

func txChecksum(ifname string) (bool, error) {
	v, err := ethtoolValueIoctl(ifname, unix.ETHTOOL_GTXCSUM, 0)
	if err != nil {
		return false, fmt.Errorf("%s: reading tx checksum offload: %w", ifname, err)
	}
	return v != 0, nil
}
