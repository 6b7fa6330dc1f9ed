// Package journal records every change rig makes to a host so that it can
// always be put back: on normal exit, on error, on Ctrl-C and SIGTERM, and
// after a crash or kill -9 through `rig restore`.
//
// The journal is an append-only file of JSON lines in a state directory
// ($RIG_STATE_DIR, default /var/lib/rig). Each change is one "apply" record
// written and fsynced before the host is touched, then an "effective" record
// with what the kernel actually granted. Undoing a change appends an "undone"
// (or "undo-failed") record. A change is open until it has been undone; a
// journal with open changes is pending, and every rig command that would
// change a host refuses to start until `rig restore` has replayed it.
//
// The journal knows nothing about NICs or CPUs: each kind of change
// ("sysfs", "ethtool-channels", "irqbalance", ...) has an undo handler
// registered by the package that makes that change.
package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rig-project/rig/internal/cli"
)

// EnvDir names the environment variable that overrides DefaultDir.
const EnvDir = "RIG_STATE_DIR"

// DefaultDir is where the journal lives when $RIG_STATE_DIR is unset.
const DefaultDir = "/var/lib/rig"

const (
	// FileName is the journal's file in its directory.
	FileName = "journal.jsonl"
	lockName = "journal.lock"
)

// Dir returns $RIG_STATE_DIR, or DefaultDir when it is unset.
func Dir() string {
	if d := os.Getenv(EnvDir); d != "" {
		return d
	}
	return DefaultDir
}

// Record operations.
const (
	OpApply      = "apply"       // before the change: previous and requested value
	OpEffective  = "effective"   // after the change: what reading back gave
	OpFailed     = "failed"      // the change was refused and nothing changed: closes the entry
	OpUndone     = "undone"      // the previous value was put back: closes the entry
	OpUndoFailed = "undo-failed" // putting it back failed: the entry stays open
)

// Record is one line of the journal file.
type Record struct {
	Seq  int    `json:"seq"`
	Op   string `json:"op"`
	Kind string `json:"kind"`
	// Target names what was changed in the kind's own terms: a host path
	// for "sysfs", an interface name for the ethtool kinds.
	Target string `json:"target"`
	// Previous is the value read before the change; undo restores it.
	Previous string `json:"previous,omitempty"`
	// Applied is the value requested; Effective what reading back gave.
	Applied   string `json:"applied,omitempty"`
	Effective string `json:"effective,omitempty"`
	// NetNS identifies the network namespace of the process that made the
	// change ("net:[4026531840]"): netdev changes are only meaningful there.
	NetNS string `json:"netns,omitempty"`
	// Root is the hostfs root a path Target lives below ("/" on a real
	// host), so that a restore never writes a fake tree's values to the
	// real /proc, or the other way round.
	Root string `json:"root,omitempty"`
	// Device identifies the network device of a change to one (absent in
	// journals of older rigs); undo refuses a device that is not the same.
	Device *Device   `json:"device,omitempty"`
	Error  string    `json:"error,omitempty"`
	Time   time.Time `json:"time"`
	PID    int       `json:"pid"`
}

// Entry is one change as reconstructed from its records.
type Entry struct {
	Seq       int
	Kind      string
	Target    string
	Previous  string
	Applied   string
	Effective string // empty if the process died before reading back
	NetNS     string
	Root      string
	Device    *Device
	Time      time.Time
	PID       int
	// Open is true until the change was undone or was refused outright.
	Open bool
	// UndoError is the last failed undo attempt, if any.
	UndoError string
}

// ParseError reports a malformed journal line.
type ParseError struct {
	Line int
	Err  error
}

func (e *ParseError) Error() string { return fmt.Sprintf("journal line %d: %v", e.Line, e.Err) }
func (e *ParseError) Unwrap() error { return e.Err }

// Parse reads journal records. A last line without a newline is the trace
// of a crash in the middle of an append: the change it announced was never
// started (apply is written and fsynced before the host is touched), so it
// is ignored. Any other malformed line is a *ParseError.
func Parse(r io.Reader) ([]Record, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var recs []Record
	line := 0
	for len(data) > 0 {
		line++
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break // torn final append
		}
		l := bytes.TrimSpace(data[:i])
		data = data[i+1:]
		if len(l) == 0 {
			continue
		}
		var rec Record
		dec := json.NewDecoder(bytes.NewReader(l))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rec); err != nil {
			return nil, &ParseError{line, err}
		}
		if dec.More() {
			return nil, &ParseError{line, errors.New("trailing data after the record")}
		}
		if err := rec.validate(); err != nil {
			return nil, &ParseError{line, err}
		}
		recs = append(recs, rec)
	}
	return recs, nil
}

func (r *Record) validate() error {
	switch r.Op {
	case OpApply, OpEffective, OpFailed, OpUndone, OpUndoFailed:
	default:
		return fmt.Errorf("unknown op %q", r.Op)
	}
	if r.Seq < 1 {
		return fmt.Errorf("seq %d: must be >= 1", r.Seq)
	}
	if r.Op == OpApply && r.Kind == "" {
		return errors.New("apply record without a kind")
	}
	return nil
}

// Entries folds records into changes, in the order they were applied.
// Records that refer to an unknown seq are an error: the file was edited or
// mixed up.
func Entries(recs []Record) ([]Entry, error) {
	var out []Entry
	idx := map[int]int{}
	for _, r := range recs {
		if r.Op == OpApply {
			if _, dup := idx[r.Seq]; dup {
				return nil, fmt.Errorf("journal: seq %d applied twice", r.Seq)
			}
			idx[r.Seq] = len(out)
			out = append(out, Entry{Seq: r.Seq, Kind: r.Kind, Target: r.Target, Previous: r.Previous,
				Applied: r.Applied, NetNS: r.NetNS, Root: r.Root, Device: r.Device, Time: r.Time, PID: r.PID, Open: true})
			continue
		}
		i, ok := idx[r.Seq]
		if !ok {
			return nil, fmt.Errorf("journal: %s record for seq %d, which was never applied", r.Op, r.Seq)
		}
		e := &out[i]
		switch r.Op {
		case OpEffective:
			e.Effective = r.Effective
		case OpFailed, OpUndone:
			e.Open = false
			e.UndoError = ""
		case OpUndoFailed:
			e.UndoError = r.Error
		}
	}
	return out, nil
}

// PendingError says a journal with open changes exists. Commands that would
// change the host return it unchanged so the user sees the fix.
type PendingError struct {
	Dir  string
	PID  int
	Time time.Time
	Open int
}

// Is makes a pending journal bad input (cli.ErrUsage): run rig restore.
func (e *PendingError) Is(target error) bool { return target == cli.ErrUsage }

func (e *PendingError) Error() string {
	return fmt.Sprintf("a journal from pid %d at %s with %d unrestored change(s) is pending in %s: run `rig restore`",
		e.PID, e.Time.UTC().Format(time.RFC3339), e.Open, e.Dir)
}

// ErrLocked is wrapped when another live rig process holds the journal.
var ErrLocked = errors.New("another rig process is changing this host")

// Pending reports the open changes of the journal in dir. It returns nil,
// nil when there is none (no file, or every change undone).
func Pending(dir string) ([]Entry, error) {
	f, err := os.Open(filepath.Join(dir, FileName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, permissionHint(err)
	}
	defer f.Close() // read only: a close error cannot lose anything
	recs, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	all, err := Entries(recs)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	var open []Entry
	for _, e := range all {
		if e.Open {
			open = append(open, e)
		}
	}
	return open, nil
}

// CheckPending returns a *PendingError if dir, or one of its lanes, holds
// open changes.
func CheckPending(dir string) error {
	lanes, err := Lanes(dir)
	if err != nil {
		return err
	}
	for _, d := range lanes {
		open, err := Pending(d)
		if err != nil {
			return err
		}
		if len(open) > 0 {
			return &PendingError{Dir: d, PID: open[0].PID, Time: open[0].Time, Open: len(open)}
		}
	}
	return nil
}

// LaneDir is the journal directory of one lane below base. Several rig
// agents on one machine (one per network namespace or NIC port of a
// scenario) change the host at the same time; each journals in its own
// lane so that none waits for another's lock, and `rig restore` replays
// every lane.
func LaneDir(base, lane string) string { return filepath.Join(base, "lanes", lane) }

// Lanes returns dir and the lane directories below it. A lanes directory
// that exists but cannot be read is an error: its pending changes must
// not be passed over.
func Lanes(dir string) ([]string, error) {
	out := []string{dir}
	ents, err := os.ReadDir(filepath.Join(dir, "lanes"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, permissionHint(fmt.Errorf("journal lanes: %w", err))
	}
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, filepath.Join(dir, "lanes", e.Name()))
		}
	}
	return out, nil
}

// Journal is an open, locked journal. It is not safe for concurrent use.
type Journal struct {
	dir      string
	f        *os.File
	lock     *os.File
	seq      int
	applied  int // Apply calls that reached the write, for EnvTestPause
	netns    string
	handlers Handlers
	now      func() time.Time
}

// UndoFunc puts an entry's previous value back and returns the value read
// back afterwards, for the report.
type UndoFunc func(ctx context.Context, e Entry) (restored string, err error)

// Handlers maps a kind to its undo function.
type Handlers map[string]UndoFunc

// Open locks the journal in dir (creating dir) for a command that changes
// the host. It fails with a *PendingError if a previous run left open
// changes, and with ErrLocked if another rig process holds the lock.
// handlers must cover every kind the caller will Apply. The caller holds
// the host lock (LockHost) of dir's base directory: the journal's own lock
// keeps its file whole, the host lock keeps other changers off the host.
func Open(dir string, handlers Handlers) (*Journal, error) {
	lock, err := acquire(dir)
	if err != nil {
		return nil, err
	}
	// On failure the lock is closed and the error returned: closing
	// releases the flock whatever Close says, and nothing was written.
	if err := CheckPending(dir); err != nil {
		lock.Close()
		return nil, err
	}
	j, err := openLocked(dir, lock, handlers)
	if err != nil {
		lock.Close()
		return nil, err
	}
	return j, nil
}

func acquire(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, permissionHint(fmt.Errorf("journal directory: %w", err))
	}
	lock, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, permissionHint(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(lock.Name()) // the holder's pid, only for the message
		lock.Close()                     // not ours: nothing written to lose
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w (pid %s)", dir, ErrLocked, strings.TrimSpace(string(b)))
		}
		return nil, fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	// The pid is informational (for the ErrLocked message); flock is the lock,
	// and the kernel drops it when the process dies, even by kill -9. A
	// failed write costs only the pid in another process's message.
	_ = lock.Truncate(0)
	_, _ = lock.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return lock, nil
}

func openLocked(dir string, lock *os.File, h Handlers) (*Journal, error) {
	path := filepath.Join(dir, FileName)
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	// On the failures below f is closed and the error returned: nothing
	// was written through it.
	data, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	recs, err := Parse(bytes.NewReader(data))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// Cut a torn final append (crash mid-write) so that the next record
	// starts on its own line. Dropping it is safe: an apply record is
	// written before the host is touched, and effective/undone records are
	// only reports of something Undo may redo.
	if keep := int64(bytes.LastIndexByte(data, '\n') + 1); keep < int64(len(data)) {
		if err := f.Truncate(keep); err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: cutting a torn last record: %w", path, err)
		}
	}
	j := &Journal{dir: dir, f: f, lock: lock, handlers: h, now: time.Now}
	for _, r := range recs {
		j.seq = max(j.seq, r.Seq)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		syncDir(dir) // make the new file's name durable too
	}
	if ns, err := os.Readlink("/proc/self/ns/net"); err == nil {
		j.netns = ns
	}
	return j, nil
}

// syncDir makes a new file's name in dir durable, as far as the
// filesystem can. Best effort on purpose: the records themselves are
// fsynced on every append, and what a lost name could lose is a journal of
// sysfs and device settings, which a power loss resets anyway.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close() // opened read only
	}
}

// Dir returns the journal's directory.
func (j *Journal) Dir() string { return j.dir }

func (j *Journal) append(r Record) error {
	r.Time = j.now().UTC()
	r.PID = os.Getpid()
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("journal append: %w", err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("journal fsync: %w", err)
	}
	return nil
}

// Change describes one host change for Apply.
type Change struct {
	Kind   string
	Target string
	// Root is recorded with the entry (see Record.Root); empty if Target is
	// not a path.
	Root string
	// Device names the network device the change is made to, in this
	// process's network namespace ("" when it is not a device). The journal
	// records its identity (see Device) and Undo checks it first.
	Device string
	// Value is the value to apply, in the kind's own encoding.
	Value string
	// Read returns the current value in the same encoding as Value.
	Read func(ctx context.Context) (string, error)
	// Write applies a value. It must be what the kind's UndoFunc does with
	// Previous, so that undo is the same operation in reverse.
	Write func(ctx context.Context, value string) error
}

// Result is the outcome of one Apply.
type Result struct {
	Previous  string
	Effective string
	// Changed is false when the write failed and the value is unchanged.
	Changed bool
}

// Apply journals and makes one change: read current → append (fsync) →
// write → read back → append effective. If the write fails and reading back
// shows the previous value, the entry is closed as failed and the write's
// error is returned with Changed=false. If the write fails but the value
// moved anyway, the entry stays open so that undo puts it back.
func (j *Journal) Apply(ctx context.Context, c Change) (Result, error) {
	if _, ok := j.handlers[c.Kind]; !ok {
		return Result{}, fmt.Errorf("journal: no undo handler for kind %q: refusing a change that could not be undone", c.Kind)
	}
	prev, err := c.Read(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("read %s %s: %w", c.Kind, c.Target, err)
	}
	var dev *Device
	if c.Device != "" {
		d, err := identify(c.Device)
		if err != nil {
			return Result{}, fmt.Errorf("%s %s: %w", c.Kind, c.Target, err)
		}
		dev = &d
	}
	j.seq++
	seq := j.seq
	if err := j.append(Record{Seq: seq, Op: OpApply, Kind: c.Kind, Target: c.Target, Previous: prev, Applied: c.Value, NetNS: j.netns, Root: c.Root, Device: dev}); err != nil {
		return Result{}, err
	}
	werr := c.Write(ctx, c.Value)
	j.applied++
	pauseForTest(j.applied)
	eff, rerr := c.Read(ctx)
	if werr != nil {
		if rerr == nil && eff == prev {
			if err := j.append(Record{Seq: seq, Op: OpFailed, Kind: c.Kind, Target: c.Target, Error: werr.Error()}); err != nil {
				return Result{Previous: prev}, errors.Join(werr, err)
			}
			return Result{Previous: prev, Effective: eff}, werr
		}
		if err := j.append(Record{Seq: seq, Op: OpEffective, Kind: c.Kind, Target: c.Target, Effective: eff, Error: werr.Error()}); err != nil {
			werr = errors.Join(werr, err) // the apply record stands: Undo still puts prev back
		}
		return Result{Previous: prev, Effective: eff, Changed: true}, werr
	}
	if rerr != nil {
		return Result{Previous: prev, Changed: true}, fmt.Errorf("read back %s %s: %w", c.Kind, c.Target, rerr)
	}
	if err := j.append(Record{Seq: seq, Op: OpEffective, Kind: c.Kind, Target: c.Target, Effective: eff}); err != nil {
		return Result{Previous: prev, Effective: eff, Changed: true}, err
	}
	return Result{Previous: prev, Effective: eff, Changed: true}, nil
}

// EnvTestPause, when set to N, makes the Nth Apply of a process stop for a
// minute after it has changed the host and before it records the effective
// value, printing "rig: test pause" on stderr, so that tests can kill -9 a
// rig process at the worst moment. It is for tests only.
const EnvTestPause = "RIG_TEST_PAUSE_AFTER_APPLY"

func pauseForTest(n int) {
	if v := os.Getenv(EnvTestPause); v != "" && v == strconv.Itoa(n) {
		fmt.Fprintf(os.Stderr, "rig: test pause after apply %d (pid %d)\n", n, os.Getpid())
		time.Sleep(time.Minute)
	}
}

// Restored reports one undo.
type Restored struct {
	Entry    Entry
	Restored string // value read back after the undo
	Err      error
}

// Undo puts back every open change, newest first, and reports each one.
// It keeps going after a failure so that one stuck value does not leave the
// rest of the host changed; the failures are joined in the returned error
// and their entries stay open for a later `rig restore`. When nothing is
// left open the journal file is archived (renamed with a timestamp).
//
// Undo deliberately ignores ctx cancellation for the writes themselves: it
// runs on Ctrl-C and SIGTERM, and stopping half way would defeat it. ctx is
// passed on to the handlers for their own bounded waits.
func (j *Journal) Undo(ctx context.Context) ([]Restored, error) { return j.UndoAfter(ctx, 0) }

// Mark returns the sequence number of the last change applied through j:
// UndoAfter(Mark()) later takes back only what came after it. rig run
// journals a NIC's timestamping once per run and each arm's knobs after a
// mark, so an arm's undo leaves the run's timestamping in force.
func (j *Journal) Mark() int { return j.seq }

// UndoAfter is Undo for the open changes with a sequence number above mark.
// The journal is archived only when nothing at all is left open.
func (j *Journal) UndoAfter(ctx context.Context, mark int) ([]Restored, error) {
	if _, err := j.f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	recs, err := Parse(j.f)
	if err != nil {
		return nil, err
	}
	all, err := Entries(recs)
	if err != nil {
		return nil, err
	}
	var out []Restored
	var errs []error
	open := 0
	for _, e := range all {
		if e.Open && e.Seq <= mark {
			open++
		}
	}
	for _, e := range slices.Backward(all) {
		if !e.Open || e.Seq <= mark {
			continue
		}
		r := Restored{Entry: e}
		h, ok := j.handlers[e.Kind]
		switch {
		case !ok:
			r.Err = fmt.Errorf("no undo handler for kind %q (journal written by a newer rig?)", e.Kind)
		case e.Device != nil:
			// The old value goes only to the device it was taken from.
			if r.Err = e.Device.check(); r.Err == nil {
				r.Restored, r.Err = h(ctx, e)
			}
		default:
			r.Restored, r.Err = h(ctx, e)
		}
		if r.Err != nil {
			r.Err = fmt.Errorf("restore %s %s to %q: %w", e.Kind, e.Target, e.Previous, r.Err)
			errs = append(errs, r.Err)
			if aerr := j.append(Record{Seq: e.Seq, Op: OpUndoFailed, Kind: e.Kind, Target: e.Target, Error: r.Err.Error()}); aerr != nil {
				errs = append(errs, aerr)
			}
		} else if aerr := j.append(Record{Seq: e.Seq, Op: OpUndone, Kind: e.Kind, Target: e.Target, Effective: r.Restored}); aerr != nil {
			errs = append(errs, aerr)
		}
		out = append(out, r)
	}
	if len(errs) == 0 && open == 0 {
		if err := j.archive(); err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// archive renames the fully undone journal out of the way, keeping it for
// the user to read, and starts a fresh one.
func (j *Journal) archive() error {
	path := filepath.Join(j.dir, FileName)
	st, err := j.f.Stat()
	if err != nil {
		return err
	}
	if st.Size() == 0 {
		return nil
	}
	dst := filepath.Join(j.dir, "journal-"+j.now().UTC().Format("20060102T150405.000000000Z")+".done.jsonl")
	if err := os.Rename(path, dst); err != nil {
		return fmt.Errorf("archive journal: %w", err)
	}
	// Every record was fsynced as it was appended, and the file is renamed:
	// closing the old descriptor cannot lose one.
	_ = j.f.Close()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	j.f = f
	syncDir(j.dir)
	return nil
}

// Close releases the lock without undoing anything. Callers normally run
// Undo first; Close alone leaves open changes pending for `rig restore`.
func (j *Journal) Close() error {
	err := j.f.Close()
	return errors.Join(err, j.lock.Close())
}

// Restore opens the journal in dir for a separate `rig restore` process and
// undoes every open change. It returns (nil, nil) when nothing is pending.
func Restore(ctx context.Context, dir string, handlers Handlers) ([]Restored, error) {
	j, _, err := openPending(dir, handlers)
	if j == nil {
		return nil, err
	}
	defer j.Close() // every record is fsynced as it is appended
	return j.Undo(ctx)
}

// openPending locks the journal in dir and opens it if changes are
// pending (a nil Journal: none, or the error). Its Close drops the lock.
func openPending(dir string, handlers Handlers) (*Journal, []Entry, error) {
	lock, err := acquire(dir)
	if err != nil {
		return nil, nil, err
	}
	open, err := Pending(dir)
	var j *Journal
	if err == nil && len(open) > 0 {
		j, err = openLocked(dir, lock, handlers)
	}
	if j == nil {
		lock.Close() // the flock goes with the descriptor whatever Close says
	}
	return j, open, err
}

// Discard archives a pending journal without undoing it, for when its
// target no longer exists (the interface was removed, the host rebooted).
// It returns the entries that were dropped.
func Discard(dir string) ([]Entry, error) {
	j, open, err := openPending(dir, nil)
	if j == nil {
		return nil, err
	}
	defer j.Close() // every record is fsynced as it is appended
	for _, e := range open {
		if err := j.append(Record{Seq: e.Seq, Op: OpUndone, Kind: e.Kind, Target: e.Target, Error: "discarded by rig restore --discard"}); err != nil {
			return nil, err
		}
	}
	return open, j.archive()
}

// ReadWriter is the file access the "sysfs" kind needs; hostfs.FS has it.
type ReadWriter interface {
	ReadFile(path string) ([]byte, error)
	WriteFile(path, value string) error
}

// CleanRoot normalises a hostfs root for Record.Root ("" and "/" are the
// real host).
func CleanRoot(root string) string {
	if root == "" {
		return "/"
	}
	return filepath.Clean(root)
}

// KindSysfs is a change to one /proc or /sys file; Target is its host path.
const KindSysfs = "sysfs"

// SysfsChange returns the Change that writes value to a /proc or /sys file.
// The previous value is kept byte for byte (trailing newline included), so
// that restoring a fake tree gives back identical files; the kernel accepts
// the newline like echo(1) writes it.
func SysfsChange(fs ReadWriter, root, path, value string) Change {
	read := func(context.Context) (string, error) {
		b, err := fs.ReadFile(path)
		return string(b), err
	}
	return Change{
		Kind: KindSysfs, Target: path, Value: value, Root: CleanRoot(root),
		Read:  read,
		Write: func(_ context.Context, v string) error { return fs.WriteFile(path, v) },
	}
}

// SysfsUndo is the undo handler for KindSysfs: it writes Previous back. It
// refuses entries recorded below another root than this process's.
func SysfsUndo(fs ReadWriter, root string) UndoFunc {
	root = CleanRoot(root)
	return func(_ context.Context, e Entry) (string, error) {
		if e.Root != "" && e.Root != root {
			return "", fmt.Errorf("recorded below host root %s but this process uses %s: rerun with --host-root %s (or RIG_HOST_ROOT=%s)", e.Root, root, e.Root, e.Root)
		}
		if err := fs.WriteFile(e.Target, e.Previous); err != nil {
			return "", err
		}
		b, err := fs.ReadFile(e.Target)
		return strings.TrimSpace(string(b)), err
	}
}

// KindDir is a directory rig made where the kernel fills it (a tracefs
// instance); Target is its host path, the values "present" or "absent".
const KindDir = "dir"

// Dirs is the directory access the "dir" kind needs; hostfs.FS has it.
type Dirs interface {
	Mkdir(path string) error
	Rmdir(path string) error
	Exists(path string) bool
}

// DirChange returns the Change that makes the directory path.
func DirChange(fs Dirs, root, path string) Change {
	return Change{Kind: KindDir, Target: path, Value: "present", Root: CleanRoot(root),
		Read: func(context.Context) (string, error) { return dirState(fs, path), nil },
		Write: func(_ context.Context, v string) error {
			if v == "present" {
				return fs.Mkdir(path)
			}
			return fs.Rmdir(path)
		}}
}

// DirUndo is the undo handler for KindDir: it removes a directory that
// was absent before. It refuses entries recorded below another root.
func DirUndo(fs Dirs, root string) UndoFunc {
	root = CleanRoot(root)
	return func(_ context.Context, e Entry) (string, error) {
		if e.Root != "" && e.Root != root {
			return "", fmt.Errorf("recorded below host root %s but this process uses %s: rerun with --host-root %s", e.Root, root, e.Root)
		}
		if e.Previous == "absent" && fs.Exists(e.Target) {
			if err := fs.Rmdir(e.Target); err != nil {
				return "", err
			}
		}
		return dirState(fs, e.Target), nil
	}
}

func dirState(fs Dirs, path string) string {
	if fs.Exists(path) {
		return "present"
	}
	return "absent"
}
