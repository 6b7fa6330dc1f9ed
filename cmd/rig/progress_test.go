package main

import (
	"context"
	"os"
	"runtime"
	"strings"
	"testing"
)

type fixedProgress struct{}

func (fixedProgress) Progress() (sent, received int) { return 1, 1 }

// With stderr not a terminal and no progress lines asked for, nothing is
// started: no bar goroutines ticking on the sender's CPU for no one.
func TestProgressQuietWithoutTerminal(t *testing.T) {
	if isTerminal(os.Stderr) {
		t.Skip("stderr is a terminal")
	}
	// A goroutine startProgress started is in the stacks when it returns.
	stop := startProgress(context.Background(), fixedProgress{}, 10, false)
	if n := progressGoroutines(); n != 0 {
		t.Errorf("%d progress goroutines running: want none started", n)
	}
	stop()
	// Lines still work without a terminal (a parent rig reads them).
	stop = startProgress(context.Background(), fixedProgress{}, 10, true)
	if progressGoroutines() == 0 {
		t.Error("progress lines started no goroutine")
	}
	stop()
}

// progressGoroutines counts the goroutines startProgress started (by their
// stacks: counting all goroutines races with other tests' goroutines ending).
func progressGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "cmd/rig.startProgress.") {
			n++
		}
	}
	return n
}
