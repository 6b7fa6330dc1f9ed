package analysis

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
)

// rng is a tiny deterministic generator (xorshift64*) so committed test
// data can be regenerated bit for bit.
type rng uint64

func (r *rng) next() uint64 {
	x := uint64(*r)
	x ^= x >> 12
	x ^= x << 25
	x ^= x >> 27
	*r = rng(x)
	return x * 2685821657736338717
}

func (r *rng) intn(n int64) int64 { return int64(r.next() % uint64(n)) }

// genSpec describes a synthetic run.
type genSpec struct {
	Arms    []string
	Rounds  int
	Count   int
	Warmup  int
	Seed    uint64
	Capture bool
	// Events inject special sequences: arm → round → seq → what.
	Events map[string]map[int]map[uint64]string
	// NoEnv leaves out env/<host>.json (the manifest still lists the hosts).
	NoEnv bool
}

// genIface is the interface each role's sample headers name.
var genIface = map[samples.Role]string{samples.RoleSender: "rig-snd0", samples.RoleResponder: "rig-rsp0", samples.RoleCapture: "rig-cap0"}

// genSettings are the header settings of a role: the responder of arm i
// runs on CPU i+2, the sender is not pinned.
func genSettings(role samples.Role, armIdx int) map[string]any {
	st := map[string]any{"poll": "block", "sched": "other", "hardware_stamps": "rx not requested, tx not requested"}
	switch role {
	case samples.RoleSender:
		st["cpu"] = -1
	case samples.RoleResponder:
		st["cpu"] = armIdx + 2
		st["poll"] = "busy"
	case samples.RoleCapture:
		st = map[string]any{"hardware_stamps": "rx not requested"}
	}
	return st
}

// writeEnv writes env/<host>.json from the real snapshot in
// testdata/env/responder.json, with the host's interface.
func writeEnv(t testing.TB, dir, host, iface string) {
	t.Helper()
	b, err := os.ReadFile("testdata/env/responder.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, v := range m["nic"].(map[string]any) {
		v.(map[string]any)["iface"] = iface
		m["nic"] = map[string]any{iface: v}
	}
	if err := rundir.WriteJSON(filepath.Join(dir, rundir.EnvDir, host+".json"), m); err != nil {
		t.Fatal(err)
	}
}

const t0 = int64(1_767_225_600_000_000_000) // 2026-01-01T00:00:00Z in ns

func clockMap(stamps ...samples.Stamp) map[string]samples.Clock {
	m := map[string]samples.Clock{}
	for _, s := range stamps {
		m[s.String()] = samples.Clock{Source: "sw", Clock: "CLOCK_REALTIME"}
	}
	return m
}

// genRound returns the sender, responder and capture records of one round.
// Latency grows with the arm index so comparisons have a real difference.
func genRound(spec genSpec, armIdx, k int) (snd, rsp, cpt []samples.Record) {
	r := rng(spec.Seed + uint64(armIdx)*1000 + uint64(k)*7 + 1)
	arm := spec.Arms[armIdx]
	for i := 0; i < spec.Count; i++ {
		seq := uint64(i)
		ev := spec.Events[arm][k][seq]
		var s, p, c samples.Record
		s.Seq, p.Seq, c.Seq = seq, seq, seq
		due := t0 + int64(k)*10_000_000_000 + int64(i)*1_000_000
		s.T[samples.Due] = due
		if ev == "notsent" {
			s.Flags |= samples.FlagNotSent
			snd = append(snd, s)
			continue
		}
		txu := due + 1000 + r.intn(4000)
		s.T[samples.TxUser] = txu
		s.T[samples.TxSW] = txu + 2000 + r.intn(500)
		c.T[samples.CapReqSW] = s.T[samples.TxSW] + 10_000 + r.intn(200)
		p.T[samples.ReqRxSW] = c.T[samples.CapReqSW] + 3000 + r.intn(300)
		k2u := int64(5000+armIdx*800) + r.intn(1000)
		if r.intn(100) == 0 { // a tail
			k2u += r.intn(200_000)
		}
		if ev == "slow" { // a 50 ms stall between kernel and user receive
			k2u += 50_000_000
		}
		if i < spec.Warmup { // warm-up samples are slow and must not count
			k2u += 900_000
		}
		p.T[samples.ReqRxUser] = p.T[samples.ReqRxSW] + k2u
		p.T[samples.RepTxUser] = p.T[samples.ReqRxUser] + 1000 + r.intn(500)
		p.T[samples.RepTxSW] = p.T[samples.RepTxUser] + 2000 + r.intn(300)
		c.T[samples.CapRepSW] = p.T[samples.RepTxSW] + 3000 + r.intn(300)
		s.T[samples.RxSW] = c.T[samples.CapRepSW] + 10_000 + r.intn(200)
		s.T[samples.RxUser] = s.T[samples.RxSW] + 4000 + r.intn(2000)
		switch ev {
		case "lost":
			s.T[samples.RxSW], s.T[samples.RxUser], c.T[samples.CapRepSW] = 0, 0, 0
		case "late":
			s.Flags |= samples.FlagLate
		case "dup":
			s.Flags |= samples.FlagDuplicate
		case "reord":
			s.Flags |= samples.FlagReordered
		case "nocap": // capture missed the reply: missing for turnaround
			c.T[samples.CapRepSW] = 0
		}
		snd, rsp, cpt = append(snd, s), append(rsp, p), append(cpt, c)
	}
	return
}

// writeRun writes a complete run directory for spec.
func writeRun(t testing.TB, dir string, spec genSpec) {
	t.Helper()
	m := rundir.Manifest{Format: "rig-run", FormatVersion: rundir.FormatVersion, RigVersion: "test",
		RunID: "00000000000000aa", Scenario: "golden", Baseline: spec.Arms[0], Warmup: spec.Warmup,
		Rounds: spec.Rounds, Count: spec.Count, IntervalNS: 1_000_000, Timestamps: "software",
		StartedAt: "2026-01-01T00:00:00Z"}
	for i, a := range spec.Arms {
		m.Arms = append(m.Arms, rundir.Arm{Name: a, Index: i})
	}
	m.Hosts = map[string]rundir.Host{}
	roles := []samples.Role{samples.RoleSender, samples.RoleResponder}
	if spec.Capture {
		roles = append(roles, samples.RoleCapture)
	}
	for _, r := range roles {
		m.Hosts[string(r)] = rundir.Host{Roles: []string{string(r)}, Via: "ip netns exec"}
		if !spec.NoEnv {
			writeEnv(t, dir, string(r), genIface[r])
		}
	}
	for k := 0; k < spec.Rounds; k++ {
		var order []int
		for i := range spec.Arms {
			order = append(order, (k+i)%len(spec.Arms))
		}
		m.Order = append(m.Order, order)
	}
	if err := rundir.WriteJSON(filepath.Join(dir, rundir.ManifestFile), m); err != nil {
		t.Fatal(err)
	}
	for ai, a := range spec.Arms {
		for k := 0; k < spec.Rounds; k++ {
			rd := rundir.RoundDir(dir, a, k)
			if err := os.MkdirAll(rd, 0o755); err != nil {
				t.Fatal(err)
			}
			snd, rsp, cpt := genRound(spec, ai, k)
			h := samples.Header{RunID: m.RunID, Arm: a, ArmIndex: ai, Round: k, Warmup: spec.Warmup,
				IntervalNS: 1_000_000, Count: spec.Count}
			write := func(role samples.Role, recs []samples.Record, ck map[string]samples.Clock, c samples.Counters) {
				hh := h
				hh.Role, hh.Clocks, hh.Iface, hh.Settings = role, ck, genIface[role], genSettings(role, ai)
				if err := samples.WriteFile(filepath.Join(rd, samples.FileName(role)), hh, recs, samples.Footer{Counters: c}); err != nil {
					t.Fatal(err)
				}
			}
			write(samples.RoleSender, snd, clockMap(samples.TxSW, samples.RxSW), samples.Counters{Sent: uint64(len(snd))})
			write(samples.RoleResponder, rsp, clockMap(samples.ReqRxSW, samples.RepTxSW), samples.Counters{Received: uint64(len(rsp))})
			if spec.Capture {
				write(samples.RoleCapture, cpt, clockMap(samples.CapReqSW, samples.CapRepSW), samples.Counters{})
			}
		}
	}
}

// goldenSpec is the committed run under testdata/run.
var goldenSpec = genSpec{
	Arms: []string{"base", "isolated"}, Rounds: 3, Count: 200, Warmup: 2, Seed: 42, Capture: true,
	Events: map[string]map[int]map[uint64]string{
		"base":     {1: {5: "lost", 7: "dup", 9: "reord", 150: "nocap"}, 2: {199: "notsent"}},
		"isolated": {0: {11: "late", 12: "dup", 1: "lost"}},
	},
}
