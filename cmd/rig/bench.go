package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"time"

	"github.com/rig-project/rig/bench"
	"github.com/rig-project/rig/internal/rundir"
)

func init() {
	register(&command{
		name:    "bench",
		summary: "compare rig with sockperf and cyclictest on an emulated lab (prints a Markdown table)",
		run:     runBench,
	})
}

func runBench(ctx context.Context, args []string) error {
	fs := newFlagSet("bench", "[--smoke] [--out FILE] [--lab NAME] [--rounds N] [--round-time D] [--budget D] [--until-decided] [--parts cost,rate,analysis,rtt] [--analysis-sizes 1M,10M,100M] [--format md] ...")
	smoke := fs.Bool("smoke", false, "tiny version (about a minute): 1 round of 2s, 1s of rate, counting rounds of 3s, report on 100k samples")
	out := fs.String("out", "", "also write the Markdown table to FILE (e.g. bench/RESULTS.md)")
	lab := fs.String("lab", "", "use this existing lab (default: build a fresh one and remove it after)")
	dir := fs.String("dir", "", "keep the tools' raw output and sample files here (default: a temporary directory, removed)")
	rounds := fs.Int("rounds", 0, "interleaved RTT rounds, at least (default 24; smoke 1)")
	roundTime := fs.Duration("round-time", 0, "per tool, mode and round at 1 request/ms, whole seconds (default 3s; smoke 2s)")
	budget := fs.Duration("budget", 0, "add RTT rounds while the whole bench fits in this time (make bench: 15m; default: exactly --rounds)")
	untilDecided := fs.Bool("until-decided", false, "after the planned rounds, add rounds of the modes whose ratio goals are undecided until all are decided or --max-rounds")
	maxRounds := fs.Int("max-rounds", 0, "at most this many RTT rounds with --budget or --until-decided (default 96)")
	costTime := fs.Duration("cost-time", 0, "each counting round of the cost part, whole seconds (default 5s; smoke 3s)")
	costWindow := fs.Duration("cost-window", 0, "the counted part of a counting round (default 2s; smoke 1s)")
	warmup := fs.Duration("warmup", 0, "leading part of each rig round left out (default 500ms)")
	lead := fs.Duration("lead", 0, "rig's responder runs alone this long before its sender starts, as sockperf's server does during its client's warm-up (default 2s; negative: none)")
	sndCPU := fs.Int("sender-cpu", 0, "CPU of both tools' sender side")
	rspCPU := fs.Int("responder-cpu", 1, "CPU of both tools' responder side")
	size := fs.Int("size", 64, "UDP payload bytes for both tools")
	rateInterval := fs.Duration("rate-interval", 0, "interval of the rate test (default 20µs)")
	rateTime := fs.Duration("rate-time", 0, "duration of the rate test (default 10s; smoke 1s)")
	ratePoll := fs.String("rate-poll", "busy", "responder poll mode of the rate test")
	sizes := fs.String("analysis-sizes", "", "synthetic sample counts for rig report (default 1M,10M,100M; smoke 100k)")
	parts := fs.String("parts", "", "parts to run, comma-separated: cost, rate, analysis, rtt (with pacing) (default all)")
	verbose := fs.Bool("v", false, "log progress and the tools' messages to stderr")
	addFormat(fs, "its one form: the table of bench/RESULTS.md", "md")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	rig, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the rig binary: %w", err)
	}
	work := *dir
	if work == "" {
		if work, err = os.MkdirTemp("", "rig-bench-"); err != nil {
			return err
		}
		defer os.RemoveAll(work)
	}
	cfg := bench.Config{Rig: rig, Dir: work}
	if *smoke {
		cfg = bench.SmokeConfig(rig, work)
	}
	cfg.Lab, cfg.SenderCPU, cfg.ResponderCPU, cfg.Size, cfg.RatePoll = *lab, *sndCPU, *rspCPU, *size, *ratePoll
	setDur := func(dst *time.Duration, v time.Duration) {
		if v != 0 {
			*dst = v
		}
	}
	if *rounds != 0 {
		cfg.Rounds = *rounds
	}
	if *maxRounds != 0 {
		cfg.MaxRounds = *maxRounds
	}
	cfg.Budget, cfg.UntilDecided = *budget, *untilDecided
	setDur(&cfg.CostTime, *costTime)
	setDur(&cfg.CostWindow, *costWindow)
	setDur(&cfg.RoundTime, *roundTime)
	setDur(&cfg.Warmup, *warmup)
	setDur(&cfg.Lead, *lead)
	setDur(&cfg.RateInterval, *rateInterval)
	setDur(&cfg.RateTime, *rateTime)
	if *sizes != "" {
		if cfg.AnalysisSizes, err = bench.ParseSizes(*sizes); err != nil {
			return usageError{err}
		}
	}
	if *parts != "" {
		if cfg.Parts, err = bench.ParseParts(*parts); err != nil {
			return usageError{err}
		}
	}
	if *verbose {
		cfg.Log = os.Stderr
	}
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		if res != nil && (len(res.RTT) > 0 || res.Rate != nil || len(res.Analysis) > 0 || len(res.Cost) > 0) {
			_ = res.Markdown(os.Stderr) // what was measured before the failure
		}
		return err
	}
	if err := res.Markdown(os.Stdout); err != nil {
		return err
	}
	if *out != "" {
		var b bytes.Buffer
		if err := res.Markdown(&b); err != nil {
			return err
		}
		if err := rundir.WriteFileAtomic(*out, b.Bytes()); err != nil {
			return err
		}
	}
	return nil
}
