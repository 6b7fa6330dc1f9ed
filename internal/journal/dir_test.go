package journal

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
)

// TestDirChange: a directory rig made is journaled as absent before, and
// the undo (as `rig restore` runs it) removes it.
func TestDirChange(t *testing.T) {
	root := t.TempDir()
	fs := hostfs.FS{Root: root}
	os.MkdirAll(filepath.Join(root, "sys/kernel/tracing/instances"), 0o755)
	const inst = "/sys/kernel/tracing/instances/rig-noise-1"
	j, err := Open(filepath.Join(t.TempDir(), "j"), Handlers{KindDir: DirUndo(fs, root)})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	r, err := j.Apply(context.Background(), DirChange(fs, root, inst))
	if err != nil || r.Previous != "absent" || r.Effective != "present" || !fs.Exists(inst) {
		t.Fatalf("apply: %+v, %v", r, err)
	}
	restored, err := j.Undo(context.Background())
	if err != nil || len(restored) != 1 || restored[0].Restored != "absent" || fs.Exists(inst) {
		t.Fatalf("undo: %+v, %v; still there: %v", restored, err, fs.Exists(inst))
	}
	if _, err := DirUndo(fs, "/elsewhere")(context.Background(), Entry{Kind: KindDir, Target: inst, Previous: "absent", Root: root}); err == nil {
		t.Error("an entry of another root was undone")
	}
}
