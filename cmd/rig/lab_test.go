package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/owner"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/testbin"
)

// runLab runs `rig lab ARGS...` as rig does, returning its error.
func runLab(ctx context.Context, args []string) error {
	_, err := dispatch(ctx, commands["lab"], args)
	return err
}

func TestLabUsageErrors(t *testing.T) {
	t.Setenv(netlab.EnvDir, t.TempDir())
	for _, args := range [][]string{
		{},
		{"bogus"},
		{"up", "--name", "Bad_Name"},
		{"up", "--name", "waytoolongname"},
		{"up", "--subnet", "10.1.2"},
		{"up", "--responders", "0"},
		{"up", "--responders", "10"},
		{"up", "a", "b"},
		{"up", "--name", "x1", "x2"},
		{"down", "--rx-queues", "4"},
		{"show", "-bad"},
	} {
		err := runLab(context.Background(), args)
		if exitCode(err) != 2 {
			t.Errorf("rig lab %q: %v, want a usage error (exit 2)", args, err)
		}
	}
}

func TestLabDownAndShowMissing(t *testing.T) {
	t.Setenv(netlab.EnvDir, t.TempDir())
	name := netlab.UniqueName("cli")
	// Down of a lab that is not there succeeds without privileges.
	if err := runLab(context.Background(), []string{"down", "--name", name}); err != nil {
		t.Errorf("down on a missing lab: %v", err)
	}
	err := runLab(context.Background(), []string{"show", name})
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "rig lab up --name "+name) {
		t.Errorf("show on a missing lab: %v, want not-exist naming the fix", err)
	}
}

func TestLabShowLive(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	code, stdout, stderr := rigIn(t, "lab", "show", topo.Name)
	if code != 0 {
		t.Errorf("show %s: exit %d\n%s", topo.Name, code, stderr)
	}
	// The probe lines it prints parse with the probes' own flag sets (one
	// responder: no --id, no --responders; TestLabUpResponders runs them).
	n := 0
	for _, l := range strings.Split(stdout, "\n") {
		cmd, _, _ := strings.Cut(l, "#")
		m := probeLine.FindStringSubmatchIndex(cmd)
		if m == nil {
			continue
		}
		n++
		var p interface {
			Register(*flag.FlagSet)
			Parse(*flag.FlagSet) error
		}
		switch cmd[m[2]:m[3]] {
		case "respond":
			p = &probe.Respond{}
		case "capture":
			p = &probe.Capture{}
		default:
			p = &probe.Send{}
		}
		fs := flag.NewFlagSet(cmd[m[2]:m[3]], flag.ContinueOnError)
		p.Register(fs)
		err := fs.Parse(strings.Fields(strings.TrimSuffix(strings.TrimSpace(cmd[m[3]:]), "&")))
		if err == nil {
			err = p.Parse(fs)
		}
		if err != nil {
			t.Errorf("%s: %v", l, err)
		}
	}
	if n != 3 {
		t.Errorf("want a respond, a capture and a send line:\n%s", stdout)
	}
	// Up of the same lab is idempotent through the CLI as well.
	if err := runLab(context.Background(), []string{"up", "--json", topo.Name}); err != nil {
		t.Errorf("up %s again: %v", topo.Name, err)
	}
	if err := runLab(context.Background(), []string{"up", "--mtu", "9000", topo.Name}); !errors.Is(err, os.ErrExist) {
		t.Errorf("up %s with another MTU: %v, want os.ErrExist", topo.Name, err)
	}
	if err := runLab(context.Background(), []string{"up", "--responders", "2", topo.Name}); !errors.Is(err, os.ErrExist) {
		t.Errorf("up %s with 2 responders: %v, want os.ErrExist", topo.Name, err)
	}
}

var probeLine = regexp.MustCompile(` rig (respond|capture|send) `)

// TestLabUpResponders: rig lab up --responders 2 builds a second responder
// namespace; show names both, and the command lines `rig lab up` prints
// work as printed: both responders, the capture and the sender run in the
// lab (the rig on PATH is the one under test) and every request is
// answered by both.
func TestLabUpResponders(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{Responders: 2})
	var out strings.Builder
	printLab(&out, topo, "up")
	if !strings.Contains(out.String(), topo.Name+"-r1") {
		t.Errorf("show lacks %s-r1:\n%s", topo.Name, out.String())
	}
	code, stdout, stderr := rigIn(t, "lab", "up", "--responders", "2", topo.Name)
	if code != 0 {
		t.Fatalf("rig lab up --responders 2 again: exit %d\n%s", code, stderr)
	}
	var lines []string
	for _, l := range strings.Split(stdout, "\n") {
		if cmd, _, _ := strings.Cut(l, "#"); probeLine.MatchString(cmd) {
			lines = append(lines, strings.TrimSuffix(strings.TrimSpace(cmd), "&"))
		}
	}
	if len(lines) != 4 {
		t.Fatalf("want 2 respond, 1 capture and 1 send line:\n%s", stdout)
	}
	path := filepath.Dir(testbin.Rig(t)) + string(os.PathListSeparator) + os.Getenv("PATH")
	type proc struct {
		line string
		cmd  *exec.Cmd
		out  *lockedBuffer
		done chan error // cmd.Wait's result
	}
	start := func(line string) *proc {
		f := strings.Fields(line)
		p := &proc{line: line, cmd: exec.Command(f[0], f[1:]...), out: &lockedBuffer{}, done: make(chan error, 1)}
		p.cmd.Env = withPath(os.Environ(), path)
		p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { p.done <- p.cmd.Wait() }()
		t.Cleanup(func() { _ = p.cmd.Process.Kill() })
		return p
	}
	var bg []*proc
	for _, l := range lines[:3] {
		p := start(l)
		// Ready, or exited at once (as without --run-id): fail with its output.
		for deadline := time.Now().Add(15 * time.Second); !strings.Contains(p.out.String(), ": ready on "); {
			select {
			case err := <-p.done:
				t.Fatalf("%s exited (%v) before it was ready:\n%s", l, err, p.out)
			case <-time.After(20 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not ready within 15 s:\n%s", l, p.out)
			}
		}
		bg = append(bg, p)
	}
	snd := start(lines[3])
	if err := <-snd.done; err != nil {
		t.Fatalf("%s: %v\n%s", snd.line, err, snd.out)
	}
	if strings.Count(snd.out.String(), "sent 10000  received 10000  lost 0") != 2 {
		t.Errorf("%s: want every request answered by both responders:\n%s", snd.line, snd.out)
	}
	for _, p := range bg {
		_ = p.cmd.Process.Signal(os.Interrupt) // ip netns exec exec'd rig: this is rig
		if err := <-p.done; err != nil {
			t.Errorf("%s: %v\n%s", p.line, err, p.out)
		}
	}
}

// TestLabRemovalNamesWhatExisted: rig lab down and the stale-lab removal
// of rig restore and rig run name the namespaces the lab had, not every
// name a lab may use (-r1 … -r8 of a lab with one responder).
func TestLabRemovalNamesWhatExisted(t *testing.T) {
	testbin.Integration(t)
	t.Setenv(netlab.EnvDir, t.TempDir())
	up := func(o netlab.Options) *netlab.Topology {
		name := netlab.UniqueName("cli")
		t.Cleanup(func() { netlab.Down(name) })
		topo, err := netlab.Up(context.Background(), name, o)
		if err != nil {
			t.Fatal(err)
		}
		return topo
	}
	topo := up(netlab.Options{})
	code, stdout, stderr := rigIn(t, "lab", "down", topo.Name)
	want := fmt.Sprintf("lab %s: removed namespaces %s and %s\n", topo.Name, strings.Join(topo.Namespaces(), " "), netlab.Path(topo.Name))
	if code != 0 || stdout != want {
		t.Errorf("rig lab down: exit %d\n%s%s, want\n%s", code, stdout, stderr, want)
	}
	self := owner.Self()
	self.Start++ // the same pid started at another time: an owner that no longer runs
	topo = up(netlab.Options{Responders: 2, Owner: &self})
	var b strings.Builder
	if _, err := removeStale(&b, "rig restore"); err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(b.String(), "removed lab "+topo.Name+" (namespaces ")
	got, _, _ := strings.Cut(rest, ")")
	if want := topo.Namespaces(); !slices.Equal(slices.Sorted(slices.Values(strings.Fields(got))), slices.Sorted(slices.Values(want))) {
		t.Errorf("stale lab removal:\n%s\nwant the namespaces %q", b.String(), want)
	}
}
