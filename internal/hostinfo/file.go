package hostinfo

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/rig-project/rig/internal/hostfs"
)

// File is a /proc or /sys file kept open and re-read from offset 0 with
// pread(2). seq_file and sysfs regenerate their text on a read at offset 0,
// so this gives a fresh value without open/close and without allocating.
type File struct {
	fd   int
	Path string // host path, for error messages
}

// ErrShortBuffer reports that a file did not fit the caller's buffer.
var ErrShortBuffer = errors.New("file larger than the preallocated buffer")

// Open opens a host file for repeated ReadAll calls.
func Open(fs hostfs.FS, p string) (*File, error) {
	fd, err := unix.Open(fs.Path(p), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", p, err)
	}
	return &File{fd: fd, Path: p}, nil
}

// ReadAll reads the whole file into buf and returns the filled part. When
// the file is larger than buf it returns ErrShortBuffer; the caller grows the
// buffer (an allocation outside the steady state) and retries.
func (f *File) ReadAll(buf []byte) ([]byte, error) {
	n := 0
	for {
		if n == len(buf) {
			return buf[:n], ErrShortBuffer
		}
		m, err := unix.Pread(f.fd, buf[n:], int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return buf[:n], err
		}
		if m == 0 {
			return buf[:n], nil
		}
		n += m
	}
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
func (f *File) Close() error { return unix.Close(f.fd) }
