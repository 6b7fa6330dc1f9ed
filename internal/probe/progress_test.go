package probe

import "testing"

func TestProgressLine(t *testing.T) {
	line := FormatProgress(1200, 1198)
	if line != "progress 1200 1198" || !IsProgress(line) {
		t.Fatalf("FormatProgress = %q", line)
	}
	if s, r, ok := ParseProgress(line); !ok || s != 1200 || r != 1198 {
		t.Errorf("ParseProgress(%q) = %d %d %v", line, s, r, ok)
	}
	for _, bad := range []string{"rig send: ready", "progress", "progress 1", "progress 1 x", "progress -1 0", "progress 1 2 3", " progress 1 2"} {
		if _, _, ok := ParseProgress(bad); ok {
			t.Errorf("ParseProgress(%q) accepted", bad)
		}
	}
	if IsProgress("rig send: progress 1 2") {
		t.Error("a log line mentioning progress is a progress line")
	}
}

// FuzzParseProgress: what ParseProgress accepts, FormatProgress writes the
// same way.
func FuzzParseProgress(f *testing.F) {
	for _, s := range []string{"progress 0 0", "progress 10 9", "progress 1", "progress +1 2", "progress 01 2", "progress 1  2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		s, r, ok := ParseProgress(line)
		if !ok {
			return
		}
		if s < 0 || r < 0 {
			t.Fatalf("ParseProgress(%q) = %d %d", line, s, r)
		}
		if s2, r2, ok := ParseProgress(FormatProgress(s, r)); !ok || s2 != s || r2 != r {
			t.Fatalf("FormatProgress(%d, %d) reads back as %d %d %v", s, r, s2, r2, ok)
		}
	})
}
