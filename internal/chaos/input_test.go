package chaos

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/tstamp"
	"github.com/rig-project/rig/internal/wire"
)

// The rows of hostile input: damaged run directories for rig report, and a
// flood of foreign and forged datagrams on the wire during a round.
func init() { matrix = append(matrix, inputRows...) }

// quiet is a one-arm run with no knobs, for the input rows.
const quiet = `name: quiet
emulate: netns
traffic: {group: 239.88.0.2:7801, interval: 1ms, count: 3000}
timestamps: software
rounds: 1
arms:
  - name: base
    responder: {cpu: 1}
`

var inputRows = []row{
	{
		fault:    "a flood of foreign and forged datagrams during a round (garbage, the run's requests of another arm and round, forged replies sent the requests' way)",
		expected: "every real request answered; the strays counted as foreign by responder and capture and shown in the tables; no negative turnaround; exit 0",
		run: func(x *h) {
			p := x.rigRun(quiet)
			x.waitRun(p, "the round", 60*time.Second, func() bool {
				return len(x.rigProcs("respond")) > 0 && len(x.rigProcs("send")) > 0
			})
			dir := x.runDir("quiet")
			runID, err := wire.ParseRunID(x.manifest(dir).RunID)
			if err != nil {
				x.failf("run id: %v", err)
				return
			}
			topo := x.lab()
			if topo == nil {
				return
			}
			group := netip.MustParseAddrPort("239.88.0.2:7801")
			var garbage, strays, forged [][]byte
			for i := 0; i < 2000; i++ {
				garbage = append(garbage, []byte(fmt.Sprintf("not a rig packet %d", i)))
				strays = append(strays, forge(wire.Request, runID, 1, 0, uint64(i)), forge(wire.Request, runID, 0, 5, uint64(i)))
			}
			for i := 0; i < 1000; i++ {
				forged = append(forged, forge(wire.Reply, runID, 0, 0, uint64(i)))
			}
			sent := 0
			for _, batch := range [][][]byte{garbage, strays, forged} {
				n, err := x.inject(topo, 7802, group, batch)
				sent += n
				if err != nil {
					x.failf("injecting: %v", err)
					return
				}
			}
			x.observe("%d datagrams injected", sent)
			code := p.wait(2 * time.Minute)
			if code != 0 {
				x.failf("rig run: exit %d:\n%s", code, lastLines(p.out.String(), 10))
				return
			}
			var rep struct {
				Arms []struct {
					Accounting []struct {
						Sent, Answered, Lost int
						Foreign              map[string]uint64
					} `json:"accounting"`
				} `json:"arms"`
				Problems []string `json:"problems"`
			}
			b, err := os.ReadFile(filepath.Join(dir, "report.json"))
			if err != nil || json.Unmarshal(b, &rep) != nil || len(rep.Arms) != 1 || len(rep.Arms[0].Accounting) != 1 {
				x.failf("report.json: %v", err)
				return
			}
			a := rep.Arms[0].Accounting[0]
			x.observe("answered %d of %d, foreign responder %d capture %d", a.Answered, a.Sent, a.Foreign["responder"], a.Foreign["capture"])
			if a.Answered != a.Sent || a.Sent == 0 {
				x.failf("real requests unanswered: %d of %d", a.Answered, a.Sent)
			}
			if a.Foreign["responder"] < 4000 || a.Foreign["capture"] < 5000 {
				x.failf("strays not counted as foreign: %v", a.Foreign)
			}
			for _, pr := range rep.Problems {
				if strings.Contains(pr, "negative") {
					x.failf("a forged reply became a sample: %s", pr)
				}
			}
			if t, _ := os.ReadFile(filepath.Join(dir, "tables.md")); !strings.Contains(string(t), fmt.Sprintf("/%d/", a.Foreign["responder"])) {
				x.failf("tables.md does not show the foreign counts")
			}
			x.clean("after exit")
		},
	},
	{
		fault:    "damaged run directories given to rig report (truncated, bit-flipped, FIFO, missing and duplicated files, nonsense manifest)",
		expected: "no hang, no panic; exit 3 naming the damage, with what could be read reported; never exit 0",
		run: func(x *h) {
			p := x.rigRun(quiet)
			if code := p.wait(2 * time.Minute); code != 0 {
				x.failf("rig run: exit %d:\n%s", code, lastLines(p.out.String(), 10))
				return
			}
			good := x.runDir("quiet")
			round := filepath.Join("arms", "base", "round-0")
			damages := []struct {
				what, want string
				code       int
				damage     func(dir string) error
			}{
				{"truncated responder.samples", "responder.samples", 3, func(d string) error {
					f := filepath.Join(d, round, "responder.samples")
					st, err := os.Stat(f)
					if err != nil {
						return err
					}
					return os.Truncate(f, st.Size()/2)
				}},
				{"a flipped byte in the sender's footer", "sender.samples", 3, func(d string) error {
					f := filepath.Join(d, round, "sender.samples")
					b, err := os.ReadFile(f)
					if err != nil {
						return err
					}
					b[len(b)-20] ^= 0x40
					return os.WriteFile(f, b, 0o644)
				}},
				{"capture.samples is a FIFO", "capture.samples", 3, func(d string) error {
					f := filepath.Join(d, round, "capture.samples")
					os.Remove(f)
					return syscall.Mkfifo(f, 0o644)
				}},
				{"sender.samples missing", "sender.samples", 3, func(d string) error {
					return os.Remove(filepath.Join(d, round, "sender.samples"))
				}},
				{"a stray round directory", "round--1", 3, func(d string) error {
					return os.Mkdir(filepath.Join(d, "arms", "base", "round--1"), 0o755)
				}},
				{"the manifest lists the arm twice", "twice", 3, func(d string) error {
					return editManifest(d, func(m map[string]any) {
						arms := m["arms"].([]any)
						m["arms"] = append(arms, arms[0])
					})
				}},
				{"a negative warm-up in the manifest", "warm", 3, func(d string) error {
					return editManifest(d, func(m map[string]any) { m["warmup"] = -5 })
				}},
				{"a manifest that is not JSON", "bad manifest", 3, func(d string) error {
					return os.WriteFile(filepath.Join(d, "manifest.json"), []byte("{not json"), 0o644)
				}},
			}
			held := 0
			for i, dm := range damages {
				dir := filepath.Join(x.dir, fmt.Sprintf("damaged-%d", i))
				if err := os.CopyFS(dir, os.DirFS(good)); err != nil {
					x.failf("copy: %v", err)
					return
				}
				if err := dm.damage(dir); err != nil {
					x.failf("%s: %v", dm.what, err)
					continue
				}
				rp := x.start(nil, "report", dir)
				code := rp.wait(30 * time.Second)
				out := rp.out.String()
				switch {
				case code == -2:
					x.failf("%s: rig report hung", dm.what)
				case strings.Contains(out, "panic:") || strings.Contains(out, "goroutine "):
					x.failf("%s: rig report panicked:\n%s", dm.what, lastLines(out, 10))
				case code != dm.code:
					x.failf("%s: exit %d, want %d:\n%s", dm.what, code, dm.code, lastLines(out, 6))
				case !strings.Contains(out, dm.want):
					x.failf("%s: the output does not name %q:\n%s", dm.what, dm.want, lastLines(out, 6))
				default:
					held++
				}
			}
			x.observe("%d of %d damaged directories refused or reported", held, len(damages))
			x.clean("after the reports")
		},
	},
}

// forge is a rig datagram with the given header.
func forge(typ wire.Type, run uint64, arm, round uint32, seq uint64) []byte {
	return wire.Encode(make([]byte, 64), 64, &wire.Header{Type: typ, RunID: run, Arm: arm, Round: round, Seq: seq})
}

// runDir is the row's run directory of scenario name (there is one).
func (x *h) runDir(name string) string {
	x.t.Helper()
	var dir string
	x.waitFor("the run directory", 30*time.Second, func() bool {
		m, _ := filepath.Glob(filepath.Join(x.results, name+"-*", "manifest.json"))
		if len(m) == 1 {
			dir = filepath.Dir(m[0])
		}
		return dir != ""
	})
	return dir
}

type manifestView struct {
	RunID string `json:"run_id"`
}

func (x *h) manifest(dir string) manifestView {
	var m manifestView
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		x.failf("manifest: %v", err)
	}
	return m
}

// lab is the row's emulated topology, from its description in the row's
// lab directory.
func (x *h) lab() *netlab.Topology {
	m, _ := filepath.Glob(filepath.Join(x.labs, "*.json"))
	if len(m) != 1 {
		x.failf("lab descriptions %v, want one", m)
		return nil
	}
	b, err := os.ReadFile(m[0])
	if err != nil {
		x.failf("lab: %v", err)
		return nil
	}
	t, err := netlab.ParseTopology(b)
	if err != nil {
		x.failf("lab: %v", err)
		return nil
	}
	return t
}

// inject sends payloads to dst from the lab's sender namespace, from UDP
// port sport, pacing itself so that the veth backlog is not the limit.
func (x *h) inject(topo *netlab.Topology, sport uint16, dst netip.AddrPort, payloads [][]byte) (int, error) {
	n := 0
	err := topo.Do(netlab.Sender, func() error {
		ifi, err := net.InterfaceByName(topo.Sender.Interface)
		if err != nil {
			return err
		}
		c, err := tstamp.ListenUDP(netip.AddrPortFrom(netip.IPv4Unspecified(), sport), tstamp.UDPOptions{Device: ifi.Name, ReuseAddr: true})
		if err != nil {
			return err
		}
		defer c.Close()
		if err := c.SetMulticastInterface(ifi.Index); err != nil {
			return err
		}
		for i, p := range payloads {
			if err := c.SendTo(p, dst, uint32(i)); err != nil {
				return err
			}
			n++
			if i%100 == 99 {
				time.Sleep(2 * time.Millisecond) // pacing, not waiting: 100 at once fit the veth backlog
			}
		}
		return nil
	})
	return n, err
}

func editManifest(dir string, edit func(map[string]any)) error {
	f := filepath.Join(dir, "manifest.json")
	b, err := os.ReadFile(f)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	edit(m)
	b, err = json.Marshal(m)
	if err != nil {
		return err
	}
	return os.WriteFile(f, b, 0o644)
}
