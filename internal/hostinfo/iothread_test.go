package hostinfo_test

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/testbin"
)

// sqpollChild makes TestCPUsAllowedSkipsIOThreads run as its child.
const sqpollChild = "RIG_TEST_SQPOLL_CHILD"

// TestCPUsAllowedSkipsIOThreads: in a cgroup v1 cpuset of CPU 1 (a pinned
// pod's), a process holding an io_uring SQPOLL ring has a kernel thread
// (iou-sqp-PID) placed on every online CPU; what the process may run on is
// still CPU 1. Before, the union of its threads' lists was the node's
// CPUs, and rig check in a pinned pod chose a CPU by them.
func TestCPUsAllowedSkipsIOThreads(t *testing.T) {
	if os.Getenv(sqpollChild) != "" {
		sqpollInCpuset()
		return
	}
	testbin.Integration(t)
	dirs := netlabtest.PodCgroups(t, "sqpoll", netlabtest.PodLimits{CPUs: "1"})
	cmd := exec.Command("sh", "-c", `echo $$ > "$1/cgroup.procs" && shift && exec "$@"`, "join", dirs[0],
		os.Args[0], "-test.run=^TestCPUsAllowedSkipsIOThreads$", "-test.count=1")
	cmd.Env = append(os.Environ(), sqpollChild+"=1")
	out, err := cmd.CombinedOutput()
	t.Logf("child:\n%s", out)
	switch {
	case err != nil:
		t.Fatalf("child: %v", err)
	case strings.Contains(string(out), "SKIP:"):
		t.Skip(strings.TrimSpace(string(out)))
	case !strings.Contains(string(out), "allowed: [1]"):
		t.Fatal("what the process may run on is not its cpuset's CPU 1")
	}
}

// sqpollInCpuset is the child: it opens an SQPOLL ring, shows that the
// kernel's thread stands outside the cpuset, and prints what
// ProcessCPUsAllowed says.
func sqpollInCpuset() {
	var p [120]byte                            // struct io_uring_params
	*(*uint32)(unsafe.Pointer(&p[8])) = 1 << 1 // flags: IORING_SETUP_SQPOLL
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&p[0])), 0)
	if e != 0 {
		fmt.Printf("SKIP: io_uring_setup(SQPOLL): %v\n", e)
		return
	}
	defer unix.Close(int(fd))
	fs := hostfs.Default()
	tasks, _ := os.ReadDir("/proc/self/task")
	wide := false
	for _, tk := range tasks {
		comm, _ := fs.ReadString("/proc/self/task/" + tk.Name() + "/comm")
		l, _ := hostinfo.CPUsAllowed(fs, "self/task/"+tk.Name())
		fmt.Printf("thread %s %s: %v\n", tk.Name(), comm, l)
		wide = wide || strings.HasPrefix(comm, "iou-sqp") && !slices.Equal(l, []int{1})
	}
	if !wide {
		fmt.Println("SKIP: this kernel keeps the SQPOLL thread in the cpuset: nothing to skip")
		return
	}
	l, err := hostinfo.ProcessCPUsAllowed(fs, "self")
	fmt.Printf("allowed: %v %v\n", l, err)
}
