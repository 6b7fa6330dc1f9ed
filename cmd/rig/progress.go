package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"

	"github.com/rig-project/rig/internal/probe"
)

// progressSource reports how far a round is.
type progressSource interface {
	Progress() (sent, received int)
}

// startProgress shows a progress bar when stderr is a terminal, or, with
// lines, prints a progress line (probe.FormatProgress) once a second for a parent rig
// process. Otherwise it starts nothing: no bar goroutines ticking on the
// sender's CPU for output nobody sees. It returns a function that stops it.
func startProgress(ctx context.Context, src progressSource, total int, lines bool) func() {
	if !lines && !isTerminal(os.Stderr) {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	if lines {
		go func() {
			defer close(finished)
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					s, r := src.Progress()
					fmt.Fprintln(os.Stderr, probe.FormatProgress(s, r))
				}
			}
		}()
		return func() { close(done); <-finished }
	}
	p := mpb.NewWithContext(ctx, mpb.WithOutput(os.Stderr), mpb.WithWidth(40), mpb.WithRefreshRate(200*time.Millisecond))
	bar := p.AddBar(int64(total),
		mpb.PrependDecorators(decor.Name("send "), decor.CountersNoUnit("%d/%d")),
		mpb.AppendDecorators(decor.Percentage(), decor.Name(" ETA "), decor.AverageETA(decor.ET_STYLE_GO)))
	go func() {
		defer close(finished)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				s, _ := src.Progress()
				bar.SetCurrent(int64(s))
				bar.Abort(false)
				p.Wait()
				return
			case <-t.C:
				s, _ := src.Progress()
				bar.SetCurrent(int64(s))
			}
		}
	}()
	return func() { close(done); <-finished }
}

// isTerminal reports whether f is a terminal.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }
