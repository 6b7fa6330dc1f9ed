//go:build linux

package facts

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/native"
	"github.com/rig-project/rig/internal/probe"
)

// readStacks looks for each stack of probe.StackTable where rig respond
// would start it from: its launcher on PATH, its library in the loader's
// cache (ldconfig -p) or in LD_LIBRARY_PATH. nil when the cache cannot be
// listed: then nothing can be said.
func readStacks() map[probe.StackName]string {
	ldconfig, err := exec.LookPath("ldconfig")
	if err != nil {
		ldconfig = "/sbin/ldconfig" // root's PATH has it, others' may not
	}
	cache, err := exec.Command(ldconfig, "-p").Output()
	if err != nil {
		return nil
	}
	m := map[probe.StackName]string{}
	for name, in := range probe.StackTable {
		var miss []string
		if in.Launcher != "" {
			if _, err := exec.LookPath(in.Launcher); err != nil {
				miss = append(miss, "no "+in.Launcher+" on PATH")
			}
		}
		if _, ok := native.LibraryIn(bytes.NewReader(cache), in.Library); !ok && !inLibraryPath(in.Library) {
			miss = append(miss, in.Library+" is neither in the loader's cache (ldconfig -p) nor in LD_LIBRARY_PATH")
		}
		m[name] = strings.Join(miss, "; ")
	}
	return m
}

func inLibraryPath(lib string) bool {
	for _, d := range filepath.SplitList(os.Getenv("LD_LIBRARY_PATH")) {
		if m, _ := filepath.Glob(filepath.Join(d, lib+"*")); d != "" && len(m) > 0 {
			return true
		}
	}
	return false
}

// IOUringDisabled is the sysctl that turns io_uring off (Linux 6.6+).
const IOUringDisabled = "/proc/sys/kernel/io_uring_disabled"

// readIOUring asks what the native program's io_uring backends will meet
// (native/uring.c): the sysctl, then io_uring_setup itself, plain and
// with IORING_SETUP_SQPOLL, each ring closed at once. A fake root shows
// only the sysctl: unless it disables io_uring, nothing is known.
func readIOUring(fs hostfs.FS) *IOUring {
	s, err := fs.ReadString(IOUringDisabled)
	disabled := strings.TrimSpace(s)
	if err == nil && disabled == "2" {
		why := "io_uring is disabled on this host (kernel.io_uring_disabled = 2; 0 enables it)"
		return &IOUring{Refused: why, SQPollRefused: why}
	}
	if !fs.IsReal() {
		return nil
	}
	seccomp := false
	if st, err := fs.ReadString("/proc/self/status"); err == nil {
		seccomp = strings.Contains(st, "\nSeccomp:\t2")
	}
	return &IOUring{Refused: ioUringSetup(0, disabled, seccomp), SQPollRefused: ioUringSetup(setupSQPoll, disabled, seccomp)}
}

// setupSQPoll is IORING_SETUP_SQPOLL (linux/io_uring.h).
const setupSQPoll = 1 << 1

// ioUringSetup sets up and closes a one-entry ring with flags: "" when it
// works, else why not.
func ioUringSetup(flags uint32, disabled string, seccomp bool) string {
	var p [120]byte // struct io_uring_params, its flags at offset 8
	binary.NativeEndian.PutUint32(p[8:], flags)
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&p[0])), 0)
	switch {
	case e == 0:
		unix.Close(int(fd))
		return ""
	case e == unix.EPERM && disabled == "1":
		return "kernel.io_uring_disabled = 1 and rig's agent is neither root nor in kernel.io_uring_group"
	case (e == unix.EPERM || e == unix.ENOSYS) && seccomp:
		return "a seccomp filter refuses io_uring_setup (" + e.Error() + "; Seccomp: 2 in /proc/self/status): allow io_uring_setup, io_uring_enter and io_uring_register"
	case e == unix.EPERM && flags != 0:
		return "IORING_SETUP_SQPOLL needs CAP_SYS_ADMIN on this kernel (io_uring_setup: EPERM; a plain ring works)"
	case errors.Is(e, unix.ENOSYS):
		return "this kernel has no io_uring (io_uring_setup: ENOSYS; built without CONFIG_IO_URING)"
	}
	return "io_uring_setup: " + e.Error()
}
