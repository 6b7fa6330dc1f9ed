package cpurank_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/cpurank"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/load"
	"github.com/rig-project/rig/internal/testbin"
)

// TestRealStressDecides pins stress-ng to one CPU of this machine and
// checks that the ranking chooses the other, in both directions, and that
// no stress-ng is left behind.
func TestRealStressDecides(t *testing.T) {
	testbin.Integration(t)
	testbin.StressNG(t)
	t.Cleanup(func() {
		if testbin.StressNGRuns() {
			t.Error("stress-ng still running after the test")
		}
	})
	fs := hostfs.Default()
	for busy, want := range map[int]int{0: 1, 1: 0} {
		t.Run(fmt.Sprintf("stress-on-%d", busy), func(t *testing.T) {
			p, err := load.Start(load.Spec{Args: "--cpu 1 --cpu-method fft", CPUs: []int{busy}, Timeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Stop(context.Background(), 3*time.Second)
			r, err := cpurank.Rank(context.Background(), fs, cpurank.Options{Window: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s", r.Summary())
			if r.Chosen != want {
				testbin.BusyElsewhere(t, r, want)
				t.Fatalf("stress-ng on CPU %d: chose CPU %d, want %d: %+v", busy, r.Chosen, want, r.CPUs)
			}
			loud := r.CPUs[len(r.CPUs)-1]
			if loud.CPU != busy || loud.RunUS < 500_000 || loud.Runnable < 0.5 {
				t.Errorf("the loaded CPU's evidence: %+v", loud)
			}
			// One candidate: the ranker runs pinned to the other CPU.
			r, err = cpurank.Rank(context.Background(), fs, cpurank.Options{CPUs: []int{want}, Window: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			if r.Chosen != want || fmt.Sprint(r.RankerCPUs) != fmt.Sprint([]int{busy}) {
				t.Errorf("one candidate: chose %d, ranker on %v", r.Chosen, r.RankerCPUs)
			}
			if err := p.Stop(context.Background(), 3*time.Second); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Ranking with a pinned ranker leaves no pinned thread behind: the CPUs
// the process may use are the same before and after, on every thread.
func TestRealRankerPinningLeavesNoTrace(t *testing.T) {
	testbin.Integration(t)
	fs := hostfs.Default()
	before, err := hostinfo.ProcessCPUsAllowed(fs, "self")
	if err != nil || len(before) < 2 {
		t.Skipf("needs two CPUs (%v %v)", before, err)
	}
	for i := 0; i < 20; i++ {
		r, err := cpurank.Rank(context.Background(), fs, cpurank.Options{CPUs: before[1:], Window: 10 * time.Millisecond, Scans: 2})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(r.RankerCPUs) != fmt.Sprint(before[:1]) {
			t.Fatalf("ranker on %v", r.RankerCPUs)
		}
	}
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, task := range tasks {
		l, err := hostinfo.CPUsAllowed(fs, "self/task/"+task.Name())
		if err == nil && fmt.Sprint(l) != fmt.Sprint(before) {
			t.Errorf("thread %s left pinned to %v (process: %v)", task.Name(), l, before)
		}
	}
}

// TestRealShortLivedCounted keeps one CPU busy with processes that each
// end long before the next thread scan, so no scan ever sees one twice,
// and checks that their run time is counted: that CPU ranks below the
// other and most of its time is other threads'.
func TestRealShortLivedCounted(t *testing.T) {
	testbin.Integration(t)
	cpus, err := hostinfo.ProcessCPUsAllowed(hostfs.Default(), "self")
	if err != nil || len(cpus) < 2 {
		t.Skipf("needs two CPUs (%v %v)", cpus, err)
	}
	cand := cpus[len(cpus)-2:]
	for i, busy := range cand {
		free := cand[1-i]
		t.Run(fmt.Sprintf("on-%d", busy), func(t *testing.T) {
			sp := testbin.Spin(t, busy, false, testbin.ShortLived)
			sp.Wait(t, 5) // children are being born and ending
			before := sp.Lines()
			r, err := cpurank.Rank(context.Background(), hostfs.Default(), cpurank.Options{CPUs: cand, Window: time.Second, Scans: 5})
			if err != nil {
				t.Fatal(err)
			}
			ended := sp.Lines() - before
			t.Logf("%d children ended in the window; %s; run source: %s", ended, r.Summary(), r.RunSource)
			// At least 20 ended in the 1 s window, one after another: on
			// average each lived less than a fifth of a 250 ms scan step.
			if ended < 20 {
				t.Fatalf("only %d children ended in the window: they lived too long to prove anything", ended)
			}
			testbin.BusyElsewhere(t, r, free)
			loud := r.Get(busy)
			if r.Chosen != free || loud.Rank != 2 || loud.RunUS < 500_000 {
				t.Fatalf("short-lived processes on CPU %d: chose %d; that CPU: %+v", busy, r.Chosen, loud)
			}
		})
	}
}
