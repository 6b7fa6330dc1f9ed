package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/rig-project/rig/internal/agent"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/runner"
	"github.com/rig-project/rig/internal/scenario"
)

// execRun loads, validates and runs a scenario, then prints the tables in
// format and where the run directory is.
func execRun(ctx context.Context, path, results, remoteRig, format string, verbose bool) error {
	root := hostfs.Default()
	s, _, err := loadAndValidate(path, root, nil)
	if err != nil {
		return err
	}
	// Labs and work directories of runs killed before: removed, and said.
	if _, err := removeStale(os.Stderr, "rig run"); err != nil {
		logf("rig run: warning: %v", err)
	}
	plan := s.Plan()
	for _, a := range plan.Skipped {
		logf("rig run: arm %s skipped: %s", a.Name, a.Skip)
	}
	logf("rig run: %s: %d arms × %d rounds × %d requests every %v (about %v of sending)",
		s.Name, len(plan.Arms), len(plan.Rounds), s.Traffic.Count, s.Traffic.Interval, plan.Duration(s.Traffic).Round(time.Second))
	o := runner.Options{Scenario: s, ResultsDir: results, CommandLine: os.Args, FS: root, RemoteRig: remoteRig}
	if verbose {
		o.Log = os.Stderr
	}
	bar := newRunBar(ctx, len(plan.Rounds)*len(plan.Arms))
	o.Progress = bar.update
	res, err := runner.Run(ctx, o)
	bar.done()
	var list scenario.ErrorList
	var pending *journal.PendingError
	var re *agent.RemoteError
	if errors.As(err, &list) || errors.As(err, &pending) || (errors.As(err, &re) && re.Usage) {
		return err // refused before the first round (the agents' facts refute the file; rig restore first): no tables
	}
	if res != nil && res.Report != nil {
		if format == "md" {
			fmt.Println() // apart from the progress lines on a terminal
		}
		if werr := writeFormat(os.Stdout, format, res.Report); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	if res != nil {
		abs, _ := filepath.Abs(res.Dir)
		logf("rig run: run directory %s%s", abs, reportFiles(res.Dir))
	}
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("interrupted: finished rounds are kept, host settings restored: %w", err)
	}
	return err
}

// runBar is the terminal progress display of rig run; mpb draws nothing
// when stderr is not a terminal.
type runBar struct {
	p    *mpb.Progress
	bar  *mpb.Bar
	info string
}

func newRunBar(ctx context.Context, steps int) *runBar {
	b := &runBar{p: mpb.NewWithContext(ctx, mpb.WithOutput(os.Stderr), mpb.WithWidth(30))}
	b.bar = b.p.AddBar(int64(steps*1000),
		mpb.PrependDecorators(decor.Any(func(decor.Statistics) string { return b.info })),
		mpb.AppendDecorators(decor.Percentage()))
	return b
}

func (b *runBar) update(p runner.Progress) {
	// Unanswered so far includes the request in flight; the tables count
	// losses exactly after the round.
	b.info = fmt.Sprintf("round %d/%d arm %-14s sent %5d/%d answered %5d ETA %s ", p.Round+1, p.Rounds, p.Arm,
		p.Sent, p.Count, p.Received, p.ETA.Round(time.Second))
	b.bar.SetCurrent(int64(p.Step*1000 + p.Sent*1000/max(1, p.Count)))
}

func (b *runBar) done() {
	b.bar.Abort(false)
	b.p.Wait()
}

// reportFiles lists the report files the run directory has, as
// " (report.html, tables.md, …)", or says there are none: after a failure
// (a full disk) some or all were never written.
func reportFiles(dir string) string {
	var have []string
	for _, f := range []string{"report.html", "tables.md", "report.json", "plots/"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			have = append(have, f)
		}
	}
	if len(have) == 0 {
		return " (no report was written)"
	}
	return " (" + strings.Join(have, ", ") + ")"
}
