package hwtest

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rig-project/rig/analysis"
	"github.com/rig-project/rig/capture"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/nicfake"
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
}

// variant is one driver profile in one situation.
type variant struct {
	name     string
	profile  func() *nicfake.Profile
	setup    func(h *nicfake.Host) error // before rig looks: ptp4l, a config set by hand
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
	swEverywhere = expect{act: swAll, turnaround: "capture sw", rtt: "sender sw", hwCols: noHW}
)

// runID is the run id of every round here: the programs require one.
const runID = 0x7e57

func with(e expect, f func(*expect)) expect { f(&e); return e }

func ptp4l(software bool) func(h *nicfake.Host) error {
	return func(h *nicfake.Host) error { return h.StartPTP4L(812, software) }
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
		// ptp4l asked for PTP_V2_L4_EVENT; mlx5 stamps everything: no change.
		tstamp.Auto:     with(hwEverywhere, func(e *expect) { e.act = keepAll }),
		tstamp.Hardware: with(hwEverywhere, func(e *expect) { e.act = keepAll }),
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
}

func newHosts(t *testing.T, topo *netlab.Topology, v variant) [3]*host {
	t.Helper()
	var hs [3]*host
	for i, ifname := range [3]string{topo.Sender.Interface, topo.Responder.Interface, topo.Capture.Interface} {
		p := v.profile()
		if p.LinkDown > 0 {
			p.LinkDown = 30 * time.Millisecond // keep ENA's resets short here
		}
		n := nicfake.New(p, ifname)
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
		env := &nicctl.Env{FS: h.FS, TS: n, LinkTimeout: 5 * time.Second, LinkSettle: 10 * time.Millisecond}
		j, err := journal.Open(t.TempDir(), nicctl.Handlers(env))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { j.Close() })
		hs[i] = &host{Host: h, env: env, j: j, initial: n.Config()}
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
		for _, mode := range []tstamp.Mode{tstamp.Auto, tstamp.Hardware} {
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
					if res.Decision.Action != want.act[i] {
						t.Errorf("%s: %s, want %s", roleNames[i], res, want.act[i])
					}
					if w := want.why[i]; w != "" && !strings.Contains(res.Decision.Why, w) {
						t.Errorf("%s: %q does not say %q", roleNames[i], res.Decision.Why, w)
					}
					if got := h.NIC.Writes(); got != want.writes[i] {
						t.Errorf("%s: %d SIOCSHWTSTAMP writes while preparing (%+v), want %d", roleNames[i], got, h.NIC.Sets(), want.writes[i])
					}
					if bounce := h.NIC.P.LinkDown > 0 && want.writes[i] > 0; bounce != strings.Contains(res.Link, "link bounced (carrier_changes +2)") {
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
					if h.NIC.P.LinkDown > 0 {
						if cc, want := h.NIC.CarrierChanges(), int64(4*want.writes[i]); prepared && cc != want {
							t.Errorf("%s: carrier_changes %d, want %d (2 per reset)", roleNames[i], cc, want)
						}
					}
				}
			})
		}
	}
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
	// Without the capture the turnaround is the responder's: hardware
	// when both its columns are.
	rspLabel := "responder sw"
	if slices.Contains(want.hwCols, "req_rx_hw") && slices.Contains(want.hwCols, "rep_tx_hw") {
		rspLabel = "responder hw"
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
}

const roundCount = 120

type roundResult struct {
	err     [3]error
	headers [3]samples.Header
	report  *analysis.Report
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
	var capt *capture.Capture // set before its ready
	wg.Add(2)
	go func() {
		defer wg.Done()
		res.err[rsp] = topo.Do(netlab.Responder, func() error {
			r, err := responder.New(responder.Config{Iface: topo.Responder.Interface, Group: group, CPU: -1, RunID: runID,
				Timestamps: mode, Capacity: roundCount, TxWait: 200 * time.Millisecond, Arm: "a", Host: "rsp", Device: hs[rsp].NIC})
			if err != nil {
				ready <- err
				return err
			}
			defer r.Close()
			ready <- nil
			err = r.Run(ctx)
			res.headers[rsp] = r.Header(0, 0)
			return errors.Join(err, r.WriteFile(filepath.Join(dir, samples.FileName(samples.RoleResponder)), 0, 0))
		})
	}()
	go func() {
		defer wg.Done()
		res.err[cpt] = topo.Do(netlab.Capture, func() error {
			c, err := capture.New(capture.Config{Iface: topo.Capture.Interface, Ports: []uint16{group.Port()}, Group: group, RunID: runID,
				Timestamps: mode, Capacity: roundCount, Arm: "a", Host: "cap", Device: hs[cpt].NIC})
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
		s, err := sender.New(sender.Config{Iface: topo.Sender.Interface, Group: group, Count: roundCount, Interval: time.Millisecond, RunID: runID, Port: group.Port(),
			CPU: -1, Timestamps: mode, ReplyTimeout: 300 * time.Millisecond, TxWait: 200 * time.Millisecond, Arm: "a", Host: "snd", Device: hs[snd].NIC})
		if err != nil {
			return err
		}
		defer s.Close()
		err = s.Run(context.Background())
		res.headers[snd] = s.Header()
		// Every request the sender sent and every reply it got passed the
		// mirrored switch ports: the capture has their copies when it has
		// as many rig frames (it reads what is queued when it stops).
		c := s.Counters()
		for deadline := time.Now().Add(10 * time.Second); capt.Frames() < int(c.Sent+c.Received) && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
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
		{K: 0, Load: func() (*samples.Joined, error) { return samples.JoinDir(dir) }}}}}}
	rep, err := analysis.Analyze(in, analysis.Options{})
	if err != nil {
		t.Fatalf("analysis: %v", err)
	}
	if len(rep.Problems) > 0 {
		t.Errorf("analysis problems: %q", rep.Problems)
	}
	return rep
}

// TestENAPrepareWaitsForLink: enabling RX stamps on ENA resets the
// interface; PrepareTimestamping returns only once operstate is up again
// (plus the settle time) and says the link bounced; the undo resets it
// once more and waits again.
func TestENAPrepareWaitsForLink(t *testing.T) {
	p := nicfake.ENA()
	p.LinkDown = 300 * time.Millisecond
	n := nicfake.New(p, "ens6")
	h, err := nicfake.NewHost(t.TempDir(), n, "ens5")
	if err != nil {
		t.Fatal(err)
	}
	env := &nicctl.Env{FS: h.FS, TS: n, LinkTimeout: 5 * time.Second, LinkSettle: 50 * time.Millisecond}
	j, err := journal.Open(t.TempDir(), nicctl.Handlers(env))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	start := time.Now()
	res, err := nicctl.PrepareTimestamping(context.Background(), env, j, "ens6", nicctl.TSRequest{Mode: tstamp.Hardware, Need: tstamp.NeedCapture})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := h.Operstate()
	if st != "up" || took < p.LinkDown+env.LinkSettle {
		t.Fatalf("returned after %v with operstate %q; want up, after ≥ %v", took, st, p.LinkDown+env.LinkSettle)
	}
	if !res.Changed || res.Granted == nil || res.Granted.RxFilter != tstamp.FilterAll ||
		!strings.Contains(res.Link, "link bounced (carrier_changes +2)") || !strings.Contains(res.String(), "then settled 50ms") {
		t.Fatalf("result %s (link %q)", res, res.Link)
	}
	start = time.Now()
	if _, err := j.Undo(context.Background()); err != nil {
		t.Fatal(err)
	}
	st, _ = h.Operstate()
	if took := time.Since(start); st != "up" || took < p.LinkDown {
		t.Fatalf("undo returned after %v with operstate %q", took, st)
	}
	if err := n.Wait(); err != nil {
		t.Fatal(err)
	}
	if n.Config() != (tstamp.HWTstampConfig{}) || n.CarrierChanges() != 4 || n.Writes() != 2 {
		t.Fatalf("after undo: %s, carrier_changes %d, writes %+v", n.Config(), n.CarrierChanges(), n.Sets())
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
			r, err := responder.New(responder.Config{Iface: topo.Responder.Interface, Group: group, CPU: -1, RunID: runID, Timestamps: tstamp.Hardware, Device: n})
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
		c, err := capture.New(capture.Config{Iface: topo.Capture.Interface, Ports: []uint16{group.Port()}, Group: group, RunID: runID, Timestamps: tstamp.Hardware, Device: n})
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
