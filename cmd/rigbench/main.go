// Command rigbench measures rig against sockperf and cyclictest on an
// emulated lab and prints the table of bench/RESULTS.md (docs/bench.md).
// It is a developer tool, not part of rig's release: make bench and make
// bench-smoke build it beside rig and run it, and it runs the rig binary
// it is given (--rig) as users do.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/rig-project/rig/internal/bench"
	"github.com/rig-project/rig/internal/clidoc"
	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/rundir"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// usageError marks bad input (exit 2): flags, a missing rig binary (and
// bench.NativeMissing: a missing native program).
type usageError struct{ error }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// run is rigbench with args: exit 0 on success and -h, 2 on bad input, 1
// when the bench failed. SIGINT, SIGTERM and SIGHUP stop it, and the lab it
// built is removed.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	err := runBench(ctx, args, stdout, stderr)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintln(stderr, "rigbench: "+strings.TrimPrefix(err.Error(), "bench: "))
	if errors.As(err, new(usageError)) || errors.As(err, new(bench.NativeMissing)) {
		return 2
	}
	return 1
}

const synopsis = "[--rig PATH] [--smoke] [--out FILE] [--lab NAME] [--rounds N] [--round-time D] [--budget D] [--until-decided] [--parts noise,cost,rate,analysis,rtt] [--noise-rounds N] [--noise-time D] [--noise-sched other|fifo:N] [--engines go,native] [--analysis-sizes 1M,10M,100M] [--format md] ..."

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("rigbench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: rigbench "+synopsis+"\n\nflags:")
		clidoc.PrintFlags(fs.Output(), fs)
	}
	rigFlag := fs.String("rig", "", "`PATH` of the rig binary to measure (default: rig beside rigbench, else bin/rig, else rig on PATH)")
	smoke := fs.Bool("smoke", false, "tiny version (about a minute): 1 round of 2s, 1s of rate, counting rounds of 3s, 2 noise rounds of 1s, report on 100k samples")
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
	noiseRounds := fs.Int("noise-rounds", 0, "rounds of the noise part, `rig noise` and cyclictest taking turns going first (default 4; smoke 2)")
	noiseTime := fs.Duration("noise-time", 0, "per tool and noise round, 1s..1h (default 10s; smoke 1s)")
	var noiseSched cpusched.Sched
	fs.TextVar(&noiseSched, "noise-sched", cpusched.Sched{}, "the noise probe's policy, other | fifo:N; cyclictest gets the same (-p N)")
	parts := fs.String("parts", "", "parts to run, comma-separated: noise, cost, rate, analysis, rtt (with pacing) (default all)")
	engines := fs.String("engines", "", "responder engines of the RTT and cost rounds, comma-separated: go, native (rig respond --engine native, beside the Go responder in the same rounds) (default go,native; without the native program beside --rig, or in $RIG_NATIVE_DIR, the native rounds are refused: build it with make build, or give --engines go)")
	verbose := fs.Bool("v", false, "log progress and the tools' messages to stderr")
	fs.Func("format", "output `FORMAT`: md (its one form: the table of bench/RESULTS.md) (default md)", func(f string) error {
		if f != "md" {
			return errors.New("want md")
		}
		return nil
	})
	if err := parse(fs, args, stdout); err != nil {
		return err
	}
	self, _ := os.Executable()
	rig, err := findRig(*rigFlag, self)
	if err != nil {
		return err
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
	setDur(&cfg.NoiseTime, *noiseTime)
	if *noiseRounds != 0 {
		cfg.NoiseRounds = *noiseRounds
	}
	cfg.NoiseSched = noiseSched
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
	if *engines != "" {
		if cfg.Engines, err = bench.ParseEngines(*engines); err != nil {
			return usageError{err}
		}
	}
	if *verbose {
		cfg.Log = stderr
	}
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		if res != nil && (len(res.RTT) > 0 || res.Rate != nil || len(res.Analysis) > 0 || len(res.Cost) > 0 || res.Noise != nil) {
			_ = res.Markdown(stderr) // what was measured before the failure
		}
		return err
	}
	if err := res.Markdown(stdout); err != nil {
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

// parse parses args with the flags anywhere among them, as rig does
// (`rigbench x -h` prints the help on stdout), and refuses the arguments
// left: rigbench takes none.
func parse(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	var stray []string
	for {
		if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fs.Usage()
			return err
		} else if err != nil {
			return usagef("%s ('rigbench -h' lists the flags)", flagDash.Replace(err.Error()))
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			stray = append(stray, rest...)
			break
		}
		stray, args = append(stray, rest[0]), rest[1:]
	}
	if len(stray) > 0 {
		return usagef("unexpected arguments %q: it takes none", stray)
	}
	return nil
}

// flagDash names flags in the flag package's errors as rigbench's help
// writes them, with two dashes.
var flagDash = strings.NewReplacer("for flag -", "for flag --", "not defined: -", "not defined: --")

// findRig returns the absolute path of the rig binary to measure: given
// (--rig: a path, or a name looked up on PATH), else rig beside self
// (rigbench's own executable, where make bench builds both), else bin/rig,
// else rig on PATH.
func findRig(given, self string) (string, error) {
	try := []string{given}
	if given == "" {
		try = []string{filepath.Join(filepath.Dir(self), "rig"), filepath.Join("bin", "rig"), "rig"}
	}
	for _, p := range try {
		if p, err := exec.LookPath(p); err == nil {
			return filepath.Abs(p)
		} else if given != "" {
			return "", usagef("--rig %s: %v", given, err)
		}
	}
	return "", usagef("no rig binary beside rigbench (%s), at bin/rig or on PATH: build it (make build) or name it with --rig PATH", try[0])
}
