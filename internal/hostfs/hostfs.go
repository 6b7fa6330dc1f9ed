// Package hostfs is the one way rig reads and writes /proc and /sys.
//
// Every path is resolved below a root, "/" on a real host. Tests point the
// root at a fake tree built from real files, so the code that changes a host
// runs unmodified against fixtures. The root comes from the --host-root flag
// or the RIG_HOST_ROOT environment variable.
package hostfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// EnvRoot names the environment variable that sets the default root.
const EnvRoot = "RIG_HOST_ROOT"

// FS resolves absolute host paths (/proc/..., /sys/...) below Root.
type FS struct {
	Root string
	// Kernel, when set on a fake root, takes every WriteFile instead of
	// the plain write: a test's model of the kernel's store functions,
	// whose writes change other files too (powertest.Emulate).
	Kernel Writer
}

// Writer writes value to the host file p.
type Writer interface {
	WriteFile(p, value string) error
}

// DirWriter is a Kernel that also makes and removes directories whose
// contents the kernel provides (a tracefs instance).
type DirWriter interface {
	Mkdir(p string) error
	Rmdir(p string) error
}

// Default returns the FS for $RIG_HOST_ROOT, or "/" when it is unset.
func Default() FS {
	if r := os.Getenv(EnvRoot); r != "" {
		return FS{Root: r}
	}
	return FS{Root: "/"}
}

// IsReal reports whether the FS is the live host rather than a fake tree.
func (f FS) IsReal() bool { return f.Root == "" || f.Root == "/" }

// Path maps an absolute host path to its location below the root.
func (f FS) Path(p string) string {
	if f.IsReal() {
		return p
	}
	return filepath.Join(f.Root, p)
}

// ReadFile reads a host file. Errors wrap os.ErrNotExist when it is absent.
func (f FS) ReadFile(p string) ([]byte, error) { return os.ReadFile(f.Path(p)) }

// ReadString reads a host file and trims surrounding whitespace.
func (f FS) ReadString(p string) (string, error) {
	b, err := f.ReadFile(p)
	return strings.TrimSpace(string(b)), err
}

// ReadInt reads a host file holding one decimal integer.
func (f FS) ReadInt(p string) (int64, error) {
	s, err := f.ReadString(p)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not an integer", p, s)
	}
	return v, nil
}

// WriteFile writes a value to an existing host file the way echo(1) does:
// one write, no create, no truncate semantics beyond what sysfs gives.
// Errors from the kernel (EINVAL, EIO, EPERM) are returned wrapped with the
// path so the caller can report them per file.
func (f FS) WriteFile(p, value string) error {
	if f.Kernel != nil && !f.IsReal() {
		return f.Kernel.WriteFile(p, value)
	}
	fh, err := os.OpenFile(f.Path(p), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	_, werr := fh.Write([]byte(value))
	cerr := fh.Close()
	return errors.Join(werr, cerr)
}

// Mkdir makes a host directory the kernel fills (a tracefs instance).
func (f FS) Mkdir(p string) error {
	if k, ok := f.Kernel.(DirWriter); ok && !f.IsReal() {
		return k.Mkdir(p)
	}
	return os.Mkdir(f.Path(p), 0o755)
}

// Rmdir removes such a directory: the kernel empties it itself.
func (f FS) Rmdir(p string) error {
	if k, ok := f.Kernel.(DirWriter); ok && !f.IsReal() {
		return k.Rmdir(p)
	}
	return os.Remove(f.Path(p))
}

// Glob returns host paths (not root-prefixed) matching the pattern.
func (f FS) Glob(pattern string) ([]string, error) {
	m, err := filepath.Glob(f.Path(pattern))
	if err != nil || f.IsReal() {
		return m, err
	}
	for i := range m {
		rel, _ := filepath.Rel(f.Root, m[i])
		m[i] = "/" + filepath.ToSlash(rel)
	}
	return m, nil
}

// ReadDir lists a host directory.
func (f FS) ReadDir(p string) ([]fs.DirEntry, error) { return os.ReadDir(f.Path(p)) }

// Readlink reads a host symlink (e.g. /sys/class/net/IF/device).
func (f FS) Readlink(p string) (string, error) { return os.Readlink(f.Path(p)) }

// Exists reports whether a host path exists.
func (f FS) Exists(p string) bool {
	_, err := os.Stat(f.Path(p))
	return err == nil
}
