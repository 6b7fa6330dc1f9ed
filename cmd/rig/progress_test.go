package main

import (
	"context"
	"os"
	"runtime"
	"testing"
	"time"
)

type fixedProgress struct{}

func (fixedProgress) Progress() (sent, received int) { return 1, 1 }

// With stderr not a terminal and no progress lines asked for, nothing is
// started: no bar goroutines ticking on the sender's CPU for no one.
func TestProgressQuietWithoutTerminal(t *testing.T) {
	if isTerminal(os.Stderr) {
		t.Skip("stderr is a terminal")
	}
	before := runtime.NumGoroutine()
	stop := startProgress(context.Background(), fixedProgress{}, 10, false)
	time.Sleep(20 * time.Millisecond)
	during := runtime.NumGoroutine()
	stop()
	if during > before { // fewer is fine: an earlier test's goroutine may have ended meanwhile
		t.Errorf("%d goroutines while the progress ran, %d before: want none started", during, before)
	}
	// Lines still work without a terminal (a parent rig reads them).
	stop = startProgress(context.Background(), fixedProgress{}, 10, true)
	if runtime.NumGoroutine() <= before {
		t.Error("progress lines started no goroutine")
	}
	stop()
}
