package native

import (
	"strings"
	"testing"
)

// TestLibraryIn: a library is found by its name, with or without a
// version, in /proc/PID/maps and in ldconfig -p; a longer name or a path
// that only contains the name is not it.
func TestLibraryIn(t *testing.T) {
	maps := `7f1c2a000000-7f1c2a028000 r--p 00000000 08:01 1311 /usr/lib/x86_64-linux-gnu/libc.so.6
7f1c2b000000-7f1c2b010000 r-xp 00001000 08:01 2044 /opt/onload/lib64/libonload.so.8.1 (deleted)
7f1c2c000000-7f1c2c001000 rw-p 00000000 00:00 0 
7ffd1000-7ffd2000 r--p 00000000 00:00 0                          [vvar]
`
	ldconfig := `1234 libs found in cache ` + "`/etc/ld.so.cache'" + `
	libvmaext.so (libc6,x86-64) => /usr/lib64/libvmaext.so
	libvma.so.9 (libc6,x86-64) => /usr/lib64/libvma.so.9
`
	for _, c := range []struct{ in, name, want string }{
		{maps, "libonload.so", "/opt/onload/lib64/libonload.so.8.1"},
		{maps, "libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6"},
		{maps, "libexasock.so", ""},
		{maps, "libc.so", "/usr/lib/x86_64-linux-gnu/libc.so.6"}, // versioned
		{ldconfig, "libvma.so", "/usr/lib64/libvma.so.9"},
		{ldconfig, "libxlio.so", ""},
		{"/lib/libvma.sox\n", "libvma.so", ""},
	} {
		got, ok := LibraryIn(strings.NewReader(c.in), c.name)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("%s: %q %v, want %q", c.name, got, ok, c.want)
		}
	}
}

// FuzzLibraryIn: what is found is a path whose base name is the library's.
func FuzzLibraryIn(f *testing.F) {
	f.Add("7f-7f r-xp 0 08:01 1 /opt/lib/libonload.so.8 (deleted)\n", "libonload.so")
	f.Add("\tlibvma.so (libc6) => /usr/lib/libvma.so\n", "libvma.so")
	f.Fuzz(func(t *testing.T, in, name string) {
		p, ok := LibraryIn(strings.NewReader(in), name)
		if ok != (p != "") || ok && !strings.Contains(p, name) || ok && !strings.HasPrefix(p, "/") {
			t.Fatalf("%q in %q: %q %v", name, in, p, ok)
		}
	})
}
