package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/rig-project/rig/analysis"
	"github.com/rig-project/rig/internal/cli"
)

func init() {
	register(&command{
		name:    "compare",
		summary: "compare two run directories arm by arm (B against A)",
		usage:   "RUN_A RUN_B [--format md|csv|json] [--metric NAME]",
		flags:   compareFlags,
	})
}

func compareFlags(fs *flag.FlagSet) func(context.Context) error {
	format := addFormat(fs, "csv: one row per comparison, integer ns", "md", "csv", "json")
	metric := fs.String("metric", "", "only this metric")
	return func(ctx context.Context) error {
		pos := fs.Args()
		if len(pos) != 2 {
			return cli.Usagef("want two run directories RUN_A RUN_B, got %d arguments", len(pos))
		}
		var reps [2]*analysis.Report
		for i, d := range pos {
			r, err := analysis.Run(d, analysis.Options{})
			if err != nil {
				return err
			}
			if *metric != "" {
				if r, err = r.Only(*metric); err != nil {
					return cli.Usagef("--metric: %v", err)
				}
			}
			reps[i] = r
		}
		cs, notes := analysis.CompareRuns(reps[0], reps[1])
		switch format.value {
		case "json":
			nd, nn := analysis.CompareNoise(reps[0], reps[1])
			enc := json.NewEncoder(os.Stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(map[string]any{"format": "rig-compare", "format_version": analysis.FormatVersion,
				"a": reps[0].Run, "b": reps[1].Run, "comparisons": cs, "notes": append(notes, nn...), "noise": nd, "noise_rule": analysis.NoiseRule,
				"problems": map[string][]string{"a": reps[0].Problems, "b": reps[1].Problems}}); err != nil {
				return err
			}
		case "csv":
			if err := analysis.WriteComparisonCSV(os.Stdout, reps[0].Run, reps[1].Run, cs); err != nil {
				return err
			}
			// The CSV has no place for notes and problems: stderr, as rig report does.
			for _, n := range notes {
				fmt.Fprintln(os.Stderr, "rig compare: note:", n)
			}
			for _, r := range reps {
				for _, p := range r.Problems {
					fmt.Fprintf(os.Stderr, "rig compare: problem: %s: %s\n", r.Run, p)
				}
			}
		default:
			if err := analysis.WriteComparisonMD(os.Stdout, reps[0], reps[1], cs, notes); err != nil {
				return err
			}
		}
		if n := len(reps[0].Problems) + len(reps[1].Problems); n > 0 {
			return problemsError{n}
		}
		return nil
	}
}
