package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/rig-project/rig/analysis"
	"github.com/rig-project/rig/internal/cli"
)

func init() {
	register(&command{
		name:    "report",
		summary: "print the tables of a run directory (and with --write regenerate its report files)",
		usage:   "DIR [--format md|csv|json] [--metric NAME] [--write] [--warmup N]",
		flags:   reportFlags,
	})
}

// problemsError makes `rig report` exit 3 when it reported with problems
// (bad or truncated files, unreadable rounds): the output covers what could
// be read, and a script must not mistake it for a clean run.
type problemsError struct{ n int }

func (e problemsError) Error() string {
	return fmt.Sprintf("%d problem(s) in the run directory (listed in the output); reported what could be read", e.n)
}
func (e problemsError) ExitCode() int { return 3 }

func reportFlags(fs *flag.FlagSet) func(context.Context) error {
	format := addFormat(fs, "the forms of tables.md, tables.csv and report.json", "md", "csv", "json")
	metric := fs.String("metric", "", "only this metric (turnaround, rtt, network, kernel_to_user, user_processing, user_to_kernel, lateness, rtt_from_due)")
	write := fs.Bool("write", false, "also regenerate every report file in DIR (tables.md/csv, report.json/md/html, hist.hlog, plots/)")
	warmup := fs.Int("warmup", -1, "override the warm-up W (default: the manifest's, else the sample headers')")
	return func(ctx context.Context) error {
		pos := fs.Args()
		if len(pos) != 1 {
			return cli.Usagef("want one run directory, got %d arguments (e.g. rig report results/demo-20260101T000000Z)", len(pos))
		}
		opt := analysis.Options{}
		if *warmup >= 0 {
			opt.OverrideWarmup, opt.Warmup = true, *warmup
		} else if *warmup != -1 {
			return cli.Usagef("--warmup %d: want a count ≥ 0", *warmup)
		}
		rep, err := analysis.Run(pos[0], opt)
		if err != nil {
			return err
		}
		if *write {
			if err := analysis.WriteAll(pos[0], rep); err != nil {
				return err
			}
		}
		out := rep
		if *metric != "" {
			if out, err = rep.Only(*metric); err != nil {
				return cli.Usagef("--metric: %v", err)
			}
		}
		if err := writeFormat(os.Stdout, format.value, out); err != nil {
			return err
		}
		for _, p := range rep.Problems {
			fmt.Fprintln(os.Stderr, "rig report: problem:", p)
		}
		if len(rep.Problems) > 0 {
			return problemsError{len(rep.Problems)}
		}
		return nil
	}
}

func writeFormat(w io.Writer, format string, r *analysis.Report) error {
	switch format {
	case "csv":
		return analysis.WriteTablesCSV(w, r)
	case "json":
		return analysis.WriteJSON(w, r)
	}
	return analysis.WriteTablesMD(w, r)
}
