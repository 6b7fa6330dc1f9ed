package journal

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
)

func fakeFile(t *testing.T, root, path, content string) {
	t.Helper()
	p := filepath.Join(root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, root, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestApplyUndoReverseOrder(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	fs := hostfs.FS{Root: root}
	fakeFile(t, root, "/proc/irq/30/smp_affinity_list", "0-1\n")
	fakeFile(t, root, "/sys/x", "a\n")
	j, err := Open(dir, Handlers{KindSysfs: SysfsUndo(fs, root)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Two changes to one file: reverse order must end at the first previous value.
	for _, v := range []string{"1", "0"} {
		res, err := j.Apply(ctx, SysfsChange(fs, root, "/proc/irq/30/smp_affinity_list", v))
		if err != nil || !res.Changed || res.Effective != v {
			t.Fatalf("apply %s: %+v %v", v, res, err)
		}
	}
	if _, err := j.Apply(ctx, SysfsChange(fs, root, "/sys/x", "b")); err != nil {
		t.Fatal(err)
	}
	if err := CheckPending(dir); err == nil {
		t.Fatal("no pending journal while changes are applied")
	}
	rs, err := j.Undo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range rs {
		order = append(order, r.Entry.Target+"="+r.Restored)
	}
	want := "/sys/x=a /proc/irq/30/smp_affinity_list=1 /proc/irq/30/smp_affinity_list=0-1"
	if got := strings.Join(order, " "); got != want {
		t.Fatalf("undo order %q, want %q", got, want)
	}
	if got := read(t, root, "/proc/irq/30/smp_affinity_list"); got != "0-1\n" {
		t.Fatalf("restored %q", got)
	}
	if err := CheckPending(dir); err != nil {
		t.Fatalf("still pending after undo: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "journal-*.done.jsonl")); len(m) != 1 {
		t.Fatalf("archived journals: %v", m)
	}
	j.Close()
}

func TestPendingRefusesAndRestore(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	fs := hostfs.FS{Root: root}
	fakeFile(t, root, "/sys/v", "1\n")
	h := Handlers{KindSysfs: SysfsUndo(fs, root)}
	j, err := Open(dir, h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Apply(context.Background(), SysfsChange(fs, root, "/sys/v", "2")); err != nil {
		t.Fatal(err)
	}
	// Locked while held.
	if _, err := Open(dir, h); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
	j.Close() // simulated crash: the lock goes, the journal stays
	_, err = Open(dir, h)
	var pe *PendingError
	if !errors.As(err, &pe) || pe.PID != os.Getpid() || !strings.Contains(err.Error(), "rig restore") {
		t.Fatalf("open with pending journal: %v", err)
	}
	rs, err := Restore(context.Background(), dir, h)
	if err != nil || len(rs) != 1 || rs[0].Restored != "1" {
		t.Fatalf("restore: %+v %v", rs, err)
	}
	if got := read(t, root, "/sys/v"); got != "1\n" {
		t.Fatalf("restored %q", got)
	}
	rs, err = Restore(context.Background(), dir, h)
	if err != nil || rs != nil {
		t.Fatalf("second restore: %+v %v", rs, err)
	}
	if fds := openIn(t, dir); len(fds) > 0 {
		t.Errorf("restore left open: %v", fds)
	}
}

// openIn lists this process's descriptors open on files in dir: a
// journal closed by Restore or Discard leaves none, the fresh file its
// archive opened included.
func openIn(t *testing.T, dir string) []string {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	var open []string
	for _, e := range ents {
		if p, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(p, dir+"/") {
			open = append(open, p)
		}
	}
	return open
}

// failingFS refuses writes to some paths with an errno, like a managed IRQ.
type failingFS struct {
	hostfs.FS
	fail map[string]error
}

func (f failingFS) WriteFile(p, v string) error {
	if err := f.fail[p]; err != nil {
		return &os.PathError{Op: "write", Path: p, Err: err}
	}
	return f.FS.WriteFile(p, v)
}

func TestApplyRefusedClosesEntry(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	fakeFile(t, root, "/proc/irq/5/smp_affinity_list", "0\n")
	fs := failingFS{hostfs.FS{Root: root}, map[string]error{"/proc/irq/5/smp_affinity_list": syscall.EIO}}
	j, err := Open(dir, Handlers{KindSysfs: SysfsUndo(fs, root)})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	res, err := j.Apply(context.Background(), SysfsChange(fs, root, "/proc/irq/5/smp_affinity_list", "1"))
	if !errors.Is(err, syscall.EIO) || res.Changed {
		t.Fatalf("apply: %+v %v", res, err)
	}
	if err := CheckPending(dir); err != nil {
		t.Fatalf("a refused change left the journal pending: %v", err)
	}
}

func TestUndoFailureKeepsPending(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	fakeFile(t, root, "/sys/a", "1\n")
	fakeFile(t, root, "/sys/b", "1\n")
	fs := hostfs.FS{Root: root}
	ff := failingFS{fs, map[string]error{}}
	j, err := Open(dir, Handlers{KindSysfs: SysfsUndo(ff, root)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	j.Apply(ctx, SysfsChange(fs, root, "/sys/a", "2"))
	j.Apply(ctx, SysfsChange(fs, root, "/sys/b", "2"))
	ff.fail["/sys/b"] = syscall.EBUSY
	rs, err := j.Undo(ctx)
	if !errors.Is(err, syscall.EBUSY) || len(rs) != 2 {
		t.Fatalf("undo: %+v %v", rs, err)
	}
	// /sys/a was still restored after /sys/b failed.
	if got := read(t, root, "/sys/a"); got != "1\n" {
		t.Fatalf("/sys/a = %q", got)
	}
	open, err := Pending(dir)
	if err != nil || len(open) != 1 || open[0].Target != "/sys/b" || !strings.Contains(open[0].UndoError, "busy") {
		t.Fatalf("pending after partial undo: %+v %v", open, err)
	}
	j.Close()
	dropped, err := Discard(dir)
	if err != nil || len(dropped) != 1 {
		t.Fatalf("discard: %v %v", dropped, err)
	}
	if fds := openIn(t, dir); len(fds) > 0 {
		t.Errorf("discard left open: %v", fds)
	}
	if err := CheckPending(dir); err != nil {
		t.Fatal(err)
	}
}

func TestSysfsUndoRefusesOtherRoot(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	fakeFile(t, root, "/sys/v", "1\n")
	fs := hostfs.FS{Root: root}
	j, err := Open(dir, Handlers{KindSysfs: SysfsUndo(fs, root)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Apply(context.Background(), SysfsChange(fs, root, "/sys/v", "2")); err != nil {
		t.Fatal(err)
	}
	j.Close()
	// A restore on the real host must not write the fake tree's value to /sys/v.
	_, err = Restore(context.Background(), dir, Handlers{KindSysfs: SysfsUndo(hostfs.FS{Root: "/"}, "/")})
	if err == nil || !strings.Contains(err.Error(), "RIG_HOST_ROOT="+root) {
		t.Fatalf("restore under another root: %v", err)
	}
	if _, err := Restore(context.Background(), dir, Handlers{KindSysfs: SysfsUndo(fs, root)}); err != nil {
		t.Fatal(err)
	}
}

func TestApplyWithoutHandlerRefused(t *testing.T) {
	j, err := Open(t.TempDir(), Handlers{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	_, err = j.Apply(context.Background(), Change{Kind: "nope", Read: func(context.Context) (string, error) { return "", nil }})
	if err == nil || !strings.Contains(err.Error(), "no undo handler") {
		t.Fatalf("got %v", err)
	}
}

func TestParseTornTail(t *testing.T) {
	in := `{"seq":1,"op":"apply","kind":"sysfs","target":"/x","previous":"1","applied":"2","time":"2026-01-01T00:00:00Z","pid":7}` + "\n" +
		`{"seq":2,"op":"apply","kind":"sy`
	recs, err := Parse(strings.NewReader(in))
	if err != nil || len(recs) != 1 {
		t.Fatalf("%v %v", recs, err)
	}
	_, err = Parse(strings.NewReader("garbage\n" + in))
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Line != 1 {
		t.Fatalf("got %v", err)
	}
	if _, err := Entries([]Record{{Seq: 3, Op: OpUndone}}); err == nil {
		t.Fatal("undone record without apply accepted")
	}
}

func TestTornTailCutBeforeAppend(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	fakeFile(t, root, "/sys/v", "1\n")
	fs := hostfs.FS{Root: root}
	h := Handlers{KindSysfs: SysfsUndo(fs, root)}
	j, err := Open(dir, h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := j.Apply(context.Background(), SysfsChange(fs, root, "/sys/v", "2")); err != nil {
		t.Fatal(err)
	}
	j.Close()
	// A crash in the middle of the next append.
	fh, _ := os.OpenFile(filepath.Join(dir, FileName), os.O_WRONLY|os.O_APPEND, 0)
	fh.WriteString(`{"seq":2,"op":"apply","ki`)
	fh.Close()
	rs, err := Restore(context.Background(), dir, h)
	if err != nil || len(rs) != 1 || read(t, root, "/sys/v") != "1\n" {
		t.Fatalf("restore after a torn append: %+v %v", rs, err)
	}
	// The records appended after the torn one must still parse.
	m, _ := filepath.Glob(filepath.Join(dir, "journal-*.done.jsonl"))
	if len(m) != 1 {
		t.Fatalf("archives %v", m)
	}
	b, _ := os.ReadFile(m[0])
	recs, err := Parse(strings.NewReader(string(b)))
	if err != nil || len(recs) != 3 || recs[2].Op != OpUndone {
		t.Fatalf("archived journal: %v %+v\n%s", err, recs, b)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(`{"seq":1,"op":"apply","kind":"sysfs","target":"/x","previous":"1","applied":"2","time":"2026-01-01T00:00:00Z","pid":7}` + "\n" +
		`{"seq":1,"op":"undone","kind":"sysfs","target":"/x","time":"2026-01-01T00:00:01Z","pid":7}` + "\n")
	f.Add(`{"seq":1,"op":"effective"}` + "\n{")
	f.Add("\n\n{}\n")
	f.Fuzz(func(t *testing.T, s string) {
		recs, err := Parse(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, r := range recs {
			if r.Seq < 1 || r.Op == "" {
				t.Fatalf("invalid record accepted: %+v", r)
			}
		}
		es, err := Entries(recs)
		if err != nil {
			return
		}
		for _, e := range es {
			if e.Kind == "" {
				t.Fatalf("entry without kind: %+v", e)
			}
		}
	})
}

// TestUndoAfterMark: what came before a mark (a run's NIC timestamping)
// survives an UndoAfter (an arm's undo); the journal stays pending until
// it too is undone, and only then is archived.
func TestUndoAfterMark(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	fs := hostfs.FS{Root: root}
	fakeFile(t, root, "/sys/run", "r0\n")
	fakeFile(t, root, "/sys/arm", "a0\n")
	j, err := Open(dir, Handlers{KindSysfs: SysfsUndo(fs, root)})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ctx := context.Background()
	if _, err := j.Apply(ctx, SysfsChange(fs, root, "/sys/run", "r1")); err != nil {
		t.Fatal(err)
	}
	mark := j.Mark()
	for round := 0; round < 2; round++ {
		if _, err := j.Apply(ctx, SysfsChange(fs, root, "/sys/arm", "a1")); err != nil {
			t.Fatal(err)
		}
		rs, err := j.UndoAfter(ctx, mark)
		if err != nil || len(rs) != 1 || rs[0].Entry.Target != "/sys/arm" {
			t.Fatalf("round %d: %+v %v", round, rs, err)
		}
		if strings.TrimSpace(read(t, root, "/sys/arm")) != "a0" || strings.TrimSpace(read(t, root, "/sys/run")) != "r1" {
			t.Fatalf("round %d: arm %q run %q", round, read(t, root, "/sys/arm"), read(t, root, "/sys/run"))
		}
		if err := CheckPending(dir); err == nil {
			t.Fatal("the run's change is open: the journal must be pending")
		}
	}
	if rs, err := j.Undo(ctx); err != nil || len(rs) != 1 || strings.TrimSpace(read(t, root, "/sys/run")) != "r0" {
		t.Fatalf("final undo: %+v %v", rs, err)
	}
	if err := CheckPending(dir); err != nil {
		t.Fatal(err)
	}
}

// A lanes directory that cannot be read is an error, never "no lanes":
// a lane's pending changes must not be passed over by Open or restore.
func TestLanesUnreadable(t *testing.T) {
	dir := t.TempDir()
	if l, err := Lanes(dir); err != nil || len(l) != 1 || l[0] != dir {
		t.Fatalf("no lanes: %v %v", l, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lanes"), nil, 0o600); err != nil { // not a directory
		t.Fatal(err)
	}
	if _, err := Lanes(dir); err == nil || !strings.Contains(err.Error(), "journal lanes") {
		t.Fatalf("lanes that is not a directory: %v", err)
	}
	if err := CheckPending(dir); err == nil {
		t.Fatal("CheckPending passed over an unreadable lanes directory")
	}
}
