package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// haltpollFixture is a Firecracker guest's CPU tree with the haltpoll
// cpuidle driver (POLL and "haltpoll idle" on each CPU): the KVM guests
// some CI machines get, where this one has no cpuidle at all.
const haltpollFixture = "../../internal/hostinfo/testdata/vm/sys/devices/system/cpu"

// fakeCPUIdle lets rig run on a host without cpuidle as on the haltpoll
// guest, so that a test of a C-state arm runs on every machine: root is a
// tree with the host's /sys/devices/system/cpu/cpuN directories (copied)
// and the fixture's cpuidle directories in them (hostfs.FS{Root: root}
// reads what rig reads and writes), and wrap makes a command run in a
// private mount namespace where they are bind-mounted over the host's.
// `ip netns exec` mounts a fresh sysfs for each namespace it enters, so
// the command's PATH starts with an ip that mounts them there too. The
// host's sysfs is never touched.
func fakeCPUIdle(t *testing.T, cpus ...int) (root string, wrap func(*exec.Cmd)) {
	t.Helper()
	unshare, err1 := exec.LookPath("unshare")
	ip, err2 := exec.LookPath("ip")
	if err1 != nil || err2 != nil {
		t.Fatalf("faking cpuidle needs unshare and ip: %v %v", err1, err2)
	}
	root = t.TempDir()
	sys := filepath.Join(root, "sys/devices/system/cpu")
	var mounts strings.Builder
	cp := func(from, to string) {
		if err := os.MkdirAll(to, 0o755); err != nil {
			t.Fatal(err)
		}
		// cp reports the sysfs files it cannot read (write-only ones): the
		// tree only needs what rig reads.
		_ = exec.Command("cp", "-r", from+"/.", to).Run()
	}
	for _, c := range cpus {
		cpu := "cpu" + strconv.Itoa(c)
		cp("/sys/devices/system/cpu/"+cpu, filepath.Join(sys, cpu))
		if err := os.RemoveAll(filepath.Join(sys, cpu, "cpuidle")); err != nil {
			t.Fatal(err)
		}
		cp(filepath.Join(haltpollFixture, cpu, "cpuidle"), filepath.Join(sys, cpu, "cpuidle"))
		mounts.WriteString("mount --bind " + filepath.Join(sys, cpu) + " /sys/devices/system/cpu/" + cpu + "\n")
	}
	cp(filepath.Join(haltpollFixture, "cpuidle"), filepath.Join(sys, "cpuidle"))
	mounts.WriteString("mount --bind " + filepath.Join(sys, "cpuidle") + " /sys/devices/system/cpu/cpuidle\n")
	bin := t.TempDir()
	inner := filepath.Join(bin, "with-cpuidle")
	script := func(path, body string) {
		if err := os.WriteFile(path, []byte("#!/bin/sh\nset -e\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script(inner, mounts.String()+"exec \"$@\"\n")
	script(filepath.Join(bin, "ip"), `if [ "$1" = netns ] && [ "$2" = exec ]; then
	ns=$3; shift 3
	exec `+ip+` netns exec "$ns" `+inner+` "$@"
fi
exec `+ip+` "$@"
`)
	return root, func(cmd *exec.Cmd) {
		cmd.Args = append([]string{unshare, "-m", "--propagation", "private", inner, cmd.Path}, cmd.Args[1:]...)
		cmd.Path = unshare
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		cmd.Env = append(cmd.Env, "PATH="+bin+":"+os.Getenv("PATH"))
	}
}
