package owner

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestSelfAlive(t *testing.T) {
	p := Self()
	if p.PID != os.Getpid() || p.Start == 0 || p.Boot == "" {
		t.Fatalf("Self() = %+v: want pid, start ticks and boot id", p)
	}
	if !p.Alive() {
		t.Error("Self() is not alive")
	}
	if !strings.Contains(p.String(), "pid ") {
		t.Errorf("String() = %q", p.String())
	}
}

// TestDeadAndRecycled: an exited process is dead; a record whose pid is
// alive but whose start time differs (the pid was recycled) is dead; one
// from another boot is dead; one that cannot be judged is kept alive.
func TestDeadAndRecycled(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	self := Self()
	for _, c := range []struct {
		name  string
		p     Process
		alive bool
	}{
		{"exited", Process{PID: cmd.Process.Pid, Start: 1, Boot: self.Boot}, false},
		{"recycled pid", Process{PID: self.PID, Start: self.Start + 1, Boot: self.Boot}, false},
		{"other boot", Process{PID: self.PID, Start: self.Start, Boot: "00000000-0000-0000-0000-000000000000"}, false},
		{"no pid", Process{}, false},
		{"cannot judge", Process{PID: 1}, true},
	} {
		if got := c.p.Alive(); got != c.alive {
			t.Errorf("%s: Alive() = %v, want %v", c.name, got, c.alive)
		}
	}
}
