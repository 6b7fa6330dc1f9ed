package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// progressSource reports how far a round is.
type progressSource interface {
	Progress() (sent, received int)
}

// startProgress shows a progress bar on a terminal (mpb writes nothing when
// stderr is not one, so logs stay clean), or, with lines, prints
// "progress SENT RECEIVED" once a second for a parent rig process. It
// returns a function that stops it.
func startProgress(ctx context.Context, src progressSource, total int, lines bool) func() {
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
					fmt.Fprintf(os.Stderr, "progress %d %d\n", s, r)
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
