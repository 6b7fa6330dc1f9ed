package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
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

	"golang.org/x/sys/unix"

	"github.com/rig-project/rig/internal/native"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/testbin"
	"github.com/rig-project/rig/internal/wire"
)

// nativeRound runs rig respond (with extra flags, the native program found
// in dir) and rig send for count requests on the lab, and returns the
// responder's sample file, its stderr and its exit code; it fails t unless
// every request was answered.
func nativeRound(t *testing.T, topo *netlab.Topology, dir string, count int, respond ...string) (*samples.File, string) {
	t.Helper()
	return nativeRoundWith(t, topo, dir, count, nil, nil, respond...)
}

// nativeRoundWith is nativeRound that calls before once the responder is
// ready, before rig send starts with the extra flags send.
func nativeRoundWith(t *testing.T, topo *netlab.Topology, dir string, count int, before func(), send []string, respond ...string) (*samples.File, string) {
	t.Helper()
	rig := testbin.Rig(t)
	out := filepath.Join(t.TempDir(), "responder.samples")
	const runID = "00000000000a11ce"
	cmd := exec.Command("ip", append([]string{"netns", "exec", topo.Netns(netlab.Responder), rig, "respond", "--iface", topo.Responder.Interface,
		"--timestamps", "software", "--count", strconv.Itoa(count), "--run-id", runID, "--cpu", "1", "--out", out}, respond...)...)
	cmd.Env = append(os.Environ(), native.EnvDir+"="+dir)
	var log lockedBuffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitFor(t, &log, ": ready")
	if before != nil {
		before()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Every request answered is the check, not how fast: io-uring-sqpoll's
	// replies take hundreds of ms on a loaded VM, past the 500ms default.
	snd, err := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", topo.Netns(netlab.Sender), rig, "send", "--iface", topo.Sender.Interface,
		"--count", strconv.Itoa(count), "--timestamps", "software", "--run-id", runID, "--reply-timeout", "2s"}, send...)...).CombinedOutput()
	if err != nil || !strings.Contains(string(snd), fmt.Sprintf("sent %d  received %d  lost 0", count, count)) {
		t.Fatalf("rig send %v: %v\n%s\nrig respond:\n%s", respond, err, snd, &log)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("rig respond %v: %v\n%s", respond, err, &log)
	}
	f, err := samples.ReadFile(out)
	if err != nil {
		t.Fatalf("rig respond %v: its sample file: %v\n%s", respond, err, &log)
	}
	return f, log.String()
}

// nativeBackends are the native engine's backends that work on a veth.
var nativeBackends = []string{"block", "busy", "busy-poll:20", "epoll", "io-uring", "io-uring-sqpoll"}

// TestNativeEngine: rig send → rig respond --engine native for every
// backend that works on a veth, with the program as built and under ASan
// and UBSan: every request answered once, with its software and user
// stamps, in a valid sample file with the Go engine's columns and clocks.
func TestNativeEngine(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	dir := testbin.Native(t)
	const n = 300
	goFile, _ := nativeRound(t, topo, dir, n) // the Go engine, for its columns
	for _, build := range []string{"", "san"} {
		for _, poll := range nativeBackends {
			f, log := nativeRound(t, topo, filepath.Join(dir, build), n, "--engine", "native", "--poll", poll)
			what := poll + " " + build
			if !slices.Equal(f.Header.Columns, goFile.Header.Columns) || len(f.Header.Clocks) != len(goFile.Header.Clocks) {
				t.Errorf("%s: columns %v clocks %v; the Go engine's %v %v", what, f.Header.Columns, f.Header.Clocks, goFile.Header.Columns, goFile.Header.Clocks)
			}
			for k, c := range goFile.Header.Clocks {
				if f.Header.Clocks[k] != c {
					t.Errorf("%s: clock %s = %+v, the Go engine's %+v", what, k, f.Header.Clocks[k], c)
				}
			}
			if s := f.Header.Settings; s["engine"] != "native" || s["poll"] == "" || s["tx_keying"] != "SCM_TS_OPT_ID" || s["rig_threads"] != "off CPU 1" {
				t.Errorf("%s: settings %v", what, s)
			}
			c := f.Footer.Counters
			if len(f.Records) != n || c.Sent != n || c.Received != n || c.TxStampsMissing != 0 || c.Duplicated != 0 || f.Footer.Thread == nil {
				t.Errorf("%s: %d records, counters %+v, thread %v\n%s", what, len(f.Records), c, f.Footer.Thread, log)
			}
			for i, r := range f.Records {
				if r.Seq != uint64(i) || r.T[samples.ReqRxSW] == 0 || r.T[samples.ReqRxUser] < r.T[samples.ReqRxSW] ||
					r.T[samples.RepTxUser] < r.T[samples.ReqRxUser] || r.T[samples.RepTxSW] < r.T[samples.RepTxUser] {
					t.Errorf("%s: record %+v", what, r)
					break
				}
			}
			busyPoll := strings.Contains(log, "warning: no request came through NAPI")
			if busyPoll != (poll == "busy-poll:20") || busyPoll && f.Header.Settings["notes"] == nil {
				t.Errorf("%s: busy polling a veth without NAPI is noted: %v\n%s", what, busyPoll, log)
			}
			if !strings.Contains(log, "(poll "+poll+", cpu 1, thread ") || !strings.Contains(log, fmt.Sprintf("answered %d, duplicated 0, foreign 0", n)) {
				t.Errorf("%s: log\n%s", what, log)
			}
		}
	}
}

// TestNativeCountsLikeGo: the native engine answers, ignores and counts
// what reaches it as the Go engine does — other runs', arms' and rounds'
// requests, replies, garbage, malformed packets, a duplicate, a sequence
// past the capacity —, takes unicast requests and replies to a group, and
// with --timestamps off takes no kernel stamps.
func TestNativeCountsLikeGo(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	dir := testbin.Native(t)
	const n = 100
	inject := func() {
		err := topo.Do(netlab.Sender, func() error {
			c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(probe.DefaultGroup))
			if err != nil {
				return err
			}
			defer c.Close()
			req := func(h wire.Header) []byte {
				h.RunID, h.Type = cmp.Or(h.RunID, 0xa11ce), cmp.Or(h.Type, wire.Request)
				return wire.Encode(make([]byte, 64), 64, &h)
			}
			short := req(wire.Header{Seq: 401})
			for _, b := range [][]byte{[]byte("not rig"), req(wire.Header{RunID: 7}), req(wire.Header{Arm: 5}), req(wire.Header{Round: 2}),
				req(wire.Header{Type: wire.Reply}), append(req(wire.Header{}), 0), short[:50], req(wire.Header{Seq: 400}), req(wire.Header{Seq: 400}),
				req(wire.Header{Seq: 600})} {
				if _, err := c.Write(b); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var feet []samples.Counters
	for _, engine := range []string{"go", "native"} {
		// The two injected requests that get a reply count to --count.
		f, log := nativeRoundWith(t, topo, dir, n, inject, nil, "--engine", engine, "--capacity", "500", "--count", strconv.Itoa(n+2))
		c := f.Footer.Counters
		feet = append(feet, c)
		if c.Foreign != 5 || c.Malformed != 2 || c.Duplicated != 1 || c.OutOfRange != 1 || c.Received != n+3 || c.Sent != n+2 || len(f.Records) != n+1 {
			t.Errorf("%s engine: %d records, counters %+v\n%s", engine, len(f.Records), c, log)
		}
	}
	if feet[0] != feet[1] {
		t.Errorf("the engines counted differently:\ngo     %+v\nnative %+v", feet[0], feet[1])
	}
	// Unicast requests, and replies to a group.
	to := netip.AddrPortFrom(topo.Responder.Addr, 9400).String()
	for _, c := range [][2][]string{{{"--listen", to}, {"--to", to}}, {{"--reply", "239.1.1.2:9001"}, {"--reply-group", "239.1.1.2:9001"}}} {
		f, log := nativeRoundWith(t, topo, dir, n, nil, c[1], append([]string{"--engine", "native", "--poll", "epoll"}, c[0]...)...)
		if len(f.Records) != n || f.Footer.Counters.Foreign != 0 || c[0][0] == "--listen" && f.Header.Requests() != "unicast to "+to {
			t.Errorf("%v: %d records, %+v, requests %q\n%s", c, len(f.Records), f.Footer.Counters, f.Header.Requests(), log)
		}
	}
	f, log := nativeRound(t, topo, dir, n, "--engine", "native", "--timestamps", "off")
	var own map[string]uint64
	b, _ := json.Marshal(f.Header.Settings["loop_calls"])
	json.Unmarshal(b, &own)
	if r := f.Records[0]; len(f.Records) != n || r.T[samples.ReqRxSW] != 0 || r.T[samples.RepTxSW] != 0 || r.T[samples.RepTxUser] == 0 || own["tx_reads"] != 0 ||
		f.Footer.Counters.TxStampsMissing != 0 || f.Header.Clocks["req_rx_sw"].Source != "" {
		t.Errorf("--timestamps off: %d records, first %+v, calls %v, clocks %v\n%s", len(f.Records), r, own, f.Header.Clocks, log)
	}
}

// TestNativeStop: SIGTERM to rig respond reaches the native loop, which
// hands over what it answered (the file says it was interrupted) and
// ends; a rig killed with SIGKILL takes the program with it.
func TestNativeStop(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	dir := testbin.Native(t)
	rig := testbin.Rig(t)
	out := filepath.Join(t.TempDir(), "responder.samples")
	start := func() (*exec.Cmd, *lockedBuffer, int) {
		cmd := exec.Command("ip", "netns", "exec", topo.Netns(netlab.Responder), rig, "respond", "--iface", topo.Responder.Interface,
			"--timestamps", "software", "--run-id", "a11ce", "--engine", "native", "--poll", "busy", "--out", out)
		cmd.Env = append(os.Environ(), native.EnvDir+"="+dir)
		log := &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		waitFor(t, log, ": ready")
		_, rest, _ := strings.Cut(log.String(), ", thread ")
		tid, err := strconv.Atoi(strings.TrimRight(rest[:strings.IndexByte(rest, ')')], " "))
		if err != nil {
			t.Fatalf("no thread in %q", log)
		}
		return cmd, log, tid
	}
	gone := func(tid int) bool {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", tid)); os.IsNotExist(err) {
				return true
			}
		}
		return false
	}
	cmd, log, tid := start()
	if b, err := exec.Command("ip", "netns", "exec", topo.Netns(netlab.Sender), rig, "send", "--iface", topo.Sender.Interface,
		"--count", "50", "--timestamps", "software", "--run-id", "a11ce").CombinedOutput(); err != nil || !strings.Contains(string(b), "received 50  lost 0") {
		t.Fatalf("rig send: %v\n%s", err, b)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM) // ip netns exec exec'd rig: this is rig
	if err := cmd.Wait(); err != nil {
		t.Fatalf("rig respond after SIGTERM: %v\n%s", err, log)
	}
	f, err := samples.ReadFile(out)
	if err != nil || len(f.Records) != 50 || !strings.HasPrefix(f.Footer.Stopped, samples.StoppedInterrupted) || !gone(tid) {
		t.Fatalf("after SIGTERM: %v, %d records, stopped %q, program gone %v\n%s", err, len(f.Records), f.Footer.Stopped, gone(tid), log)
	}
	cmd, log, tid = start()
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if !gone(tid) {
		t.Errorf("rig-respond-native (thread %d) outlived a killed rig\n%s", tid, log)
	}
}

// TestNativeRefusals: a backend the host cannot run is refused before the
// loop, with the reason found by probing, exit 2: prefer-busy-poll on a
// veth without NAPI (and accepted once GRO gives it one), io_uring under a
// seccomp filter that refuses io_uring_setup as a container runtime's does.
func TestNativeRefusals(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	dir := testbin.Native(t)
	rig := testbin.Rig(t)
	respond := func(dir string, poll string) (int, string) {
		cmd := exec.Command("ip", "netns", "exec", topo.Netns(netlab.Responder), rig, "respond", "--iface", topo.Responder.Interface,
			"--timestamps", "software", "--run-id", "1", "--engine", "native", "--poll", poll, "--max-duration", "30s")
		cmd.Env = append(os.Environ(), native.EnvDir+"="+dir)
		out, err := cmd.CombinedOutput()
		return cmd.ProcessState.ExitCode(), fmt.Sprintf("%s (%v)", out, err)
	}
	code, out := respond(dir, "prefer-busy-poll:20")
	if code != 2 || !strings.Contains(out, topo.Responder.Interface+" has no NAPI instance") || !strings.Contains(out, "gro on") {
		t.Errorf("prefer-busy-poll without NAPI: exit %d\n%s", code, out)
	}
	// io_uring_setup fails (a seccomp filter makes it, as a container
	// runtime's does); the program says why from what /proc shows: the
	// filter, or kernel.io_uring_disabled (a file in a private mount
	// namespace plays the sysctl: the host's stays as it is).
	wrap := t.TempDir()
	for _, c := range []struct{ disabled, want string }{
		{"", "a seccomp filter refuses io_uring_setup"},
		{"2", "io_uring is disabled on this host (kernel.io_uring_disabled = 2"},
		{"1", "kernel.io_uring_disabled = 1 and this process is neither root nor in kernel.io_uring_group"},
	} {
		run := fmt.Sprintf("exec %s %d %d %s \"$@\"", filepath.Join(dir, "seccomp-exec"), unix.SYS_IO_URING_SETUP, unix.EPERM, filepath.Join(dir, "rig-respond-native"))
		if c.disabled != "" {
			fake := filepath.Join(wrap, "io_uring_disabled-"+c.disabled)
			if err := os.WriteFile(fake, []byte(c.disabled+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			run = fmt.Sprintf("exec unshare -m sh -c 'mount --bind %s /proc/sys/kernel/io_uring_disabled && %s' sh \"$@\"", fake, run)
		}
		if err := os.WriteFile(filepath.Join(wrap, "rig-respond-native"), []byte("#!/bin/sh\n"+run+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, poll := range []string{"io-uring", "io-uring-sqpoll"} {
			code, out := respond(wrap, poll)
			if code != 2 || !strings.Contains(out, "poll "+poll+": "+c.want) {
				t.Errorf("%s, io_uring_disabled %q: exit %d\n%s", poll, c.disabled, code, out)
			}
		}
	}
	// GRO gives a veth NAPI: the same backend runs, and its requests came
	// through NAPI (veth_xmit: forwarded frames take it only from a port
	// without TSO).
	for _, c := range [][]string{{topo.Netns(netlab.Responder), topo.Responder.Interface, "gro", "on"}, {topo.Switch.Netns, topo.Responder.Port, "tso", "off"}} {
		if out, err := exec.Command("ip", "netns", "exec", c[0], "ethtool", "-K", c[1], c[2], c[3]).CombinedOutput(); err != nil {
			t.Fatalf("ethtool -K %v: %v\n%s", c[1:], err, out)
		}
	}
	f, log := nativeRound(t, topo, dir, 100, "--engine", "native", "--poll", "prefer-busy-poll:20:16")
	if s := f.Header.Settings; s["napi_id"] == float64(0) || s["busy_poll_budget"] != float64(16) || s["poll"] != "prefer-busy-poll" {
		t.Errorf("prefer-busy-poll with NAPI: settings %v\n%s", s, log)
	}
	// The veth's NAPI knobs are 0: it runs, warning that the interrupts
	// stay on; with them set through rig nicctl set it does not warn.
	const stayOn = "napi_defer_hard_irqs 0 and gro_flush_timeout 0 ns: prefer-busy-poll polls, but the kernel does not hold the interrupts off"
	if !strings.Contains(log, stayOn) {
		t.Errorf("prefer-busy-poll with the NAPI knobs at 0: no warning\n%s", log)
	}
	state := t.TempDir()
	nicctl := func(args ...string) {
		t.Helper()
		cmd := exec.Command("ip", append([]string{"netns", "exec", topo.Netns(netlab.Responder), rig}, args...)...)
		cmd.Env = append(os.Environ(), "RIG_STATE_DIR="+state)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("rig %v: %v\n%s", args, err, out)
		}
	}
	nicctl("nicctl", "set", topo.Responder.Interface, "--napi-defer-hard-irqs", "2", "--gro-flush-timeout", "200000", "--allow-mgmt", "--keep")
	t.Cleanup(func() { nicctl("restore") })
	if _, log = nativeRound(t, topo, dir, 100, "--engine", "native", "--poll", "prefer-busy-poll:20"); strings.Contains(log, "interrupts") {
		t.Errorf("prefer-busy-poll with the NAPI knobs set still warns:\n%s", log)
	}
}

// TestNativeLibcCalls runs the native engine behind an interposer that
// counts libc's calls (native/test/interpose.c): its loop allocates
// nothing, every socket call it counts went through libc (none as a raw
// system call), it reads the error queue once per reply, and with
// io-uring-sqpoll it makes no system call per request.
func TestNativeLibcCalls(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	dir := testbin.Native(t)
	const n = 300
	for _, poll := range []string{"block", "busy", "epoll", "io-uring", "io-uring-sqpoll"} {
		wrap := t.TempDir()
		calls := filepath.Join(wrap, "calls")
		script := fmt.Sprintf("#!/bin/sh\nLD_PRELOAD=%s RIG_INTERPOSE_OUT=%s exec %s \"$@\"\n", filepath.Join(dir, "librig-interpose.so"), calls,
			filepath.Join(dir, "rig-respond-native"))
		if err := os.WriteFile(filepath.Join(wrap, "rig-respond-native"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		f, log := nativeRound(t, topo, wrap, n, "--engine", "native", "--poll", poll)
		seen := readCalls(t, calls)
		var own map[string]uint64
		b, _ := json.Marshal(f.Header.Settings["loop_calls"])
		if err := json.Unmarshal(b, &own); err != nil || own["recvmsg"]+own["ring_ops"] == 0 {
			t.Fatalf("%s: loop_calls %s: %v", poll, b, err)
		}
		total := func(c string) uint64 { return seen["setup "+c] + seen["loop "+c] + seen["after "+c] }
		for _, c := range []string{"malloc", "calloc", "realloc", "memalign", "free", "mmap"} {
			if seen["loop "+c] != 0 {
				t.Errorf("%s: the loop called %s %d times", poll, c, seen["loop "+c])
			}
		}
		for c, want := range map[string]uint64{"socket": own["socket_calls"], "setsockopt": own["setsockopt"], "recvmsg": own["recvmsg"], "sendmsg": own["sendmsg"],
			"recv": 0, "send": 0, "recvfrom": 0, "sendto": 0,
			fmt.Sprintf("syscall-%d", unix.SYS_RECVMSG): 0, fmt.Sprintf("syscall-%d", unix.SYS_SENDMSG): 0,
			fmt.Sprintf("syscall-%d", unix.SYS_SOCKET): 0, fmt.Sprintf("syscall-%d", unix.SYS_SETSOCKOPT): 0} {
			if total(c) != want {
				t.Errorf("%s: libc saw %s %d times, the program made %d\n%v", poll, c, total(c), want, seen)
			}
		}
		if own["tx_reads"] < n-1 || own["tx_reads"] > n+n/20 {
			t.Errorf("%s: %d error-queue reads in the loop for %d replies, want one each", poll, own["tx_reads"], n)
		}
		enters := seen[fmt.Sprintf("loop syscall-%d", unix.SYS_IO_URING_ENTER)]
		t.Logf("%s, %d requests: the program's own counts %v; in the loop libc saw recvmsg %d, sendmsg %d, epoll_wait %d, io_uring_enter %d, malloc %d",
			poll, n, own, seen["loop recvmsg"], seen["loop sendmsg"], seen["loop epoll_wait"], enters, seen["loop malloc"])
		switch poll {
		case "io-uring":
			if enters < n || own["sendmsg"] != 0 {
				t.Errorf("io-uring: %d io_uring_enter in the loop for %d requests, %d sendmsg", enters, n, own["sendmsg"])
			}
		case "io-uring-sqpoll":
			if enters > n/10 || own["sendmsg"] != 0 || seen["loop recvmsg"] != 0 {
				t.Errorf("io-uring-sqpoll: %d io_uring_enter and %d recvmsg in the loop for %d requests, %d sendmsg", enters, seen["loop recvmsg"], n, own["sendmsg"])
			}
		default:
			if seen["loop sendmsg"] != n {
				t.Errorf("%s: %d sendmsg in the loop for %d replies\n%s", poll, seen["loop sendmsg"], n, log)
			}
		}
	}
}

// TestNativeStack runs the native engine under --stack custom with the
// interposer as the stack (native/test/interpose.c, preloaded as Onload,
// VMA or XLIO would be): rig proves it loaded — the library mapped in the
// program, its presence check answering yes and its per-socket check
// saying the responder's socket is its own — and every request's receive
// and every reply's send went through it. A library the loader cannot
// preload, a presence check the process lacks, or a socket the stack
// left to the kernel (RIG_INTERPOSE_KERNEL) is refused.
func TestNativeStack(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	dir := testbin.Native(t)
	lib := filepath.Join(dir, "librig-interpose.so")
	const n = 200
	for _, poll := range []string{"block", "epoll"} {
		calls := filepath.Join(t.TempDir(), "calls")
		f, log := nativeRound(t, topo, dir, n, "--engine", "native", "--poll", poll, "--stack", "custom", "--stack-preload", lib,
			"--stack-presence", "rig_interpose_present", "--stack-fd-stat", "rig_interpose_fd_stat", "--stack-env", "RIG_INTERPOSE_OUT="+calls)
		s, c := f.Header.Settings, f.Footer.Counters
		if s["stack"] != "custom" || s["stack_library"] != lib || s["stack_presence"] != "rig_interpose_present: yes" ||
			s["stack_fd_stat"] != "rig_interpose_fd_stat: yes (stack interpose, id 7)" {
			t.Errorf("%s: settings %v\n%s", poll, s, log)
		}
		seen := readCalls(t, calls)
		t.Logf("%s: received %d, answered %d; in the loop the stack intercepted recvmsg %d (%d not of the error queue), sendmsg %d",
			poll, c.Received, c.Sent, seen["loop recvmsg"], seen["loop recvmsg-data"], seen["loop sendmsg"])
		if c.Received != n || c.Sent != n || seen["loop recvmsg-data"] < c.Received || seen["loop sendmsg"] < c.Sent {
			t.Errorf("%s: the stack saw %d receives and %d sendmsg for %d received and %d answered", poll, seen["loop recvmsg-data"], seen["loop sendmsg"], c.Received, c.Sent)
		}
	}
	fake := filepath.Join(t.TempDir(), "libfake.so")
	if err := os.WriteFile(fake, []byte("not a library"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--stack-preload", fake}, "libfake.so is not mapped in the native program"},
		{[]string{"--stack-preload", lib, "--stack-presence", "no_such_check"}, "its presence check no_such_check() is not in the process"},
		{[]string{"--stack-preload", lib, "--stack-presence", "rig_interpose_present", "--stack-fd-stat", "rig_interpose_fd_stat", "--stack-env", "RIG_INTERPOSE_KERNEL=1"},
			"rig_interpose_present() says yes, but rig_interpose_fd_stat() says the responder's socket is not accelerated: is " + topo.Responder.Interface + " an interface"},
		{[]string{"--stack-preload", lib, "--stack-fd-stat", "no_such_fd_stat"}, "no_such_fd_stat() is not in the process"},
	} {
		cmd := exec.Command("ip", append([]string{"netns", "exec", topo.Netns(netlab.Responder), testbin.Rig(t), "respond", "--iface", topo.Responder.Interface,
			"--timestamps", "software", "--run-id", "1", "--engine", "native", "--stack", "custom"}, c.flags...)...)
		cmd.Env = append(os.Environ(), native.EnvDir+"="+dir)
		out, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("%v: exit %d (%v), want 2 saying %q\n%s", c.flags, code, err, c.want, out)
		}
	}
}

// readCalls reads the interposer's "PHASE CALL COUNT" lines.
func readCalls(t *testing.T, path string) map[string]uint64 {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatalf("the interposer's counts: %v", err)
	}
	defer fh.Close()
	m := map[string]uint64{}
	for sc := bufio.NewScanner(fh); sc.Scan(); {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			t.Fatalf("interposer line %q", sc.Text())
		}
		n, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		m[f[0]+" "+f[1]] = n
	}
	return m
}

// TestNativeEngineBadInput: a native-only backend without --engine native,
// and the native engine without its program, are refused (exit 2) before
// the NIC is touched, saying what to do.
func TestNativeEngineBadInput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the rig binary")
	}
	code, stderr := runRig(t, nil, "respond", "--iface", "lo", "--run-id", "1", "--poll", "io-uring")
	if code != 2 || !strings.Contains(stderr, `poll mode "io-uring" needs --engine native`) {
		t.Errorf("io-uring on the Go engine: exit %d\n%s", code, stderr)
	}
	code, stderr = runRig(t, nil, "respond", "--iface", "lo", "--run-id", "1", "--stack", "onload")
	if code != 2 || !strings.Contains(stderr, "--stack onload needs --engine native: the Go engine makes its socket calls as raw system calls") {
		t.Errorf("a stack on the Go engine: exit %d\n%s", code, stderr)
	}
	t.Setenv("PATH", t.TempDir())
	t.Setenv("LD_LIBRARY_PATH", "")
	code, stderr = runRig(t, nil, "respond", "--iface", "lo", "--run-id", "1", "--engine", "native", "--stack", "xlio")
	if code != 2 || !strings.Contains(stderr, "--stack xlio: library libxlio.so is not in LD_LIBRARY_PATH") || !strings.Contains(stderr, "install NVIDIA XLIO") {
		t.Errorf("an absent stack: exit %d\n%s", code, stderr)
	}
	t.Setenv(native.EnvDir, t.TempDir())
	code, stderr = runRig(t, nil, "respond", "--iface", "lo", "--run-id", "1", "--engine", "native")
	if code != 2 || !strings.Contains(stderr, "the native program rig-respond-native is missing") || !strings.Contains(stderr, "make build") {
		t.Errorf("no program: exit %d\n%s", code, stderr)
	}
}
