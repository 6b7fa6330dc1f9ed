package rundir

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestCreateExclusive: runs started in the same second each get their own
// directory, also when they race.
func TestCreateExclusive(t *testing.T) {
	results := filepath.Join(t.TempDir(), "results")
	start := time.Date(2026, 12, 2, 10, 15, 0, 0, time.UTC)
	first, err := Create(results, "demo", start)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(results, "demo-20261202T101500Z"); first != want {
		t.Errorf("first run: %s, want %s", first, want)
	}
	// A file the first run wrote must not be seen by the second.
	os.WriteFile(filepath.Join(first, ManifestFile), []byte("{}"), 0o644)
	const n = 8
	dirs := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := Create(results, "demo", start)
			if err != nil {
				t.Error(err)
			}
			dirs[i] = d
		}()
	}
	wg.Wait()
	seen := map[string]bool{first: true}
	for _, d := range dirs {
		if seen[d] {
			t.Fatalf("two runs got %s", d)
		}
		seen[d] = true
		if ents, _ := os.ReadDir(d); len(ents) != 0 {
			t.Errorf("%s is not new: %v", d, ents)
		}
	}
	if _, err := os.Stat(filepath.Join(results, "demo-20261202T101500Z-2")); err != nil {
		t.Errorf("collision suffix: %v", err)
	}
}

// TestWriteAtomic: a failed write leaves the old file whole and no
// temporary file behind; a good one replaces it, readable by all.
func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "manifest.json")
	if err := WriteFileAtomic(p, []byte("old")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk full")
	err := WriteAtomic(p, func(w io.Writer) error {
		if _, err := w.Write([]byte("half")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want %v", err, boom)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Fatalf("after a failed write: %q, want the old file", b)
	}
	if err := WriteFileAtomic(p, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Fatalf("after a good write: %q", b)
	}
	if st, err := os.Stat(p); err != nil {
		t.Fatal(err)
	} else if st.Mode().Perm() != 0o644 {
		t.Fatalf("written file: mode %v, want 0644 (readable by all, as os.WriteFile makes it)", st.Mode())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("temporary files left: %v", ents)
	}
}

// TestReadManifestKnobCasings: a manifest whose knobs carry the Go field
// names older rigs wrote ("NIC", "AdaptiveRx") is read as one with today's
// snake_case names; the knobs come back as written.
func TestReadManifestKnobCasings(t *testing.T) {
	for _, knobs := range []string{
		`{"Responder":{"CPU":1},"NIC":{"Coalesce":{"AdaptiveRx":false}}}`,
		`{"responder":{"cpu":1},"nic":{"coalesce":{"adaptive_rx":false}}}`,
	} {
		dir := t.TempDir()
		m := `{"format":"rig-run","format_version":1,"scenario":"s","baseline":"a","arms":[{"name":"a","index":0,"knobs":` + knobs +
			`}],"scenario_effective":{"arms":[{"name":"a","knobs":` + knobs + `}]}}`
		if err := os.WriteFile(filepath.Join(dir, ManifestFile), []byte(m), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := ReadManifest(dir)
		if err != nil {
			t.Fatalf("%s: %v", knobs, err)
		}
		b, _ := json.Marshal(got.Arms[0].Knobs)
		var want any
		_ = json.Unmarshal([]byte(knobs), &want)
		w, _ := json.Marshal(want)
		if len(got.Arms) != 1 || string(b) != string(w) {
			t.Errorf("knobs read back as %s, want %s", b, w)
		}
	}
}
