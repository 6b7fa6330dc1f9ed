package check

import (
	"fmt"

	"github.com/rig-project/rig/internal/hostinfo"
)

// igmp warns on a cloud host (EC2, from DMI) where the requests are
// multicast and the kernel speaks IGMPv3: a VPC carries multicast only
// inside a Transit Gateway multicast domain, which speaks IGMPv2.
func (x *runner) igmp() {
	ifc := x.o.Iface
	switch {
	case ifc == "":
		x.add("net.igmp", Skip, "", "no --iface given")
		return
	case !x.o.Multicast:
		x.add("net.igmp", Skip, "", "requests are not multicast here (rig check --multicast when they are)")
		return
	}
	d, err := hostinfo.ReadDMI(x.fs)
	if err != nil {
		x.cannot("net.igmp", Warn, "", "cannot read the DMI identity: %v", err)
		return
	}
	if !d.EC2() {
		x.add("net.igmp", Skip, "", "not an Amazon EC2 instance (DMI sys_vendor %q): the network's multicast is the switch's business", d.SysVendor)
		return
	}
	v, forced, err := hostinfo.IGMPVersion(x.fs, ifc)
	if err != nil {
		x.cannot("net.igmp", Warn, "", "cannot read the IGMP version: %v", err)
		return
	}
	where := fmt.Sprintf("Amazon EC2 %s, multicast requests on %s", orNone(d.ProductName), ifc)
	tgw := fmt.Sprintf("sysctl -w net.ipv4.conf.%s.force_igmp_version=2 (keep it: echo 'net.ipv4.conf.%s.force_igmp_version = 2' > /etc/sysctl.d/90-rig-igmp.conf), "+
		"associate the subnets with a Transit Gateway multicast domain that has IGMPv2 support, and allow IGMP (IP protocol 2) in the security groups and network ACLs; "+
		"or send unicast requests (traffic.request: unicast; rig send --to, rig respond --listen): docs/aws.md", ifc, ifc)
	switch v {
	case 2:
		x.add("net.igmp", OK, "", "%s: IGMPv2 (%s), the Transit Gateway multicast domain's version; the requests go through the Transit Gateway and the replies go direct, so the path is asymmetric", where, forced)
	case 1:
		x.add("net.igmp", Warn, tgw, "%s: IGMPv1 forced (%s); a Transit Gateway multicast domain speaks IGMPv2", where, forced)
	default:
		x.add("net.igmp", Warn, tgw, "%s: IGMPv3 in force (force_igmp_version 0 on all and %s): a VPC carries multicast only in a Transit Gateway multicast domain, whose members must speak IGMPv2", where, ifc)
	}
}
