package native

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/rig-project/rig/internal/cpusched"
	"github.com/rig-project/rig/internal/tstamp"
)

// EnvDir names a directory to find the native programs in instead of the
// one rig's own executable is in.
const EnvDir = "RIG_NATIVE_DIR"

// Find returns the path of the native program name: in $RIG_NATIVE_DIR
// when set, else beside rig's executable, as name or as make dist names
// it (name-linux-GOARCH). Missing, the error says how to build it and
// wraps os.ErrNotExist.
func Find(name string) (string, error) {
	exe, err := os.Executable()
	if err != nil && os.Getenv(EnvDir) == "" {
		return "", fmt.Errorf("%s: where is rig's own executable? %w (set %s to the program's directory)", name, err, EnvDir)
	}
	return FindFor(exe, name)
}

// FindFor is Find as the rig executable at path rig does it: a tool that
// starts rig (rigbench) learns before it does whether rig will find name.
func FindFor(rig, name string) (string, error) {
	dir := os.Getenv(EnvDir)
	if dir == "" {
		dir = filepath.Dir(rig)
	}
	return find(dir, name)
}

func find(dir, name string) (string, error) {
	var tried []string
	for _, n := range []string{name, name + "-linux-" + runtime.GOARCH} {
		p := filepath.Join(dir, n)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
		tried = append(tried, p)
	}
	return "", fmt.Errorf("the native program %s is missing (no executable %s): build it with `make build` (needs a C compiler: apt-get install gcc), copy it from `make dist` beside rig, or set %s to its directory: %w",
		name, strings.Join(tried, " or "), EnvDir, os.ErrNotExist)
}

// Ready is what the native responder reports once its socket is set up and
// its loop starts: its thread, and what the kernel made of the socket's
// timestamping flags (tstamp.SetResult), receive buffer and mlockall.
type Ready struct {
	TID      int
	TS       tstamp.SetResult
	RcvBuf   int
	MlockAll syscall.Errno // 0: the program's memory is locked
	// Presence is what the stack's own presence check said (--presence):
	// yes, no, or absent (the program found no such function); "" when
	// not asked.
	Presence string
	// Accelerated is what the stack's per-socket check said of the
	// program's socket (--fd-stat): yes, no, absent, or error:N (N an
	// errno); "" when not asked. With yes, the stack's name (- when it
	// gave none) and id it is in.
	Accelerated string
	FdStack     string
	FdStackID   int
	Remainder   string // fields this rig does not know, as given
}

// readyKeys are the fields a ready line must carry.
var readyKeys = []string{"tid", "ts_flags", "ts_old", "ts_dropped", "ts_assumed", "rcvbuf", "mlockall"}

// ParseReady parses a ready line: "ready" then space-separated key=value
// fields, values in C's notation (0x… hex). Every field of readyKeys is
// required; others are kept in Remainder.
func ParseReady(line string) (Ready, error) {
	fields := strings.Fields(line)
	if len(fields) == 0 || fields[0] != "ready" {
		return Ready{}, fmt.Errorf("native: %q is not a ready line", line)
	}
	v := map[string]uint64{}
	var rest []string
	var r Ready
	fd := map[string]bool{} // the per-socket check's fields given
	presence := ""
	for _, f := range fields[1:] {
		k, val, ok := strings.Cut(f, "=")
		if !ok {
			return Ready{}, fmt.Errorf("native: ready line field %q is not key=value", f)
		}
		if k == "accelerated" || k == "stack" || k == "id" {
			if err := r.fdStat(k, val, fd); err != nil {
				return Ready{}, err
			}
			continue
		}
		if k == "presence" {
			if presence != "" || !slices.Contains([]string{"yes", "no", "absent"}, val) {
				return Ready{}, fmt.Errorf("native: ready line presence=%q: want yes, no or absent, once", val)
			}
			presence = val
			continue
		}
		if !slices.Contains(readyKeys, k) {
			rest = append(rest, f)
			continue
		}
		if _, dup := v[k]; dup {
			return Ready{}, fmt.Errorf("native: ready line gives %s twice", k)
		}
		n, err := strconv.ParseUint(val, 0, 32)
		if err != nil {
			return Ready{}, fmt.Errorf("native: ready line %s=%q: want a number up to 2^32-1", k, val)
		}
		v[k] = n
	}
	for _, k := range readyKeys {
		if _, ok := v[k]; !ok {
			return Ready{}, fmt.Errorf("native: ready line lacks %s: %q", k, line)
		}
	}
	for _, k := range []string{"ts_old", "ts_assumed"} {
		if v[k] > 1 {
			return Ready{}, fmt.Errorf("native: ready line %s=%d: want 0 or 1", k, v[k])
		}
	}
	if (r.Accelerated == "yes") != fd["stack"] || fd["stack"] != fd["id"] {
		return Ready{}, fmt.Errorf("native: ready line %q: stack= and id= go with accelerated=yes, and only with it", line)
	}
	r.TID, r.RcvBuf, r.MlockAll, r.Presence, r.Remainder = int(v["tid"]), int(v["rcvbuf"]), syscall.Errno(v["mlockall"]), presence, strings.Join(rest, " ")
	r.TS = tstamp.SetResult{Flags: tstamp.Flags(v["ts_flags"]), Old: v["ts_old"] == 1, Dropped: tstamp.Flags(v["ts_dropped"]), Assumed: v["ts_assumed"] == 1}
	return r, nil
}

// fdStat takes one field of the per-socket check's answer, each once:
// accelerated=yes|no|absent|error:N, and with yes stack=NAME id=N.
func (r *Ready) fdStat(k, val string, seen map[string]bool) error {
	bad := func(want string) error { return fmt.Errorf("native: ready line %s=%q: want %s", k, val, want) }
	if seen[k] {
		return fmt.Errorf("native: ready line gives %s twice", k)
	}
	seen[k] = true
	switch k {
	case "accelerated":
		n, err := strconv.ParseUint(strings.TrimPrefix(val, "error:"), 10, 31)
		if !slices.Contains([]string{"yes", "no", "absent"}, val) && (!strings.HasPrefix(val, "error:") || err != nil || n == 0) {
			return bad("yes, no, absent or error:N")
		}
		r.Accelerated = val
	case "stack":
		if val == "" {
			return bad("a name")
		}
		r.FdStack = val
	case "id":
		n, err := strconv.ParseInt(val, 10, 32)
		if err != nil {
			return bad("a stack id")
		}
		r.FdStackID = int(n)
	}
	return nil
}

// Refusal is a program's "refused" line, or the caller's refusal to start
// it: bad input, a missing privilege or a backend this host cannot run. It
// matches errors.ErrUnsupported (rig's exit status 2).
type Refusal struct{ Msg string }

func (r *Refusal) Error() string { return r.Msg }
func (r *Refusal) Unwrap() error { return errors.ErrUnsupported }

// maxLine bounds a line from the program.
const maxLine = 64 << 10

// Proc is a running native program.
type Proc struct {
	name  string
	cmd   *exec.Cmd
	lines *bufio.Reader // the ready pipe
	pipe  *os.File
	out   *os.File // the handoff, an unlinked temporary file
	live  []byte   // Launch.Live's page, shared with the program
	exit  chan error
	back  func() // KeepOff's restore (nil: rig's threads were not moved)
}

// Launch is how a program starts under a kernel-bypass stack: through
// the stack's launcher, which execs it (the process stays the one
// started), and with variables added to its environment (LD_PRELOAD, the
// stack's own). The zero Launch starts it as it is. Live asks for a page
// of that many u64 counters the program stores as its loop runs and rig
// reads meanwhile (Proc.Live): an unlinked file both map shared, passed
// as --live-fd 5, so the loop reports without a system call.
type Launch struct {
	Launcher string
	Env      []string
	Live     int
}

// Start runs the responder program prog with args through l (StartLine)
// and parses its ready line.
func Start(prog string, args []string, l Launch, stderr io.Writer) (*Proc, Ready, error) {
	p, line, err := StartLine(prog, args, l, stderr)
	if err != nil {
		return nil, Ready{}, err
	}
	rd, err := ParseReady(line)
	if err != nil {
		p.Close()
		return nil, Ready{}, err
	}
	return p, rd, nil
}

// StartLine runs prog with args and --ready-fd and --out-fd (through l),
// its output going to stderr, and returns its first line. The program
// dies with rig (PR_SET_PDEATHSIG). A refused line is a *Refusal.
func StartLine(prog string, args []string, l Launch, stderr io.Writer) (*Proc, string, error) {
	p := &Proc{name: filepath.Base(prog), exit: make(chan error, 1)}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, "", err
	}
	p.pipe, p.lines = r, bufio.NewReaderSize(io.LimitReader(r, 16*maxLine), maxLine)
	if p.out, err = os.CreateTemp("", "rig-native-*.handoff"); err != nil {
		r.Close()
		w.Close()
		return nil, "", fmt.Errorf("the native program's handoff file: %w", err)
	}
	os.Remove(p.out.Name()) // the open file is enough; nothing is left behind
	// The pipe first: whatever the program refuses then goes to it.
	argv, files := []string{prog, "--ready-fd", "3", "--out-fd", "4"}, []*os.File{w, p.out}
	if l.Live > 0 {
		lf, err := p.livePage(l.Live)
		if err != nil {
			p.close()
			w.Close()
			return nil, "", err
		}
		defer lf.Close() // the program and the mapping hold it
		argv, files = append(argv, "--live-fd", "5"), append(files, lf)
	}
	argv = append(argv, args...)
	if l.Launcher != "" {
		argv = append([]string{l.Launcher}, argv...)
	}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	if l.Env != nil {
		p.cmd.Env = append(os.Environ(), l.Env...)
	}
	p.cmd.ExtraFiles = files
	p.cmd.Stdout, p.cmd.Stderr = stderr, stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	err = p.cmd.Start()
	w.Close()
	if err != nil {
		p.close()
		return nil, "", fmt.Errorf("starting %s: %w", prog, err)
	}
	go func() { p.exit <- p.cmd.Wait() }()
	line, err := p.lines.ReadString('\n')
	if err != nil {
		werr := <-p.exit
		p.close()
		return nil, "", fmt.Errorf("%s ended before it was ready (%v; its messages are above)", p.name, werr)
	}
	line = strings.TrimSuffix(line, "\n")
	if err = lineErr(p.name, line); err != nil {
		p.Close()
		return nil, "", err
	}
	return p, line, nil
}

// lineErr is the error a refused or failed line reports (nil for others).
func lineErr(name, line string) error {
	if msg, ok := strings.CutPrefix(line, "refused "); ok {
		return &Refusal{msg}
	}
	if msg, ok := strings.CutPrefix(line, "failed "); ok {
		return fmt.Errorf("%s: %s", name, msg)
	}
	return nil
}

// livePage makes Launch.Live's page of n counters, mapped here. Its
// blocks are allocated now: a store to a hole of a file on a full disk
// would kill the program with SIGBUS mid-round.
func (p *Proc) livePage(n int) (*os.File, error) {
	f, err := os.CreateTemp("", "rig-native-*.live")
	if err == nil {
		os.Remove(f.Name())
		if err = syscall.Fallocate(int(f.Fd()), 0, 0, int64(8*n)); err == nil {
			p.live, err = syscall.Mmap(int(f.Fd()), 0, 8*n, syscall.PROT_READ, syscall.MAP_SHARED)
		}
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("the native program's live counters: %w", err)
	}
	return f, nil
}

// Live is counter i of the live page as the program last stored it (0
// without a page). It must not be called after Close.
func (p *Proc) Live(i int) uint64 {
	if 8*i+8 > len(p.live) {
		return 0
	}
	return atomic.LoadUint64((*uint64)(unsafe.Pointer(&p.live[8*i])))
}

// Pid is the program's process (the launcher's, which exec'd it).
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Wait waits for the responder program to end, sending it SIGTERM when
// ctx is done first, and reads its handoff. A program that failed after
// it wrote its handoff returns both.
func (p *Proc) Wait(ctx context.Context) (*Handoff, error) { return wait(p, ctx, ReadHandoff) }

// WaitNoise is Wait for the noise program (NoiseProgram).
func (p *Proc) WaitNoise(ctx context.Context) (*Noise, error) { return wait(p, ctx, ReadNoise) }

func wait[T any](p *Proc, ctx context.Context, read func(io.Reader) (*T, error)) (*T, error) {
	var err error
	select {
	case err = <-p.exit:
	case <-ctx.Done():
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		err = <-p.exit
	}
	p.exit <- err // for Close
	var failed error
	for {
		line, rerr := p.lines.ReadString('\n')
		if e := lineErr(p.name, strings.TrimSuffix(line, "\n")); e != nil && failed == nil {
			failed = e
		}
		if rerr != nil {
			break
		}
	}
	var h *T
	var herr error
	if _, herr = p.out.Seek(0, io.SeekStart); herr == nil {
		h, herr = read(p.out)
	}
	switch {
	case failed != nil:
		return h, failed
	case err != nil:
		return h, fmt.Errorf("%s: %v (its messages are above)", p.name, err)
	case herr != nil:
		return nil, fmt.Errorf("%s: %w", p.name, herr)
	}
	return h, nil
}

// KeepOff moves rig's own threads off cpu, where the program's loop runs
// pinned, until Close: otherwise the Go runtime's wake-ups (sysmon, the
// progress ticker, the garbage collector) would preempt the loop it
// measures. where says where they stand, for the sample header: "off CPU
// N", or why they may still run there (shared: a process confined to that
// CPU, by taskset or a cpuset of one); "" for no CPU (cpu < 0).
func (p *Proc) KeepOff(cpu int) (where string, shared bool) {
	if cpu < 0 {
		return "", false
	}
	back, err := cpusched.AvoidCPU(cpu)
	p.back = back
	if err != nil {
		return fmt.Sprintf("may share CPU %d with the loop (moving them: %v; allow rig a CPU besides %d, e.g. a wider taskset or cpuset)", cpu, err, cpu), true
	}
	return fmt.Sprintf("off CPU %d", cpu), false
}

// Close kills the program if it still runs and releases what Start opened.
func (p *Proc) Close() {
	select {
	case err := <-p.exit:
		p.exit <- err
	default:
		_ = p.cmd.Process.Kill()
	}
	p.close()
}

func (p *Proc) close() {
	if p.back != nil {
		p.back()
		p.back = nil
	}
	p.pipe.Close()
	p.out.Close()
	if p.live != nil {
		_ = syscall.Munmap(p.live)
		p.live = nil
	}
}

// TimestampArgs are a native program's flags for its socket's
// timestamping as plan decided it (sock.c reads them): the flags to set
// and those it may drop, which directions' hardware stamps to take and
// prove (ProofWindow; hwFail: --timestamps hardware, their absence ends
// the loop), and which software TX stamp is the SND one's stand-in.
func TimestampArgs(plan tstamp.Plan, hwFail bool) []string {
	b := func(v bool) string { return map[bool]string{false: "0", true: "1"}[v] }
	return []string{"--ts-flags", strconv.FormatUint(uint64(plan.Want), 10), "--ts-optional", strconv.FormatUint(uint64(plan.Optional), 10),
		"--hw-rx", b(plan.Granted.Decision.RX), "--hw-tx", b(plan.Granted.Decision.TX), "--hw-window", strconv.Itoa(tstamp.ProofWindow),
		"--hw-fail", b(hwFail), "--tx-sw", strings.ToLower(plan.Granted.SWTx.String())}
}
