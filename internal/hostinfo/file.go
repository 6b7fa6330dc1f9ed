package hostinfo

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rig-project/rig/internal/hostfs"
)

// File is a /proc or /sys file kept open and re-read from offset 0 with
// pread(2) (os.File.ReadAt). seq_file and sysfs regenerate their text on a
// read at offset 0, so this gives a fresh value without open/close and
// without allocating.
type File struct {
	f    *os.File
	Path string // host path, for error messages
}

// ErrShortBuffer reports that a file did not fit the caller's buffer.
var ErrShortBuffer = errors.New("file larger than the preallocated buffer")

// Open opens a host file for repeated ReadAll calls.
func Open(fs hostfs.FS, p string) (*File, error) {
	f, err := os.Open(fs.Path(p))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", p, errno(err))
	}
	return &File{f: f, Path: p}, nil
}

// ReadAll reads the whole file into buf and returns the filled part. When
// the file is larger than buf it returns ErrShortBuffer; the caller grows the
// buffer (an allocation outside the steady state) and retries.
func (f *File) ReadAll(buf []byte) ([]byte, error) {
	n, err := f.f.ReadAt(buf, 0)
	switch {
	case err == io.EOF:
		return buf[:n], nil
	case err != nil:
		return buf[:n], errno(err)
	case n == len(buf):
		return buf[:n], ErrShortBuffer
	}
	return buf[:n], nil
}

// ReadGrow is ReadAll that doubles *buf until the file fits.
func (f *File) ReadGrow(buf *[]byte) ([]byte, error) {
	for {
		b, err := f.ReadAll(*buf)
		if err != ErrShortBuffer {
			return b, err
		}
		*buf = make([]byte, 2*len(*buf)+4096)
	}
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// errno is the system error inside os's *PathError: callers name the
// file themselves.
func errno(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
