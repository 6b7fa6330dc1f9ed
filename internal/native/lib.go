package native

import (
	"bufio"
	"io"
	"path/filepath"
	"strings"
)

// LibraryIn finds library name (libonload.so) in a listing whose lines end
// in a path: /proc/PID/maps, or `ldconfig -p` ("… => /path"). A file
// matches when its base name is name or name with a version (name.1.2).
// It returns the first path that matches.
func LibraryIn(r io.Reader, name string) (string, bool) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	for sc.Scan() {
		i := strings.Index(sc.Text(), " /")
		if i < 0 {
			continue
		}
		path := strings.TrimSuffix(strings.TrimSpace(sc.Text()[i:]), " (deleted)")
		if b := filepath.Base(path); b == name || strings.HasPrefix(b, name+".") {
			return path, true
		}
	}
	return "", false
}
