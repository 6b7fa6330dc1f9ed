package hostfstest

import (
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
)

func TestIdleRoot(t *testing.T) {
	root := IdleRoot(t)
	fs := hostfs.FS{Root: root}
	real, err := hostinfo.OnlineCPUs(hostfs.FS{Root: "/"})
	if err != nil {
		t.Fatal(err)
	}
	online, err := hostinfo.OnlineCPUs(fs)
	if err != nil || len(online) != len(real) {
		t.Fatalf("online CPUs below the root: %v %v, live %v", online, err, real)
	}
	for _, c := range online {
		st, err := hostinfo.ReadIdleStates(fs, c)
		if err != nil || len(st) != len(IdleStates) || st[0].Name != "POLL" {
			t.Errorf("cpu%d idle states: %+v %v", c, st, err)
		}
	}
	if _, err := fs.ReadDir("/sys/class/net"); err != nil {
		t.Errorf("/sys/class/net below the root: %v", err)
	}
	if err := fs.WriteFile("/sys/devices/system/cpu/cpu0/cpuidle/state1/disable", "1\n"); err != nil || Disabled(t, root, 0, 1) != "1\n" {
		t.Errorf("writing disable: %v", err)
	}
}
