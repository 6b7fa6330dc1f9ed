package hwtest

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rig-project/rig/analysis"
	"github.com/rig-project/rig/capture"
	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/nicfake"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/nicctl"
	"github.com/rig-project/rig/responder"
	"github.com/rig-project/rig/sender"
)

// The three hosts of a round, in the order of the tables below.
const (
	snd = iota
	rsp
	cpt
)

var roleNames = [3]string{"sender", "responder", "capture"}

// needs are what each role asks of its NIC (sender and responder subtract
// an RX from a TX stamp; a mirror-port capture only receives).
var needs = [3]tstamp.Need{tstamp.NeedProbe, tstamp.NeedProbe, tstamp.NeedCapture}

// expect is what rig must do with one profile in one mode.
type expect struct {
	act    [3]tstamp.Action // PrepareTimestamping's decision per host
	writes [3]int           // SIOCSHWTSTAMP writes while preparing (the undo makes as many)
	// refuse: the preparation fails (mode hardware) with an error holding
	// these words; no round runs.
	refuse []string
	// roundErr: the round runs and these roles fail fast, their errors
	// naming the missing stamp and the socket.
	roundErr map[int][]string
	// The analysis labels of the headline (turnaround) and rtt, and the
	// hardware columns the sample headers describe.
	turnaround, rtt string
	hwCols          []string
	// note: a clock note of the sample headers holds it.
	note string
	// why: a decision's reason holds it (a host index → words).
	why map[int]string
	// sched: the software TX columns hold the qdisc's stamps (a driver
	// without software TX stamps), so software sources are labelled so.
	sched bool
	// noTxHW: the sender's and responder's sockets ask for no hardware TX
	// stamps (a daemon owns the NIC's config).
	noTxHW bool
}

// variant is one driver profile in one situation.
type variant struct {
	name     string
	profile  func() *nicfake.Profile
	setup    func(h *nicfake.Host) error        // before rig looks: ptp4l, a config set by hand
	wrap     func(n *nicfake.NIC) tstamp.Device // the sockets' view of the NIC (nil: the NIC)
	takeOver bool
	mgmt     bool // the capture NIC carries the default route
	want     map[tstamp.Mode]expect
}

var (
	allHW = []string{"cap_rep_hw", "cap_req_hw", "rep_tx_hw", "req_rx_hw", "rx_hw", "tx_hw"}
	noHW  = []string(nil)

	writeAll = [3]tstamp.Action{tstamp.ActWrite, tstamp.ActWrite, tstamp.ActWrite}
	keepAll  = [3]tstamp.Action{tstamp.ActKeep, tstamp.ActKeep, tstamp.ActKeep}
	swAll    = [3]tstamp.Action{tstamp.ActSoftware, tstamp.ActSoftware, tstamp.ActSoftware}
	unknown  = [3]tstamp.Action{tstamp.ActUnknown, tstamp.ActUnknown, tstamp.ActUnknown}
	refusal  = [3]tstamp.Action{tstamp.ActRefuse}

	hwEverywhere = expect{turnaround: "capture hw", rtt: "sender hw", hwCols: allHW}
	// rxOnlyNextToOwner: a daemon owns a config that stamps every packet:
	// kept, RX hardware, TX software on the sender and the responder.
	rxOnlyNextToOwner = expect{act: keepAll, turnaround: "capture hw", rtt: "sender sw", noTxHW: true,
		hwCols: []string{"cap_rep_hw", "cap_req_hw", "req_rx_hw", "rx_hw"}, why: map[int]string{snd: "takes no TX stamps", rsp: "takes no TX stamps"}}
	swEverywhere = expect{act: swAll, turnaround: "capture sw", rtt: "sender sw", hwCols: noHW}
)

// runID is the run id of every round here: the programs require one.
const runID = 0x7e57

func with(e expect, f func(*expect)) expect { f(&e); return e }

func ptp4l(software bool) func(h *nicfake.Host) error {
	return func(h *nicfake.Host) error { return h.StartPTP4L(812, software) }
}

// inPod plays rig in a pod without the host's PID namespace (PID 1 is the
// probe, no kthreadd), on a NIC that stamps every packet already.
func inPod(h *nicfake.Host) error {
	h.NIC.SetConfig(tstamp.HWTstampConfig{TxType: tstamp.TxOn, RxFilter: tstamp.FilterAll})
	if err := os.RemoveAll(h.FS.Path("/proc/2")); err != nil {
		return err
	}
	return h.AddProcess(1, "responder")
}

// compressedNIC plays mlx5 with RX CQE compression left on (a ptp_rx
// profile, docs/hardware.md): a decompressed completion keeps its block's
// first timestamp (en_rx.c mlx5e_decompress_cqe), so every received
// packet of a block of 8 carries the block's first stamp.
type compressedNIC struct {
	*nicfake.NIC
	n, title atomic.Int64
}

func compressed(n *nicfake.NIC) tstamp.Device { return &compressedNIC{NIC: n} }

func (c *compressedNIC) StampRX(ifname string, sw int64) int64 {
	hw := c.NIC.StampRX(ifname, sw)
	if hw != 0 && c.n.Add(1)%8 == 1 {
		c.title.Store(hw)
	}
	if hw == 0 {
		return 0
	}
	return c.title.Load()
}

func preset(c tstamp.HWTstampConfig) func(h *nicfake.Host) error {
	return func(h *nicfake.Host) error { h.NIC.SetConfig(c); return nil }
}

var variants = []variant{
	{name: "exanic", profile: nicfake.ExaNIC, want: map[tstamp.Mode]expect{
		tstamp.Auto:     with(hwEverywhere, func(e *expect) { e.act, e.writes = writeAll, [3]int{1, 1, 1} }),
		tstamp.Hardware: with(hwEverywhere, func(e *expect) { e.act, e.writes = writeAll, [3]int{1, 1, 1} }),
	}},
	{name: "mlx5", profile: nicfake.MLX5, want: map[tstamp.Mode]expect{
		tstamp.Auto:     with(hwEverywhere, func(e *expect) { e.act, e.writes = writeAll, [3]int{1, 1, 1} }),
		tstamp.Hardware: with(hwEverywhere, func(e *expect) { e.act, e.writes = writeAll, [3]int{1, 1, 1} }),
	}},
	{name: "mlx5-pre6.16", profile: nicfake.MLX5Pre616, want: map[tstamp.Mode]expect{
		// No software SND stamp from the driver: the qdisc's stands in,
		// labelled sched, and nothing waits for the SND stamps.
		tstamp.Software: {turnaround: "capture sw", rtt: "sender sw (sched)", note: "before the qdisc", sched: true},
		tstamp.Auto: with(hwEverywhere, func(e *expect) {
			e.act, e.writes, e.note, e.sched = writeAll, [3]int{1, 1, 1}, "before the qdisc", true
		}),
		tstamp.Hardware: with(hwEverywhere, func(e *expect) {
			e.act, e.writes, e.note, e.sched = writeAll, [3]int{1, 1, 1}, "before the qdisc", true
		}),
	}},
	{name: "mlx5-cqe-compressed", profile: nicfake.MLX5, wrap: compressed, want: map[tstamp.Mode]expect{
		// RX stamps that repeat their block's first one prove nothing:
		// RX falls back to software everywhere, TX stays hardware.
		tstamp.Auto: {act: writeAll, writes: [3]int{1, 1, 1}, turnaround: "capture sw", rtt: "sender sw",
			hwCols: []string{"rep_tx_hw", "tx_hw"}, note: "carried no plausible ones"},
		tstamp.Hardware: {act: writeAll, writes: [3]int{1, 1, 1}, roundErr: map[int][]string{
			snd: {"RX hardware stamp never came", "no plausible ones"},
			rsp: {"RX hardware stamp never came", "no plausible ones"},
			cpt: {"RX hardware stamp never came", "no plausible ones"},
		}},
	}},
	{name: "mlx5-already-on", profile: nicfake.MLX5, setup: preset(tstamp.HWTstampConfig{TxType: tstamp.TxOn, RxFilter: tstamp.FilterAll}), want: map[tstamp.Mode]expect{
		tstamp.Auto:     with(hwEverywhere, func(e *expect) { e.act = keepAll }),
		tstamp.Hardware: with(hwEverywhere, func(e *expect) { e.act = keepAll }),
	}},
	{name: "ice", profile: nicfake.ICE, want: map[tstamp.Mode]expect{
		tstamp.Auto:     with(hwEverywhere, func(e *expect) { e.act, e.writes = writeAll, [3]int{1, 1, 1} }),
		tstamp.Hardware: with(hwEverywhere, func(e *expect) { e.act, e.writes = writeAll, [3]int{1, 1, 1} }),
	}},
	{name: "igb-82576", profile: nicfake.IGB82576, want: map[tstamp.Mode]expect{
		tstamp.Auto:     with(swEverywhere, func(e *expect) { e.why = map[int]string{snd: "PTP/NTP messages only", cpt: "PTP/NTP messages only"} }),
		tstamp.Hardware: {act: refusal, refuse: []string{"PTP/NTP messages only", "rig's UDP probes are neither"}},
	}},
	{name: "ixgbe-82599", profile: nicfake.IXGBE82599, want: map[tstamp.Mode]expect{
		tstamp.Auto:     with(swEverywhere, func(e *expect) { e.why = map[int]string{rsp: "PTP/NTP messages only"} }),
		tstamp.Hardware: {act: refusal, refuse: []string{"PTP/NTP messages only"}},
	}},
	{name: "ena", profile: nicfake.ENA, want: map[tstamp.Mode]expect{
		tstamp.Auto: {act: [3]tstamp.Action{tstamp.ActSoftware, tstamp.ActSoftware, tstamp.ActWrite}, writes: [3]int{0, 0, 1},
			turnaround: "capture hw", rtt: "sender sw", hwCols: []string{"cap_rep_hw", "cap_req_hw"},
			why: map[int]string{snd: "TX: no hardware TX stamps"}},
		tstamp.Hardware: {act: refusal, refuse: []string{"TX: no hardware TX stamps"}},
	}},
	{name: "ena-mgmt", profile: nicfake.ENA, mgmt: true, want: map[tstamp.Mode]expect{
		tstamp.Auto: with(swEverywhere, func(e *expect) { e.why = map[int]string{cpt: "carries the default route"} }),
	}},
	{name: "liquidio-no-get", profile: nicfake.Liquidio, want: map[tstamp.Mode]expect{
		tstamp.Auto:     with(swEverywhere, func(e *expect) { e.why = map[int]string{snd: "PTP/NTP messages only"} }),
		tstamp.Hardware: {act: refusal, refuse: []string{"PTP/NTP messages only"}},
	}},
	{name: "noget-off", profile: nicfake.NoGet, want: map[tstamp.Mode]expect{
		// Not readable, so not written: hardware stamps are asked for and
		// the first packets decide. RX stamps never come (the NIC is off);
		// TX stamps do (liquidio stamps TX whatever tx_type says).
		tstamp.Auto: {act: unknown, turnaround: "capture sw", rtt: "sender sw", hwCols: []string{"rep_tx_hw", "tx_hw"},
			note: "hardware RX stamps were requested", why: map[int]string{snd: "cannot report its timestamping config"}},
		tstamp.Hardware: {act: unknown, roundErr: map[int][]string{
			snd: {"RX hardware stamp never came", "the sender's UDP socket"},
			rsp: {"RX hardware stamp never came", "the responder's UDP socket"},
			cpt: {"RX hardware stamp never came", "the capture's AF_PACKET socket"},
		}},
	}},
	{name: "noget-on", profile: nicfake.NoGet, setup: preset(tstamp.HWTstampConfig{TxType: tstamp.TxOn, RxFilter: tstamp.FilterAll}), want: map[tstamp.Mode]expect{
		tstamp.Auto:     with(hwEverywhere, func(e *expect) { e.act = unknown }),
		tstamp.Hardware: with(hwEverywhere, func(e *expect) { e.act = unknown }),
	}},
	{name: "veth", profile: nicfake.Veth, want: map[tstamp.Mode]expect{
		tstamp.Auto:     with(swEverywhere, func(e *expect) { e.why = map[int]string{snd: "no hardware RX stamps"} }),
		tstamp.Hardware: {act: refusal, refuse: []string{"no hardware RX stamps"}},
	}},
	{name: "virtio_net", profile: nicfake.VirtioNet, want: map[tstamp.Mode]expect{
		tstamp.Auto:     swEverywhere,
		tstamp.Hardware: {act: refusal, refuse: []string{"no hardware RX stamps"}},
	}},
	{name: "mlx5+ptp4l", profile: nicfake.MLX5, setup: ptp4l(false), want: map[tstamp.Mode]expect{
		// ptp4l asked for PTP_V2_L4_EVENT; mlx5 stamps everything: no
		// change, RX hardware, and no TX hardware stamps next to ptp4l.
		tstamp.Auto:     rxOnlyNextToOwner,
		tstamp.Hardware: {act: refusal, refuse: []string{"ptp4l (pid 812", "takes no TX stamps", "take-over-ptp"}},
	}},
	{name: "mlx5+ptp4l-take-over", profile: nicfake.MLX5, setup: ptp4l(false), takeOver: true, want: map[tstamp.Mode]expect{
		tstamp.Hardware: with(hwEverywhere, func(e *expect) { e.act = keepAll }),
	}},
	{name: "igb-i210+ptp4l", profile: nicfake.IGBI210, setup: ptp4l(false), want: map[tstamp.Mode]expect{
		// igb upscales ptp4l's PTP filter to ALL: the config covers rig's
		// probes, and the one TX-stamp slot stays ptp4l's.
		tstamp.Auto:     rxOnlyNextToOwner,
		tstamp.Hardware: {act: refusal, refuse: []string{"ptp4l (pid 812", "one TX stamp at a time", "take-over-ptp"}},
	}},
	{name: "mlx5-in-a-pod", profile: nicfake.MLX5, setup: inPod, want: map[tstamp.Mode]expect{
		// Without the host's processes the owner is unknown: nothing
		// written, no TX hardware stamps.
		tstamp.Auto: with(rxOnlyNextToOwner, func(e *expect) {
			e.why = map[int]string{snd: "unknown (no host PID namespace", rsp: "takes no TX stamps"}
		}),
		tstamp.Hardware: {act: refusal, refuse: []string{"unknown (no host PID namespace: no PID 2 (kthreadd) in /proc; PID 1 is responder)", "hostPID: true"}},
	}},
	{name: "igb-i210", profile: nicfake.IGBI210, want: map[tstamp.Mode]expect{
		tstamp.Auto: with(hwEverywhere, func(e *expect) { e.act, e.writes = writeAll, [3]int{1, 1, 1} }),
	}},
	{name: "igb+ptp4l", profile: nicfake.IGB82576, setup: ptp4l(false), want: map[tstamp.Mode]expect{
		tstamp.Auto:     swEverywhere,
		tstamp.Hardware: {act: refusal, refuse: []string{"PTP/NTP messages only"}},
	}},
	{name: "mlx5+ptp4l-S", profile: nicfake.MLX5, setup: ptp4l(true), want: map[tstamp.Mode]expect{
		tstamp.Auto:     with(swEverywhere, func(e *expect) { e.why = map[int]string{snd: "ptp4l (pid 812", cpt: "ptp4l (pid 812"} }),
		tstamp.Hardware: {act: refusal, refuse: []string{"ptp4l (pid 812", "take-over-ptp"}},
	}},
	{name: "mlx5+ptp4l-S-take-over", profile: nicfake.MLX5, setup: ptp4l(true), takeOver: true, want: map[tstamp.Mode]expect{
		tstamp.Auto: with(hwEverywhere, func(e *expect) { e.act, e.writes = writeAll, [3]int{1, 1, 1} }),
	}},
}

// host is one of a round's three hosts: its fake root, NIC, nicctl
// environment and journal.
type host struct {
	*nicfake.Host
	env     *nicctl.Env
	j       *journal.Journal
	initial tstamp.HWTstampConfig
	owner   string        // the run's finding, passed to the probes' sockets
	dev     tstamp.Device // what the probes' sockets see of the NIC
}

func newHosts(t *testing.T, topo *netlab.Topology, v variant) [3]*host {
	t.Helper()
	var hs [3]*host
	for i, ifname := range [3]string{topo.Sender.Interface, topo.Responder.Interface, topo.Capture.Interface} {
		n := nicfake.New(v.profile(), ifname)
		mgmt := "eth0"
		if v.mgmt && i == cpt {
			mgmt = ifname
		}
		h, err := nicfake.NewHost(t.TempDir(), n, mgmt)
		if err != nil {
			t.Fatal(err)
		}
		if v.setup != nil {
			if err := v.setup(h); err != nil {
				t.Fatal(err)
			}
		}
		env := &nicctl.Env{NIC: facts.NIC{FS: h.FS, TS: n}, LinkTimeout: 5 * time.Second, LinkSettle: 10 * time.Millisecond}
		j, err := journal.Open(t.TempDir(), nicctl.Handlers(env))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { j.Close() })
		hs[i] = &host{Host: h, env: env, j: j, initial: n.Config(), dev: n}
		if v.wrap != nil {
			hs[i].dev = v.wrap(n)
		}
	}
	return hs
}

// TestDriverProfiles runs rig's whole hardware-timestamping sequence for
// each driver profile and mode: prepare each host's NIC for its role
// (nicctl.PrepareTimestamping through a journal), run a real round
// (responder, mirror-port capture and sender on a netlab topology, each
// socket seeing the profile NIC's stamps), analyse it, and put the NICs
// back (journal undo). It asserts what was written and how often, what
// the sample headers and the analysis labels say, that hardware mode
// fails naming what is missing, and that every NIC ends as it began.
func TestDriverProfiles(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: about 30 rounds on a netlab topology")
	}
	topo := netlabtest.New(t, netlab.Options{})
	for _, v := range variants {
		for _, mode := range []tstamp.Mode{tstamp.Auto, tstamp.Hardware, tstamp.Software} {
			want, ok := v.want[mode]
			if !ok {
				continue
			}
			t.Run(v.name+"/"+mode.String(), func(t *testing.T) {
				ctx := context.Background()
				hs := newHosts(t, topo, v)
				prepared := true
				for i, h := range hs {
					req := nicctl.TSRequest{Mode: mode, Need: needs[i], TakeOver: v.takeOver}
					res, err := nicctl.PrepareTimestamping(ctx, h.env, h.j, h.NIC.Ifname, req)
					if want.refuse != nil {
						// rig stops at the first host that refuses.
						if err == nil {
							t.Fatalf("%s: prepared (%s), want a refusal naming %q", roleNames[i], res, want.refuse)
						}
						for _, w := range want.refuse {
							if !strings.Contains(err.Error(), w) {
								t.Errorf("%s: refusal %q does not name %q", roleNames[i], err, w)
							}
						}
						if !errors.Is(err, nicctl.ErrTimestamping) || res.Decision.Action != want.act[i] {
							t.Errorf("%s: %v, action %s; want ErrTimestamping and %s", roleNames[i], err, res.Decision.Action, want.act[i])
						}
						prepared = false
						break
					}
					if err != nil {
						t.Fatalf("%s: %v", roleNames[i], err)
					}
					if !v.takeOver { // rig's probes pass no owner with --take-over-ptp
						h.owner = res.State.Owner
					}
					if res.Decision.Action != want.act[i] {
						t.Errorf("%s: %s, want %s", roleNames[i], res, want.act[i])
					}
					if w := want.why[i]; w != "" && !strings.Contains(res.Decision.Why, w) {
						t.Errorf("%s: %q does not say %q", roleNames[i], res.Decision.Why, w)
					}
					if got := h.NIC.Writes(); got != want.writes[i] {
						t.Errorf("%s: %d SIOCSHWTSTAMP writes while preparing (%+v), want %d", roleNames[i], got, h.NIC.Sets(), want.writes[i])
					}
					if bounce := bounced(h.NIC) && want.writes[i] > 0; bounce != strings.Contains(res.Link, "link bounced (carrier_changes +2)") {
						t.Errorf("%s: link report %q", roleNames[i], res.Link)
					}
				}
				if prepared {
					checkRound(t, topo, hs, mode, want)
				}
				for i, h := range hs {
					if _, err := h.j.Undo(ctx); err != nil {
						t.Errorf("%s: undo: %v", roleNames[i], err)
					}
					if err := h.NIC.Wait(); err != nil {
						t.Fatal(err)
					}
					if got := h.NIC.Config(); got != h.initial {
						t.Errorf("%s: after the undo %s, want the initial %s", roleNames[i], got, h.initial)
					}
					if got := h.NIC.Writes(); prepared && got != 2*want.writes[i] {
						t.Errorf("%s: %d writes in all (%+v), want %d: one to enable, one to put back", roleNames[i], got, h.NIC.Sets(), 2*want.writes[i])
					}
					if !prepared && len(h.NIC.Sets()) != 0 {
						t.Errorf("%s: a refused preparation wrote %+v", roleNames[i], h.NIC.Sets())
					}
					if bounced(h.NIC) {
						if cc, want := h.NIC.CarrierChanges(), int64(4*want.writes[i]); prepared && cc != want {
							t.Errorf("%s: carrier_changes %d, want %d (2 per reset)", roleNames[i], cc, want)
						}
					}
				}
			})
		}
	}
}

// bounced reports whether one of the NIC's SIOCSHWTSTAMP calls reset the
// interface (ENA's every call).
func bounced(n *nicfake.NIC) bool {
	return slices.ContainsFunc(n.Sets(), func(c nicfake.SetCall) bool { return c.Bounced })
}

// checkRound runs a round on the prepared NICs and checks what it
// recorded and what the analysis makes of it.
func checkRound(t *testing.T, topo *netlab.Topology, hs [3]*host, mode tstamp.Mode, want expect) {
	t.Helper()
	r := runRound(t, topo, hs, mode)
	for i := range hs {
		words, fail := want.roundErr[i]
		switch {
		case fail && r.err[i] == nil:
			t.Errorf("%s: the round succeeded, want it to fail naming %q", roleNames[i], words)
		case fail:
			if !errors.Is(r.err[i], tstamp.ErrNoHardwareStamp) {
				t.Errorf("%s: %v, want ErrNoHardwareStamp", roleNames[i], r.err[i])
			}
			for _, w := range words {
				if !strings.Contains(r.err[i].Error(), w) {
					t.Errorf("%s: %q does not name %q", roleNames[i], r.err[i], w)
				}
			}
		case r.err[i] != nil && want.roundErr == nil:
			t.Errorf("%s: %v", roleNames[i], r.err[i])
		}
	}
	if want.roundErr != nil || r.report == nil {
		return // nothing to analyse: the round failed
	}
	var cols, notes []string
	for _, h := range r.headers {
		for name, c := range h.Clocks {
			if c.Source == "hw" {
				cols = append(cols, name)
			}
			if c.Note != "" && (c.Source == "sw" || c.Source == "hw") {
				notes = append(notes, name+": "+c.Note)
			}
		}
	}
	slices.Sort(cols)
	if !slices.Equal(cols, want.hwCols) {
		t.Errorf("hardware columns %v, want %v", cols, want.hwCols)
	}
	if want.note != "" && !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, want.note) }) {
		t.Errorf("clock notes %q: none says %q", notes, want.note)
	}
	if want.note == "" && len(notes) > 0 {
		t.Errorf("clock notes %q, want none", notes)
	}
	for i, col := range map[int]string{snd: "tx_hw", rsp: "rep_tx_hw"} {
		granted := fmt.Sprint(r.headers[i].Settings["timestamps"])
		asked := strings.Contains(granted, "TX_HARDWARE")
		if !strings.Contains(granted, "mode=") || want.noTxHW && asked || slices.Contains(want.hwCols, col) && !asked {
			t.Errorf("%s: TX hardware stamps asked %v (%s)", roleNames[i], asked, granted)
		}
	}
	// Without the capture the turnaround is the responder's: hardware
	// when both its columns are.
	rspLabel := "responder sw"
	if slices.Contains(want.hwCols, "req_rx_hw") && slices.Contains(want.hwCols, "rep_tx_hw") {
		rspLabel = "responder hw"
	} else if want.sched {
		rspLabel += " (sched)"
	}
	for _, c := range []struct {
		rep           *analysis.Report
		metric, label string
	}{{r.report, analysis.Turnaround, want.turnaround}, {r.report, analysis.RTT, want.rtt}, {r.noCapture, analysis.Turnaround, rspLabel}} {
		rep, metric, label := c.rep, c.metric, c.label
		m := rep.Arms[0].Metrics[metric]
		if m == nil {
			t.Errorf("%s not computed (notes %q)", metric, rep.Notes)
			continue
		}
		if m.Source != label {
			t.Errorf("%s from %q, want %q", metric, m.Source, label)
		}
		if n := m.Summary.N; n < roundCount/2 {
			t.Errorf("%s: %d samples of %d", metric, n, roundCount)
		}
	}
	if want.sched { // every caption of a software TX source says sched
		for _, rep := range []*analysis.Report{r.report, r.noCapture} {
			var b strings.Builder
			if err := analysis.WriteTablesMD(&b, rep); err != nil {
				t.Fatal(err)
			}
			for _, m := range swSource.FindAllStringSubmatch(b.String(), -1) {
				if m[1] == "" {
					t.Errorf("a software source without its sched label in the tables:\n%s", b.String())
					break
				}
			}
		}
	}
	// Every TX stamp a probe waits for comes: none waited for in vain.
	for i, n := range r.txMissing {
		if n > roundCount/10 {
			t.Errorf("%s: %d of %d requests lack a TX stamp it waited for", roleNames[i], n, roundCount)
		}
	}
}

const roundCount = 120

// swSource finds the analysis labels of software sources that end in a TX
// stamp (rtt, turnaround); group 1 is their sched label or the arrow of a
// source ending in a user stamp.
var swSource = regexp.MustCompile(`(?:sender|responder) sw( \(sched\)|→|)`)

type roundResult struct {
	err       [3]error
	headers   [3]samples.Header
	txMissing [2]uint64 // sender, responder: TX stamps waited for that never came
	report    *analysis.Report
	// noCapture is the same round analysed without the capture's file:
	// the turnaround then comes from the responder's stamps.
	noCapture *analysis.Report
}

// runRound runs one round: the responder and the capture first, then the
// sender; each socket's Device is its host's profile NIC, so the sockets
// see the hardware stamps that NIC would give.
func runRound(t *testing.T, topo *netlab.Topology, hs [3]*host, mode tstamp.Mode) roundResult {
	t.Helper()
	group := netip.MustParseAddrPort("239.8.9.31:9431")
	dir := t.TempDir()
	var res roundResult
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	ready := make(chan error, 2)
	var capt *capture.Capture       // set before its ready
	capEnded := make(chan struct{}) // its Run returned: it files no more frames
	wg.Add(2)
	go func() {
		defer wg.Done()
		res.err[rsp] = topo.Do(netlab.Responder, func() error {
			rc := probe.DefaultRespond()
			rc.Iface, rc.Group, rc.RunID, rc.Timestamps, rc.Capacity, rc.TxWait, rc.Arm = topo.Responder.Interface, group, runID, mode, roundCount, 200*time.Millisecond, "a"
			r, err := responder.New(rc, responder.Options{Host: "rsp", Device: hs[rsp].dev, Owner: hs[rsp].owner})
			if err != nil {
				ready <- err
				return err
			}
			defer r.Close()
			ready <- nil
			err = r.Run(ctx)
			res.headers[rsp], res.txMissing[rsp] = r.Header(0, 0), r.Counters().TxStampsMissing
			return errors.Join(err, r.WriteFile(filepath.Join(dir, samples.FileName(samples.RoleResponder)), 0, 0))
		})
	}()
	go func() {
		defer wg.Done()
		defer close(capEnded)
		res.err[cpt] = topo.Do(netlab.Capture, func() error {
			cc := probe.DefaultCapture()
			cc.Iface, cc.Group, cc.RunID, cc.Timestamps, cc.Capacity, cc.Arm = topo.Capture.Interface, group, runID, mode, roundCount, "a"
			c, err := capture.New(cc, capture.Options{Host: "cap", Device: hs[cpt].dev})
			if err != nil {
				ready <- err
				return err
			}
			defer c.Close()
			capt = c
			ready <- nil
			err = c.Run(ctx)
			res.headers[cpt] = c.Header(0, 0)
			return errors.Join(err, c.WriteFile(filepath.Join(dir, samples.FileName(samples.RoleCapture)), 0, 0))
		})
	}()
	for i := 0; i < 2; i++ {
		if err := <-ready; err != nil {
			cancel()
			wg.Wait()
			t.Fatalf("starting the responder or the capture: %v", err)
		}
	}
	res.err[snd] = topo.Do(netlab.Sender, func() error {
		sc := probe.DefaultSend()
		sc.Iface, sc.Group, sc.Count, sc.RunID, sc.Spin, sc.Warmup, sc.Timestamps = topo.Sender.Interface, group, roundCount, runID, 0, 0, mode
		sc.ReplyTimeout, sc.TxWait, sc.Arm = 300*time.Millisecond, 200*time.Millisecond, "a"
		s, err := sender.New(sc, sender.Options{Host: "snd", Device: hs[snd].dev, Owner: hs[snd].owner})
		if err != nil {
			return err
		}
		defer s.Close()
		err = s.Run(context.Background())
		res.headers[snd], res.txMissing[snd] = s.Header(), s.Counters().TxStampsMissing
		// Every request the sender sent and every reply it got passed the
		// mirrored switch ports: the capture has their copies when it has
		// as many rig frames (it reads what is queued when it stops).
		c := s.Counters()
	wait:
		for deadline := time.Now().Add(10 * time.Second); capt.Frames() < int(c.Sent+c.Received) && time.Now().Before(deadline); {
			select {
			case <-capEnded: // failed (no hardware stamp): nothing more to wait for
				break wait
			case <-time.After(5 * time.Millisecond):
			}
		}
		return errors.Join(err, s.WriteFile(filepath.Join(dir, samples.FileName(samples.RoleSender))))
	})
	cancel()
	wg.Wait()
	if res.err != [3]error{} {
		return res
	}
	res.report = analyse(t, dir)
	two := t.TempDir()
	for _, r := range []samples.Role{samples.RoleSender, samples.RoleResponder} {
		if err := os.Link(filepath.Join(dir, samples.FileName(r)), filepath.Join(two, samples.FileName(r))); err != nil {
			t.Fatal(err)
		}
	}
	res.noCapture = analyse(t, two)
	return res
}

// analyse runs the analysis on one round's sample files in dir.
func analyse(t *testing.T, dir string) *analysis.Report {
	t.Helper()
	in := &analysis.Input{Run: dir, Warmup: 0, Arms: []analysis.InputArm{{Name: "a", Rounds: []analysis.InputRound{
		{K: 0, Load: func() (*samples.Joined, error) { return samples.JoinDir(dir, 0) }}}}}}
	rep, err := analysis.Analyze(in, analysis.Options{})
	if err != nil {
		t.Fatalf("analysis: %v", err)
	}
	if len(rep.Problems) > 0 {
		t.Errorf("analysis problems: %q", rep.Problems)
	}
	return rep
}

// linkEnv puts NIC n (ens6) on a fake host whose management NIC is ens5,
// and returns the host, nicctl's environment on clock clk (a 5 s link
// timeout, 50 ms to settle) and a journal of nicctl's handlers.
func linkEnv(t *testing.T, n *nicfake.NIC, clk *nicfake.Clock) (*nicfake.Host, *nicctl.Env, *journal.Journal) {
	t.Helper()
	h, err := nicfake.NewHost(t.TempDir(), n, "ens5")
	if err != nil {
		t.Fatal(err)
	}
	env := &nicctl.Env{NIC: facts.NIC{FS: h.FS, TS: n}, LinkTimeout: 5 * time.Second, LinkSettle: 50 * time.Millisecond, Clock: clk}
	j, err := journal.Open(t.TempDir(), nicctl.Handlers(env))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return h, env, j
}

// TestENAPrepareWaitsForLink: enabling RX stamps on ENA resets the
// interface inside the ioctl (carrier_changes +2, the carrier back and
// operstate never down when it returns, as ena_down/ena_up do); the
// carrier count still says it bounced, so PrepareTimestamping waits the
// settle time and says so; the undo resets it once more and settles
// again. All on a virtual clock: the waits are exact.
func TestENAPrepareWaitsForLink(t *testing.T) {
	n, clk := nicfake.New(nicfake.ENA(), "ens6"), nicfake.NewClock()
	h, env, j := linkEnv(t, n, clk)
	start := clk.Now()
	res, err := nicctl.PrepareTimestamping(context.Background(), env, j, "ens6", nicctl.TSRequest{Mode: tstamp.Hardware, Need: tstamp.NeedCapture})
	if err != nil {
		t.Fatal(err)
	}
	if took := clk.Now().Sub(start); took != env.LinkSettle || !res.Changed || res.Granted == nil || res.Granted.RxFilter != tstamp.FilterAll ||
		!strings.Contains(res.Link, "link bounced (carrier_changes +2): up after 0s, then settled 50ms") {
		t.Fatalf("after %v: %s (link %q)", took, res, res.Link)
	}
	start = clk.Now()
	if _, err := j.Undo(context.Background()); err != nil || clk.Now().Sub(start) != env.LinkSettle {
		t.Fatalf("undo: %v after %v", err, clk.Now().Sub(start))
	}
	if st, _ := h.Operstate(); st != "up" || n.Config() != (tstamp.HWTstampConfig{}) || n.CarrierChanges() != 4 || n.Writes() != 2 {
		t.Fatalf("after undo: operstate %s, %s, carrier_changes %d, writes %+v", st, n.Config(), n.CarrierChanges(), n.Sets())
	}
}

// TestSlowLinkPrepareWaits: a reset whose carrier comes back 2 s after the
// ioctl while operstate still reads up (linkwatch not run yet, an odd
// carrier count): the wait follows the carrier, so PrepareTimestamping
// returns only after it is back, then settles.
func TestSlowLinkPrepareWaits(t *testing.T) {
	n, clk := nicfake.New(nicfake.SlowLink(nicfake.ENA()), "ens6"), nicfake.NewClock()
	n.Clock = clk
	h, env, j := linkEnv(t, n, clk)
	start := clk.Now()
	res, err := nicctl.PrepareTimestamping(context.Background(), env, j, "ens6", nicctl.TSRequest{Mode: tstamp.Auto, Need: tstamp.NeedCapture})
	took := clk.Now().Sub(start)
	carrier, _ := h.FS.ReadInt("/sys/class/net/ens6/carrier")
	if err != nil || carrier != 1 || took != 2*time.Second+env.LinkSettle || !strings.Contains(res.Link, "link bounced (carrier_changes +2): up after 2s, then settled 50ms") {
		t.Fatalf("returned after %v with carrier %d: %s %v", took, carrier, res, err)
	}
	if _, err := j.Undo(context.Background()); err != nil || n.Config() != (tstamp.HWTstampConfig{}) {
		t.Fatalf("undo: %v, %s", err, n.Config())
	}
}

// TestENAAdminFailureSettles: the device lists RX stamps but refuses the
// admin command (the driver resets the interface, stores OFF/NONE and
// returns EOPNOTSUPP). In auto mode rig settles for software stamps,
// saying why; the config reads as before, so nothing is journaled, and yet
// the link bounced: the wait still runs. Hardware mode fails.
func TestENAAdminFailureSettles(t *testing.T) {
	n, clk := nicfake.New(nicfake.ENAAdminFailure(), "ens6"), nicfake.NewClock()
	_, env, j := linkEnv(t, n, clk)
	start := clk.Now()
	res, err := nicctl.PrepareTimestamping(context.Background(), env, j, "ens6", nicctl.TSRequest{Mode: tstamp.Auto, Need: tstamp.NeedCapture})
	if err != nil || res.Decision.Action != tstamp.ActSoftware || res.Hardware() || res.Changed ||
		!strings.Contains(res.String(), "software: ens6's driver refused tx_type=OFF rx_filter=ALL although its capabilities list it") ||
		!strings.Contains(res.Link, "link bounced (carrier_changes +2)") || clk.Now().Sub(start) != env.LinkSettle {
		t.Fatalf("auto: %s (link %q) %v after %v", res, res.Link, err, clk.Now().Sub(start))
	}
	if _, err := nicctl.PrepareTimestamping(context.Background(), env, j, "ens6", nicctl.TSRequest{Mode: tstamp.Hardware, Need: tstamp.NeedCapture}); !errors.Is(err, unix.EOPNOTSUPP) {
		t.Fatalf("hardware: %v", err)
	}
	if restored, err := j.Undo(context.Background()); err != nil || len(restored) != 0 || n.Config() != (tstamp.HWTstampConfig{}) || n.CarrierChanges() != 4 {
		t.Fatalf("undo %+v %v: %s, carrier_changes %d", restored, err, n.Config(), n.CarrierChanges())
	}
}

// TestSocketsRefuseWhatTheNICLacks: the hand-run probes on a NIC that was
// not prepared (--nic-timestamping leave) decide from the same rule at
// socket level, naming what is missing: ENA's TX stamps, igb's PTP-only
// filters; a capture on ENA enabled for RX gets hardware stamps.
func TestSocketsRefuseWhatTheNICLacks(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	group := netip.MustParseAddrPort("239.8.9.32:9432")
	for _, tt := range []struct {
		p    func() *nicfake.Profile
		pre  tstamp.HWTstampConfig
		want string
	}{
		{nicfake.ENA, tstamp.HWTstampConfig{RxFilter: tstamp.FilterAll}, "TX: no hardware TX stamps"},
		{nicfake.IGB82576, tstamp.HWTstampConfig{TxType: tstamp.TxOn, RxFilter: tstamp.FilterPTPv2Event}, "PTP/NTP messages only"},
	} {
		err := topo.Do(netlab.Responder, func() error {
			n := nicfake.New(tt.p(), topo.Responder.Interface)
			n.SetConfig(tt.pre)
			rc := probe.DefaultRespond()
			rc.Iface, rc.Group, rc.RunID, rc.Timestamps = topo.Responder.Interface, group, runID, tstamp.Hardware
			r, err := responder.New(rc, responder.Options{Device: n})
			if err == nil {
				r.Close()
				return fmt.Errorf("%s: the responder started in hardware mode", n)
			}
			if !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), tt.want) {
				return fmt.Errorf("%s: %v, want a refusal naming %q", n, err, tt.want)
			}
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	}
	err := topo.Do(netlab.Capture, func() error {
		n := nicfake.New(nicfake.ENA(), topo.Capture.Interface)
		n.SetConfig(tstamp.HWTstampConfig{RxFilter: tstamp.FilterAll})
		cc := probe.DefaultCapture()
		cc.Iface, cc.Group, cc.RunID, cc.Timestamps = topo.Capture.Interface, group, runID, tstamp.Hardware
		c, err := capture.New(cc, capture.Options{Device: n})
		if err != nil {
			return err
		}
		defer c.Close()
		if g := c.Granted(); !g.HardwareRX() || c.Source() != "hw" {
			return fmt.Errorf("capture on ENA with RX ALL: %s", g)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}

// TestProbeSaysSched: `rig nicctl probe` on mlx5 before 6.16 counts the
// qdisc's stamps as its kernel TX stamps and says so, and the NIC's TX
// stamps still come.
func TestProbeSaysSched(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	err := topo.Do(netlab.Sender, func() error {
		ifname := topo.Sender.Interface
		n := nicfake.New(nicfake.MLX5Pre616(), ifname)
		h, err := nicfake.NewHost(t.TempDir(), n, "eth0")
		if err != nil {
			return err
		}
		env := &nicctl.Env{NIC: facts.NIC{FS: h.FS, TS: n}, LinkTimeout: 5 * time.Second, LinkSettle: -1}
		j, err := journal.Open(t.TempDir(), nicctl.Handlers(env))
		if err != nil {
			return err
		}
		defer j.Close()
		defer j.Undo(context.Background())
		r, err := nicctl.Probe(context.Background(), env, j, ifname, nicctl.ProbeOptions{Count: 8, Listen: 50 * time.Millisecond, TxWait: 200 * time.Millisecond})
		if err != nil {
			return err
		}
		var b strings.Builder
		r.WriteText(&b)
		if !r.TxSched || r.TxSW != 8 || r.TxHW != 8 || !strings.Contains(b.String(), "kernel stamps (sched: before the qdisc") {
			return fmt.Errorf("probe: sched %v, kernel %d, NIC %d of 8:\n%s", r.TxSched, r.TxSW, r.TxHW, b.String())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
