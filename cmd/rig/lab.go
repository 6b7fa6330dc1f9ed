package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/owner"
	"github.com/rig-project/rig/internal/wire"
)

func init() {
	register(&command{name: "lab", summary: "build, show or remove the emulated sender/responder/capture topology", subs: []*command{
		{name: "up", summary: "build it: sender, responder and capture namespaces on a bridge in a switch namespace, both directions mirrored to capture",
			usage: "[NAME] [--name NAME] [--rx-queues N] [--tx-queues N] [--mtu N] [--subnet CIDR] [--dynamic-neighbors] [--tx-csum-offload] [--mirror span|vxlan] [--responders N] [--format text|json]", flags: labUpFlags},
		{name: "down", summary: "remove it (a lab that is not there is fine)",
			usage: "[NAME] [--name NAME]", flags: labDownFlags},
		{name: "show", summary: "print a lab and whether the live namespaces still match it",
			usage: "[NAME] [--name NAME] [--format text|json]", flags: labShowFlags},
		{name: "list", summary: "print every lab: its owner process, whether that still runs, when built",
			usage: "[--format text|json]", flags: labListFlags},
	}})
}

// labName takes the name from --name or a single positional argument.
func labName(fs *flag.FlagSet, flagName string) (string, error) {
	name := flagName
	switch fs.NArg() {
	case 0:
	case 1:
		if flagName != netlab.DefaultName && flagName != fs.Arg(0) {
			return "", cli.Usagef("name given twice (--name %s and %s)", flagName, fs.Arg(0))
		}
		name = fs.Arg(0)
	default:
		return "", cli.Usagef("unexpected arguments %q", fs.Args()[1:])
	}
	if err := netlab.ValidateName(name); err != nil {
		return "", cli.Usage(err)
	}
	return name, nil
}

func labUpFlags(fs *flag.FlagSet) func(context.Context) error {
	name := fs.String("name", netlab.DefaultName, "lab name: a-z, 0-9, '-', at most 10 characters; prefixes every namespace and interface")
	rxq := fs.Int("rx-queues", 1, "RX queues of the responder veth (1.."+fmt.Sprint(netlab.MaxQueues)+")")
	txq := fs.Int("tx-queues", 0, "TX queues of the responder veth (default: same as --rx-queues)")
	mtu := fs.Int("mtu", netlab.DefaultMTU, "MTU of every lab interface")
	subnet := fs.String("subnet", "", "IPv4 prefix of the lab (default 10.99.X.0/24, X from the name)")
	dyn := fs.Bool("dynamic-neighbors", false, "leave ARP to the kernel instead of permanent sender/responder neighbour entries")
	csum := fs.Bool("tx-csum-offload", false, "keep veth TX checksum offload (captured UDP checksums are then left unfilled)")
	mirror := fs.String("mirror", "span", "span: the capture port receives copies of the frames; vxlan: VXLAN-encapsulated copies (UDP 4789, VNI "+fmt.Sprint(netlab.MirrorVNI)+"), as AWS VPC Traffic Mirroring delivers them (rig capture --vxlan)")
	responders := fs.Int("responders", 1, fmt.Sprintf("responder namespaces on the bridge (1..%d): every one hears each multicast request (fan-out; rig respond --id 0..N-1), all mirrored to the capture", netlab.MaxResponders))
	format := addFormat(fs, "json: the topology as stored", "text", "json")
	return func(ctx context.Context) error {
		if *mirror != "span" && *mirror != "vxlan" {
			return cli.Usagef("--mirror %q: want span or vxlan", *mirror)
		}
		if *responders < 1 || *responders > netlab.MaxResponders {
			return cli.Usagef("--responders %d: want 1..%d", *responders, netlab.MaxResponders)
		}
		n, err := labName(fs, *name)
		if err != nil {
			return err
		}
		opts := netlab.Options{RxQueues: *rxq, TxQueues: *txq, MTU: *mtu, DynamicNeighbors: *dyn, TxChecksumOffload: *csum, MirrorVXLAN: *mirror == "vxlan", Responders: *responders}
		if *subnet != "" {
			p, err := netip.ParsePrefix(*subnet)
			if err != nil {
				return cli.Usagef("--subnet %q: %v (want e.g. 10.99.7.0/24)", *subnet, err)
			}
			opts.Subnet = p
		}
		start := time.Now()
		topo, err := netlab.Up(ctx, n, opts)
		if err != nil {
			return err
		}
		if format.value == "json" {
			return printJSON(os.Stdout, topo)
		}
		state := "up"
		if topo.CreatedAt.Before(start) {
			state = "already up since " + topo.CreatedAt.Format(time.RFC3339)
		}
		printLab(os.Stdout, topo, state)
		printLabUsage(os.Stdout, topo, wire.NewRunID())
		return nil
	}
}

func labDownFlags(fs *flag.FlagSet) func(context.Context) error {
	name := fs.String("name", netlab.DefaultName, "lab name")
	return func(ctx context.Context) error {
		n, err := labName(fs, *name)
		if err != nil {
			return err
		}
		if !netlab.Exists(n) {
			fmt.Printf("lab %s: not present, nothing to remove\n", n)
			return nil
		}
		ns, files := netlab.Present(n)
		if err := netlab.Down(n); err != nil {
			return err
		}
		if len(ns) > 0 { // a build killed before its first namespace has none
			files = append([]string{namespaceList(ns)}, files...)
		}
		fmt.Printf("lab %s: removed %s\n", n, strings.Join(files, " and "))
		return nil
	}
}

func labShowFlags(fs *flag.FlagSet) func(context.Context) error {
	name := fs.String("name", netlab.DefaultName, "lab name")
	format := addFormat(fs, "json: the stored description", "text", "json")
	return func(ctx context.Context) error {
		n, err := labName(fs, *name)
		if err != nil {
			return err
		}
		topo, err := netlab.Load(n)
		if err != nil {
			return err
		}
		if format.value == "json" {
			return printJSON(os.Stdout, topo)
		}
		state := "up since " + topo.CreatedAt.Format(time.RFC3339)
		cerr := topo.Check()
		if cerr != nil {
			state = "BROKEN (rig lab up --name " + n + " rebuilds it)"
		}
		printLab(os.Stdout, topo, state)
		if cerr != nil {
			return cerr
		}
		printLabUsage(os.Stdout, topo, wire.NewRunID())
		return nil
	}
}

func printJSON(w io.Writer, t *netlab.Topology) error {
	b, err := t.MarshalIndent()
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func printLab(w io.Writer, t *netlab.Topology, state string) {
	neigh := "permanent sender/responder neighbour entries"
	if !t.StaticNeighbors {
		neigh = "dynamic ARP"
	}
	csum := "checksums computed in software"
	if t.TxChecksumOffload {
		csum = "tx checksum offload on (captured UDP checksums unfilled)"
	}
	fmt.Fprintf(w, "lab %s: %s\n  subnet %v, mtu %d, responder veth %d rx / %d tx queues, %s, %s, IPv6 off\n\n",
		t.Name, state, t.Subnet, t.MTU, t.RxQueues, t.TxQueues, neigh, csum)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  ROLE\tNETNS\tINTERFACE\tIFINDEX\tADDRESS\tMAC\tSWITCH PORT")
	roles := []netlab.Role{netlab.Sender}
	for _, h := range t.ResponderHosts() {
		roles = append(roles, h.Role)
	}
	for _, r := range append(roles, netlab.Capture) {
		h, _ := t.Host(r)
		addr := "-"
		if h.Addr.IsValid() {
			addr = netip.PrefixFrom(h.Addr, t.Subnet.Bits()).String()
		}
		port := h.Port + " (bridged)"
		if r == netlab.Capture {
			port = h.Port + " (mirror of both directions)"
			if v := t.VXLAN; v != nil {
				port = fmt.Sprintf("%s (VXLAN copies of both directions: %s VNI %d, %v → %v:4789)", h.Port, v.Device, v.VNI, v.Local, v.Remote)
			}
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\t%s\t%s\n", r, h.Netns, h.Interface, h.Ifindex, addr, h.MAC, port)
	}
	fmt.Fprintf(tw, "  switch\t%s\t%s (bridge, hub mode)\t%d\t-\t-\t-\n", t.Switch.Netns, t.Switch.Bridge, t.Switch.BridgeIfindex)
	tw.Flush()
}

// printLabUsage prints the probes' command lines for lab t, all with
// runID: rig respond and rig capture accept only the run they are given.
func printLabUsage(w io.Writer, t *netlab.Topology, runID uint64) {
	ex := func(r netlab.Role) string { return strings.Join(t.Exec(r), " ") }
	fmt.Fprintf(w, "\nuse it (start responder and capture first; multicast is routed out of the lab veth; any run id will do, the same for all three):\n")
	run := " --run-id " + wire.FormatRunID(runID)
	fanout := run
	for i, h := range t.ResponderHosts() {
		id := ""
		if t.Responders() > 1 {
			id, fanout = fmt.Sprintf(" --id %d", i), run+fmt.Sprintf(" --responders %d", t.Responders())
		}
		fmt.Fprintf(w, "  %s rig respond --iface %s%s%s &    # %v\n", ex(h.Role), h.Interface, run, id, h.Addr)
	}
	vx := ""
	if t.VXLAN != nil {
		vx = " --vxlan"
	}
	fmt.Fprintf(w, "  %s rig capture --iface %s%s%s --duration 20s &    # sees every request and reply once\n", ex(netlab.Capture), t.Capture.Interface, vx, fanout)
	fmt.Fprintf(w, "  %s rig send --iface %s%s --count 10000    # %v\n", ex(netlab.Sender), t.Sender.Interface, fanout, t.Sender.Addr)
	fmt.Fprintf(w, "  description: %s\n  remove:      rig lab down --name %s\n", netlab.Path(t.Name), t.Name)
}

// labList prints every lab described on this machine: who owns it and
// whether that process still runs. A lab whose owner is gone (a rig run
// killed with SIGKILL) is stale: rig restore and the next rig run remove it.
func labListFlags(fs *flag.FlagSet) func(context.Context) error {
	format := addFormat(fs, "", "text", "json")
	return func(ctx context.Context) error {
		if err := noArgs(fs); err != nil {
			return err
		}
		w := os.Stdout
		labs, err := netlab.List()
		if err != nil {
			return err
		}
		type row struct {
			Name    string         `json:"name"`
			Owner   *owner.Process `json:"owner,omitempty"`
			Alive   *bool          `json:"owner_alive,omitempty"`
			State   string         `json:"state"`
			Created time.Time      `json:"created_at,omitzero"`
			Error   string         `json:"error,omitempty"`
		}
		rows := []row{}
		for _, l := range labs {
			r := row{Name: l.Name}
			switch t := l.Topology; {
			case l.Building != nil:
				alive := l.Building.Alive()
				r.Owner, r.Alive, r.Created = l.Building, &alive, l.Building.Since
				r.State = "being built"
				if !alive {
					r.State = "stale: its build never finished and its owner no longer runs (rig restore removes it)"
				}
			case t == nil:
				r.State, r.Error = "unreadable (rig lab down --name "+l.Name+" removes it)", l.Err.Error()
			case t.Owner == nil:
				r.State, r.Created = "kept (built by hand: rig lab down removes it)", t.CreatedAt
			default:
				alive := t.Owner.Alive()
				r.Owner, r.Alive, r.Created = t.Owner, &alive, t.CreatedAt
				r.State = "in use"
				if !alive {
					r.State = "stale: its owner no longer runs (rig restore removes it)"
				}
			}
			rows = append(rows, r)
		}
		if format.value == "json" {
			e := json.NewEncoder(w)
			e.SetIndent("", "  ")
			return e.Encode(rows)
		}
		if len(rows) == 0 {
			fmt.Fprintf(w, "no labs in %s\n", netlab.Dir())
			return nil
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tOWNER PID\tALIVE\tCREATED\tSTATE\tOWNER COMMAND")
		for _, r := range rows {
			pid, alive, created, cmd := "-", "-", "-", ""
			if r.Owner != nil {
				pid, cmd = fmt.Sprint(r.Owner.PID), r.Owner.Command
				alive = map[bool]string{true: "yes", false: "no"}[*r.Alive]
			}
			if !r.Created.IsZero() {
				created = r.Created.Format(time.RFC3339)
			}
			state := r.State
			if r.Error != "" {
				state += ": " + r.Error
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, pid, alive, created, state, cmd)
		}
		return tw.Flush()
	}
}
