//go:build linux

package facts

import (
	"encoding/binary"
	"errors"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/native"
	"github.com/rig-project/rig/internal/probe"
)

// readStacks looks for each stack of probe.StackTable as rig respond
// starts it here (native.FindStack): what it would refuse is the stack's
// entry, "" where it is found.
func readStacks() map[probe.StackName]string {
	m := map[probe.StackName]string{}
	for name := range probe.StackTable {
		m[name] = ""
		if _, _, err := native.FindStack(probe.Stack{Name: name}); err != nil {
			m[name] = err.Error()
		}
	}
	return m
}

// readNative asks what rig send and rig respond --engine native ask
// first (native.Find): is the program beside this rig; "" where it is.
func readNative(prog string) *string {
	why := ""
	if _, err := native.Find(prog); err != nil {
		why = err.Error()
	}
	return &why
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
