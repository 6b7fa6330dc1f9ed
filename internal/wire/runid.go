package wire

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strconv"
)

// NewRunID returns a random non-zero 64-bit run id.
func NewRunID() uint64 {
	var b [8]byte
	for {
		_, _ = rand.Read(b[:])
		if id := binary.BigEndian.Uint64(b[:]); id != 0 {
			return id
		}
	}
}

// FormatRunID renders a run id as the 16 hex digits used in files.
func FormatRunID(id uint64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], id)
	return hex.EncodeToString(b[:])
}

// ParseRunID parses a run id written by FormatRunID.
func ParseRunID(s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 16, 64)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("run id %q: want 1 to 16 hex digits, not zero", s)
	}
	return id, nil
}
