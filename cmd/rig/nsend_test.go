package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/native"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/testbin"
	"golang.org/x/sys/unix"
)

// sendRunID is the run of the native sender's lab tests.
const sendRunID = "00000000000b0b0b"

// sendRound runs rig respond (answering answer requests, with the flags
// respond) and rig send (count requests, with the flags send, the native
// programs found in dir) on the lab, and returns the sender's sample file
// and both logs.
func sendRound(t *testing.T, topo *netlab.Topology, dir string, count, answer int, send, respond []string) (*samples.File, string) {
	t.Helper()
	log := respondFor(t, topo, dir, answer, respond)
	snd, out := sendCmd(t, topo, dir, count, send)
	b, err := snd.CombinedOutput()
	if err != nil {
		t.Fatalf("rig send %v: %v\n%s\nrig respond:\n%s", send, err, b, log)
	}
	f, err := samples.ReadFile(out)
	if err != nil {
		t.Fatalf("rig send %v: its sample file: %v\n%s", send, err, b)
	}
	return f, string(b) + "\nrig respond:\n" + log.String()
}

// respondFor starts rig respond on the lab until the test ends, once it is
// ready, and returns its log.
func respondFor(t *testing.T, topo *netlab.Topology, dir string, answer int, respond []string) *lockedBuffer {
	t.Helper()
	cmd := exec.Command("ip", append([]string{"netns", "exec", topo.Netns(netlab.Responder), testbin.Rig(t), "respond", "--iface", topo.Responder.Interface,
		"--timestamps", "software", "--count", strconv.Itoa(answer), "--run-id", sendRunID, "--cpu", "1"}, respond...)...)
	cmd.Env = append(os.Environ(), native.EnvDir+"="+dir)
	var log lockedBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitFor(t, &log, ": ready")
	return &log
}

// sendCmd is rig send of count requests with the flags send on the lab,
// and its sample file's path.
func sendCmd(t *testing.T, topo *netlab.Topology, dir string, count int, send []string) (*exec.Cmd, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "sender.samples")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	snd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", topo.Netns(netlab.Sender), testbin.Rig(t), "send", "--iface", topo.Sender.Interface,
		"--count", strconv.Itoa(count), "--timestamps", "software", "--run-id", sendRunID, "--cpu", "0", "--out", out}, send...)...)
	snd.Env = append(os.Environ(), native.EnvDir+"="+dir)
	return snd, out
}

// TestNativeSender: rig send --engine native against the Go and the
// native responder, paced (rig send's defaults), in closed loop (spin over
// the whole interval) and busy, multicast and unicast, as built and under
// ASan and UBSan: every request answered, the stamps in the order they
// happen, the Go sender's columns, clocks and counters; and with replies
// missing, the same counters as the Go sender's.
func TestNativeSender(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	dir := testbin.Native(t)
	const n = 200
	goFile, _ := sendRound(t, topo, dir, n, n, nil, nil)
	to := netip.AddrPortFrom(topo.Responder.Addr, 9400).String()
	for _, c := range []struct {
		name          string
		build         string
		send, respond []string
	}{
		{"paced, go responder", "", nil, nil},
		{"closed loop, native responder", "", []string{"--spin", "1ms"}, []string{"--engine", "native"}},
		{"busy, native responder", "", []string{"--poll", "busy", "--spin", "1ms"}, []string{"--engine", "native", "--poll", "busy"}},
		{"unicast, native responder", "", []string{"--to", to}, []string{"--engine", "native", "--listen", to}},
		{"paced, sanitizers", "san", nil, []string{"--engine", "native"}},
		{"closed loop, sanitizers", "san", []string{"--spin", "1ms"}, nil},
	} {
		f, log := sendRound(t, topo, filepath.Join(dir, c.build), n, n, append([]string{"--engine", "native"}, c.send...), c.respond)
		if s := f.Header.Settings; s["engine"] != "native" || s["tx_keying"] != "SCM_TS_OPT_ID" || s["loop_calls"] == nil {
			t.Errorf("%s: settings %v", c.name, s)
		}
		// The loop has its CPU (rig send's default, 0) to itself: rig's
		// own threads move off it while it runs, and the header says so.
		if got := f.Header.Settings["rig_threads"]; got != "off CPU 0" {
			t.Errorf("%s: rig_threads %v, want off CPU 0", c.name, got)
		}
		if !slices.Equal(f.Header.Columns, goFile.Header.Columns) || fmt.Sprint(f.Header.Clocks) != fmt.Sprint(goFile.Header.Clocks) {
			t.Errorf("%s: columns %v clocks %v; the Go sender's %v %v", c.name, f.Header.Columns, f.Header.Clocks, goFile.Header.Columns, goFile.Header.Clocks)
		}
		for k := range goFile.Header.Settings {
			if _, ok := f.Header.Settings[k]; !ok {
				t.Errorf("%s: no setting %s, which the Go sender's file has", c.name, k)
			}
		}
		want := samples.Counters{Sent: n, Received: n}
		if got := f.Footer.Counters; got != want || len(f.Records) != n || f.Footer.Thread == nil || f.Footer.Stopped != "" {
			t.Errorf("%s: %d records, counters %+v, thread %v, stopped %q\n%s", c.name, len(f.Records), got, f.Footer.Thread, f.Footer.Stopped, log)
		}
		for i, r := range f.Records {
			if r.Seq != uint64(i) || r.Flags != 0 || r.T[samples.Due] == 0 || r.T[samples.TxUser] < r.T[samples.Due] ||
				r.T[samples.TxSW] < r.T[samples.TxUser] || r.T[samples.RxSW] < r.T[samples.TxSW] || r.T[samples.RxUser] < r.T[samples.RxSW] {
				t.Errorf("%s: record %d out of order: %+v", c.name, i, r)
				break
			}
		}
		// Paced: request k is due k intervals after request 0.
		if d := f.Records[n-1].T[samples.Due] - f.Records[0].T[samples.Due]; d < int64(n-1)*int64(time.Millisecond)-int64(time.Millisecond) ||
			d > int64(n-1)*int64(time.Millisecond)+int64(time.Millisecond) {
			t.Errorf("%s: request %d due %v after request 0, want %v", c.name, n-1, time.Duration(d), time.Duration(n-1)*time.Millisecond)
		}
	}
	// Replies missing: the responder stops after answering n-10.
	var feet []samples.Counters
	for _, engine := range []string{"go", "native"} {
		f, log := sendRound(t, topo, dir, n, n-10, []string{"--engine", engine, "--reply-timeout", "200ms"}, []string{"--engine", "native"})
		c := f.Footer.Counters
		feet = append(feet, c)
		if c.Sent != n || c.Received != n-10 || c.Lost != 10 || len(f.Records) != n || f.Records[n-1].T[samples.RxUser] != 0 {
			t.Errorf("%s sender, %d of %d answered: counters %+v\n%s", engine, n-10, n, c, log)
		}
	}
	if feet[0] != feet[1] {
		t.Errorf("the senders counted differently:\ngo     %+v\nnative %+v", feet[0], feet[1])
	}
	// An indication for the log, not a check (a loaded VM's figures): the
	// closed-loop user RTT against the native responder, by sender.
	for _, engine := range []string{"go", "native", "go", "native"} {
		f, _ := sendRound(t, topo, dir, 2000, 2000, []string{"--engine", engine, "--spin", "1ms"}, []string{"--engine", "native"})
		var rtt []int64
		for _, r := range f.Records[2:] {
			if r.T[samples.RxUser] != 0 {
				rtt = append(rtt, r.T[samples.RxUser]-r.T[samples.TxUser])
			}
		}
		slices.Sort(rtt)
		t.Logf("closed loop, native responder, %s sender: user RTT (rx_user − tx_user, CLOCK_REALTIME) median %v, p99 %v, n %d",
			engine, time.Duration(rtt[len(rtt)/2]), time.Duration(rtt[len(rtt)*99/100]), len(rtt))
	}
}

// TestNativeSenderLibcCalls: every socket call of the native sender goes
// through libc (the interposer counts what the program says it made) and
// its loop allocates nothing.
func TestNativeSenderLibcCalls(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	dir := testbin.Native(t)
	const n = 200
	wrap := t.TempDir()
	calls := filepath.Join(wrap, "calls")
	script := fmt.Sprintf("#!/bin/sh\nLD_PRELOAD=%s RIG_INTERPOSE_OUT=%s exec %s \"$@\"\n", filepath.Join(dir, "librig-interpose.so"), calls,
		filepath.Join(dir, "rig-send-native"))
	if err := os.WriteFile(filepath.Join(wrap, "rig-send-native"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "rig-respond-native"), filepath.Join(wrap, "rig-respond-native")); err != nil {
		t.Fatal(err)
	}
	for _, poll := range []string{"block", "busy", "closed"} {
		send, respond := []string{"--engine", "native", "--poll", poll}, []string{"--engine", "native", "--poll", poll}
		if poll == "closed" { // block, spinning the whole interval: the reply in a blocking recvmsg
			send, respond = []string{"--engine", "native", "--poll", "block", "--spin", "1ms"}, []string{"--engine", "native"}
		}
		f, log := sendRound(t, topo, wrap, n, n, send, respond)
		seen := readCalls(t, calls)
		var own map[string]uint64
		b, _ := json.Marshal(f.Header.Settings["loop_calls"])
		if err := json.Unmarshal(b, &own); err != nil || own["sendmsg"] != n {
			t.Fatalf("%s: loop_calls %s: %v\n%s", poll, b, err, log)
		}
		total := func(c string) uint64 { return seen["setup "+c] + seen["loop "+c] + seen["after "+c] }
		for _, c := range []string{"malloc", "calloc", "realloc", "memalign", "free", "mmap"} {
			if seen["loop "+c] != 0 {
				t.Errorf("%s: the loop called %s %d times", poll, c, seen["loop "+c])
			}
		}
		for c, want := range map[string]uint64{"socket": own["socket_calls"], "setsockopt": own["setsockopt"], "recvmsg": own["recvmsg"],
			"sendmsg": own["sendmsg"], "recv": 0, "send": 0, "recvfrom": 0, "sendto": 0} {
			if total(c) != want {
				t.Errorf("%s: libc saw %s %d times, the program made %d\n%v", poll, c, total(c), want, seen)
			}
		}
		if seen["loop sendmsg"] != n || !strings.Contains(log, fmt.Sprintf("sent %d  received %d  lost 0", n, n)) {
			t.Errorf("%s: %d sendmsg in the loop for %d requests\n%s", poll, seen["loop sendmsg"], n, log)
		}
		if poll == "closed" {
			// 2 system calls per round trip besides the TX-stamp reads: the
			// sendmsg and the blocking recvmsg, no ppoll. A reply slower than
			// the blocking read's bound (at least a tick, 1 ms or more, from
			// its start after the send: a VM's tail) costs one ppoll and one
			// recvmsg more; those are allowed, no others.
			slow := uint64(0)
			for _, r := range f.Records {
				if r.T[samples.RxUser]-r.T[samples.TxUser] > int64(time.Millisecond) {
					slow++
				}
			}
			if data := own["recvmsg"] - own["tx_reads"]; own["waits"] > slow || data < n || data > n+slow {
				t.Errorf("closed loop: %d data recvmsg and %d waits for %d round trips (%d replies slower than 1 ms)", data, own["waits"], n, slow)
			}
			t.Logf("closed loop: %d replies slower than 1 ms", slow)
		}
		t.Logf("%s, %d requests: the program's own counts %v", poll, n, own)
	}
}

// TestNativeSenderProgress: rig send --engine native --progress-lines
// reports requests sent while its round runs (the program's live page),
// not only once it hands its records back.
func TestNativeSenderProgress(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	dir := testbin.Native(t)
	const n = 3000 // 3 s at the default 1 ms: progress lines come once a second
	respondFor(t, topo, dir, n, []string{"--engine", "native"})
	snd, _ := sendCmd(t, topo, dir, n, []string{"--engine", "native", "--progress-lines"})
	live := ""
	log, err := runProgress(t, snd, func(s, r int, line string) {
		if s > 0 && s < n && r <= s && live == "" {
			live = line
		}
	})
	if err != nil || live == "" {
		t.Errorf("rig send: %v; no progress line with 0 < sent < %d while it ran:\n%s", err, n, strings.Join(log, "\n"))
	}
}

// TestNativeSenderLiveFull: the live page's blocks are taken before the
// program starts, so a full TMPDIR is a clear refusal, not a SIGBUS in the
// loop at its first store to a hole of the file.
func TestNativeSenderLiveFull(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	dir, tmp := testbin.Native(t), t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4k", "rig-live-test", tmp).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = syscall.Unmount(tmp, syscall.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(tmp, "fill"), make([]byte, 64<<10), 0o644); err == nil || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("filling the tmpfs: %v", err)
	}
	snd, _ := sendCmd(t, topo, dir, 10, []string{"--engine", "native"})
	snd.Env = append(snd.Env, "TMPDIR="+tmp)
	out, err := snd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "live counters: ") || !strings.Contains(string(out), "no space left on device") {
		t.Fatalf("rig send with a full TMPDIR: %v\n%s", err, out)
	}
}

// TestNativeSenderLoopFails: a call that fails inside the native sender's
// loop — here ppoll, EINVAL once the running program's RLIMIT_NOFILE is
// dropped to 0 under it (poll refuses more descriptors than the limit) —
// stops the loop, which still hands back what it recorded: rig send writes
// the sample file with the records so far and stopped "failed: … ppoll:
// invalid argument", and exits non-zero, as the Go sender does for a
// failed wait.
func TestNativeSenderLoopFails(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	dir := testbin.Native(t)
	const n = 3000
	respondFor(t, topo, dir, n, []string{"--engine", "native"})
	snd, out := sendCmd(t, topo, dir, n, []string{"--engine", "native", "--progress-lines"})
	limited := false
	log, err := runProgress(t, snd, func(s, _ int, _ string) {
		if s > 0 && !limited {
			prog := childOf(t, snd.Process.Pid) // ip netns exec execs rig: its child is the program
			if err := unix.Prlimit(prog, unix.RLIMIT_NOFILE, &unix.Rlimit{}, nil); err != nil {
				t.Fatalf("prlimit %d: %v", prog, err)
			}
			limited = true
		}
	})
	f, ferr := samples.ReadFile(out)
	if err == nil || ferr != nil || !limited {
		t.Fatalf("rig send: %v (want a failure), its sample file: %v, limited %v\n%s", err, ferr, limited, strings.Join(log, "\n"))
	}
	sent := 0
	for _, r := range f.Records {
		if r.T[samples.TxUser] != 0 {
			sent++
		}
	}
	c := f.Footer.Counters
	if !strings.HasPrefix(f.Footer.Stopped, samples.StoppedFailed) || !strings.Contains(f.Footer.Stopped, "ppoll: invalid argument") ||
		len(f.Records) != n || sent == 0 || sent == n || uint64(sent) != c.Sent || c.Received == 0 {
		t.Errorf("stopped %q, %d records, %d sent, counters %+v\n%s", f.Footer.Stopped, len(f.Records), sent, c, strings.Join(log, "\n"))
	}
}

// runProgress runs rig send snd to its end, handing each progress line
// to on as it comes: what it printed on stderr, and how it ended.
func runProgress(t *testing.T, snd *exec.Cmd, on func(sent, received int, line string)) ([]string, error) {
	t.Helper()
	lines, err := snd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := snd.Start(); err != nil {
		t.Fatal(err)
	}
	var log []string
	for sc := bufio.NewScanner(lines); sc.Scan(); {
		log = append(log, sc.Text())
		if s, r, ok := probe.ParseProgress(sc.Text()); ok {
			on(s, r, sc.Text())
		}
	}
	return log, snd.Wait()
}

// childOf is the one child process of pid.
func childOf(t *testing.T, pid int) int {
	t.Helper()
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var kids []string
	for _, p := range tasks {
		b, _ := os.ReadFile(p)
		kids = append(kids, strings.Fields(string(b))...)
	}
	if len(kids) != 1 {
		t.Fatalf("process %d has children %v, want one", pid, kids)
	}
	k, err := strconv.Atoi(kids[0])
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestNativeSenderStack: rig send --engine native --stack runs the sender's
// program under the stack as rig respond runs its own, with the counting
// interposer as a custom stack: the library mapped and its checks said yes
// (in the sample header), and every request's send and every reply's
// receive went through it. The Go engine, and a stack that leaves the
// socket to the kernel, are refused (exit 2) saying why.
func TestNativeSenderStack(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	dir := testbin.Native(t)
	lib := filepath.Join(dir, "librig-interpose.so")
	const n = 200
	stack := []string{"--stack", "custom", "--stack-preload", lib, "--stack-presence", "rig_interpose_present", "--stack-fd-stat", "rig_interpose_fd_stat"}
	for _, poll := range []string{"block", "busy"} {
		calls := filepath.Join(t.TempDir(), "calls")
		f, log := sendRound(t, topo, dir, n, n, append([]string{"--engine", "native", "--poll", poll, "--stack-env", "RIG_INTERPOSE_OUT=" + calls}, stack...), nil)
		s, c := f.Header.Settings, f.Footer.Counters
		if s["stack"] != "custom" || s["stack_library"] != lib || s["stack_presence"] != "rig_interpose_present: yes" ||
			s["stack_fd_stat"] != "rig_interpose_fd_stat: yes (stack interpose, id 7)" {
			t.Errorf("%s: settings %v\n%s", poll, s, log)
		}
		seen := readCalls(t, calls)
		t.Logf("%s: sent %d, received %d; in the loop the stack intercepted sendmsg %d, recvmsg %d (%d not of the error queue)",
			poll, c.Sent, c.Received, seen["loop sendmsg"], seen["loop recvmsg"], seen["loop recvmsg-data"])
		if c.Sent != n || c.Received != n || seen["loop sendmsg"] != c.Sent || seen["loop recvmsg-data"] < c.Received {
			t.Errorf("%s: the stack saw %d sendmsg and %d receives for %d sent and %d received", poll, seen["loop sendmsg"], seen["loop recvmsg-data"], c.Sent, c.Received)
		}
	}
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{append([]string{"--engine", "go"}, stack...), "--stack custom needs --engine native"},
		{append([]string{"--engine", "native", "--stack-env", "RIG_INTERPOSE_KERNEL=1"}, stack...),
			"rig_interpose_fd_stat() says the sender's socket is not accelerated: is " + topo.Sender.Interface + " an interface"},
	} {
		cmd, _ := sendCmd(t, topo, dir, n, c.flags)
		out, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("%v: exit %d (%v), want 2 saying %q\n%s", c.flags, code, err, c.want, out)
		}
	}
}
