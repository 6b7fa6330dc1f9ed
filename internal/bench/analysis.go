package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/wire"
)

// AnalysisRow is `rig report` on one synthetic run.
type AnalysisRow struct {
	Samples   int
	Rounds    int
	Bytes     int64         // sample files on disk
	Wall      time.Duration // rig report, generation excluded
	CPU       time.Duration // user + system
	PeakRSSKB int64         // VmHWM of the rig report process (ru_maxrss)
}

// NSPerSample is the wall time per sample.
func (a AnalysisRow) NSPerSample() float64 { return float64(a.Wall) / float64(a.Samples) }

// CPUPerSample is the CPU time (user + system) per sample, in ns.
func (a AnalysisRow) CPUPerSample() float64 { return float64(a.CPU) / float64(a.Samples) }

// synthRoundSize is the largest round of a synthetic run: real rounds hold
// up to about a million requests (17 min at 1 ms), so bigger runs have more
// rounds, not bigger ones.
const synthRoundSize = 1_000_000

func benchAnalysis(ctx context.Context, cfg Config) (rows []AnalysisRow, notes []string, err error) {
	for _, n := range cfg.AnalysisSizes {
		if ctx.Err() != nil {
			return rows, notes, ctx.Err()
		}
		dir := filepath.Join(cfg.Dir, "analysis", "run-"+strconv.Itoa(n))
		fmt.Fprintf(cfg.Log, "bench: analysis: writing %d synthetic samples\n", n)
		rounds, bytes, err := WriteSyntheticRun(dir, n)
		if err != nil {
			return rows, notes, fmt.Errorf("analysis: synthetic run of %d samples: %w", n, err)
		}
		fmt.Fprintf(cfg.Log, "bench: analysis: rig report on %d samples (%d rounds, %d MB)\n", n, rounds, bytes>>20)
		row, err := timeReport(ctx, cfg.Rig, dir)
		os.RemoveAll(dir)
		if err != nil {
			return rows, notes, fmt.Errorf("analysis: rig report on %d samples: %w", n, err)
		}
		row.Samples, row.Rounds, row.Bytes = n, rounds, bytes
		rows = append(rows, row)
	}
	return rows, notes, nil
}

// timeReport runs `rig report DIR` and measures its wall time, CPU time and
// peak resident set (the child's ru_maxrss, which is its VmHWM).
func timeReport(ctx context.Context, rig, dir string) (AnalysisRow, error) {
	cmd := exec.CommandContext(ctx, rig, "report", dir, "--format", "md")
	errOut := &limitedBuffer{max: 4096}
	cmd.Stdout, cmd.Stderr = nil, errOut
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return AnalysisRow{}, fmt.Errorf("%w: %s", err, errOut.String())
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return AnalysisRow{}, fmt.Errorf("no rusage for rig report")
	}
	return AnalysisRow{Wall: wall, CPU: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(),
		PeakRSSKB: ru.Maxrss}, nil
}

type limitedBuffer struct {
	b   []byte
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := l.max - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return string(l.b) }

// WriteSyntheticRun writes a run directory of n requests in rounds of at
// most a million, alternating between two arms, with sender and responder
// files whose stamps look like a software-timestamped lab run (a few µs
// per hop, a 1 % tail). It returns the rounds written and their bytes.
func WriteSyntheticRun(dir string, n int) (rounds int, bytes int64, err error) {
	if n <= 0 {
		return 0, 0, fmt.Errorf("synthetic run: %d samples: want at least 1", n)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, 0, err
	}
	rounds = (n + synthRoundSize - 1) / synthRoundSize
	arms := []string{"base", "other"}
	perArm := (rounds + 1) / 2
	m := rundir.Manifest{Format: "rig-run", FormatVersion: rundir.FormatVersion, RigVersion: "bench-synthetic",
		RunID: wire.FormatRunID(0xb7), Scenario: "synthetic", Baseline: arms[0], Rounds: perArm,
		Count: min(n, synthRoundSize), IntervalNS: 1_000_000, Timestamps: "software",
		StartedAt: "2026-01-01T00:00:00Z"}
	usedArms := min(rounds, 2)
	for i := 0; i < usedArms; i++ {
		m.Arms = append(m.Arms, rundir.Arm{Name: arms[i], Index: i})
	}
	for k := 0; k < perArm; k++ {
		var order []int
		for i := 0; i < usedArms; i++ {
			if 2*k+i < rounds {
				order = append(order, i)
			}
		}
		m.Order = append(m.Order, order)
	}
	if err := rundir.WriteJSON(filepath.Join(dir, rundir.ManifestFile), m); err != nil {
		return 0, 0, err
	}
	snd := make([]samples.Record, min(n, synthRoundSize))
	rsp := make([]samples.Record, len(snd))
	rng := uint64(0x9e3779b97f4a7c15)
	next := func(mod int64) int64 {
		rng ^= rng >> 12
		rng ^= rng << 25
		rng ^= rng >> 27
		return int64((rng * 2685821657736338717) % uint64(mod))
	}
	const t0 = int64(1_767_225_600_000_000_000)
	left := n
	for r := 0; r < rounds; r++ {
		armIdx, k := r%2, r/2
		cnt := min(left, synthRoundSize)
		left -= cnt
		for i := 0; i < cnt; i++ {
			s, p := &snd[i], &rsp[i]
			*s, *p = samples.Record{Seq: uint64(i)}, samples.Record{Seq: uint64(i)}
			due := t0 + int64(r)*2_000_000_000_000 + int64(i)*1_000_000
			s.T[samples.Due] = due
			s.T[samples.TxUser] = due + 500 + next(2000)
			s.T[samples.TxSW] = s.T[samples.TxUser] + 2000 + next(500)
			p.T[samples.ReqRxSW] = s.T[samples.TxSW] + 10_000 + next(300)
			wake := 5000 + int64(armIdx)*800 + next(1000)
			if next(100) == 0 {
				wake += next(200_000)
			}
			p.T[samples.ReqRxUser] = p.T[samples.ReqRxSW] + wake
			p.T[samples.RepTxUser] = p.T[samples.ReqRxUser] + 1000 + next(500)
			p.T[samples.RepTxSW] = p.T[samples.RepTxUser] + 2000 + next(300)
			s.T[samples.RxSW] = p.T[samples.RepTxSW] + 10_000 + next(300)
			s.T[samples.RxUser] = s.T[samples.RxSW] + 4000 + next(2000)
		}
		rd := rundir.RoundDir(dir, arms[armIdx], k)
		if err := os.MkdirAll(rd, 0o755); err != nil {
			return 0, 0, err
		}
		for _, f := range []struct {
			role samples.Role
			recs []samples.Record
			cols []samples.Stamp
		}{
			{samples.RoleSender, snd[:cnt], []samples.Stamp{samples.Due, samples.TxUser, samples.TxSW, samples.RxSW, samples.RxUser}},
			{samples.RoleResponder, rsp[:cnt], []samples.Stamp{samples.ReqRxSW, samples.ReqRxUser, samples.RepTxUser, samples.RepTxSW}},
		} {
			// Software stamps only, as on a VM: no empty hardware columns.
			h := samples.Header{Role: f.role, RunID: m.RunID, Arm: arms[armIdx], ArmIndex: armIdx, Round: k,
				IntervalNS: 1_000_000, Count: cnt, Size: 64, Host: "synthetic",
				Clocks: map[string]samples.Clock{}}
			for _, st := range f.cols {
				h.Columns = append(h.Columns, st.String())
				src := "sw"
				if st == samples.Due || st == samples.TxUser || st == samples.RxUser || st == samples.ReqRxUser || st == samples.RepTxUser {
					src = "user"
				}
				h.Clocks[st.String()] = samples.Clock{Source: src, Clock: "CLOCK_REALTIME"}
			}
			c := samples.Counters{Sent: uint64(cnt), Received: uint64(cnt)}
			path := filepath.Join(rd, samples.FileName(f.role))
			if err := samples.WriteFile(path, h, f.recs, samples.Footer{Counters: c}); err != nil {
				return 0, 0, err
			}
			if st, err := os.Stat(path); err == nil {
				bytes += st.Size()
			}
		}
	}
	return rounds, bytes, nil
}
