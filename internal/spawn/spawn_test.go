package spawn

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/testbin"
)

// TestMain doubles as the helper process: with SPAWN_HELPER set it starts
// a sleep from a goroutine whose locked thread then ends, prints the
// sleep's pid and waits to be killed.
func TestMain(m *testing.M) {
	if os.Getenv("SPAWN_HELPER") != "" {
		helper()
		return
	}
	os.Exit(m.Run())
}

// The main thread is never ended by Go (it is wedged instead), so keep the
// main goroutine on it: the helper's other goroutines then run on threads
// that do end.
func init() { runtime.LockOSThread() }

func helper() {
	done := make(chan [2]int)
	go func() {
		// A goroutine locked to its thread that exits ends that thread:
		// a child forked from it directly would get its signal now.
		runtime.LockOSThread()
		cmd := exec.Command("sleep", "60")

		if err := Start(cmd, syscall.SIGKILL); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		done <- [2]int{cmd.Process.Pid, syscall.Gettid()}
	}()
	r := <-done
	for { // the locked thread has ended (a death signal tied to it is sent by then)
		if _, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", r[1])); os.IsNotExist(err) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	fmt.Println(r[0])
	time.Sleep(time.Hour) // until the test kills it (select{} would be a deadlock)
}

// TestChildDiesWithParent: the child survives the end of the thread that
// asked for it, and dies when its parent process is killed with SIGKILL.
func TestChildDiesWithParent(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep(1)")
	}
	h := exec.Command(os.Args[0], "-test.run=^$")
	h.Env = append(os.Environ(), "SPAWN_HELPER=1")
	out, _ := h.StdoutPipe()
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	defer h.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	pid, perr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || perr != nil {
		t.Fatalf("helper said %q: %v %v", line, err, perr)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	// A negative: a SIGKILL sent when the thread ended would have ended the
	// child within this window.
	time.Sleep(200 * time.Millisecond)
	if !testbin.Alive(pid) {
		t.Fatal("child died when the thread that asked for it ended: its death signal is tied to that thread")
	}
	h.Process.Kill()
	h.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for testbin.Alive(pid) {
		if time.Now().After(deadline) {
			t.Fatal("child still runs 5 s after its parent was killed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
