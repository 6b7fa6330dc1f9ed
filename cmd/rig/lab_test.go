package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
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
	if err := runLab(context.Background(), []string{"show", topo.Name}); err != nil {
		t.Errorf("show %s: %v", topo.Name, err)
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

// TestLabUpResponders: rig lab up --responders 2 builds a second responder
// namespace, and show and the usage lines name both with their --id.
func TestLabUpResponders(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	t.Setenv(netlab.EnvDir, t.TempDir())
	name := netlab.UniqueName("cli")
	t.Cleanup(func() { netlab.Down(name) })
	var out strings.Builder
	topo, err := netlab.Up(context.Background(), name, netlab.Options{Responders: 2})
	if err != nil {
		t.Fatal(err)
	}
	printLab(&out, topo, "up")
	printLabUsage(&out, topo)
	for _, want := range []string{name + "-r1", "rig respond --iface " + name + "-r1 --id 1", "rig respond --iface " + name + "-rsp --id 0", "rig send --iface " + name + "-snd --responders 2"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if err := runLab(context.Background(), []string{"up", "--responders", "2", name}); err != nil {
		t.Errorf("up --responders 2 again: %v", err)
	}
}
