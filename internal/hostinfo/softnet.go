package hostinfo

import (
	"bytes"
	"fmt"
)

// Softnet is one CPU's row of /proc/net/softnet_stat.
type Softnet struct {
	CPU         int
	Processed   uint64
	Dropped     uint64 // backlog full: packets lost before the stack
	TimeSqueeze uint64 // net_rx_action ran out of budget or time
}

// ParseSoftnetInto parses /proc/net/softnet_stat into dst without
// allocating and returns the number of rows. The CPU is the 13th column on
// kernels ≥ 5.10; on older ones it is the row number, which is only right
// when every possible CPU is online.
func ParseSoftnetInto(b []byte, dst []Softnet) (int, error) {
	n := 0
	for row := 0; len(b) > 0; row++ {
		var line []byte
		line, b, _ = bytes.Cut(b, []byte("\n"))
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if n == len(dst) {
			return n, errShortDst
		}
		s := Softnet{CPU: row}
		for col := 0; ; col++ {
			line = trimLeftSpace(line)
			if len(line) == 0 {
				if col < 3 {
					return n, errSoftnetShort
				}
				break
			}
			v, m, ok := parseHexPrefix(line)
			if !ok {
				return n, errSoftnetHex
			}
			line = line[m:]
			switch col {
			case 0:
				s.Processed = v
			case 1:
				s.Dropped = v
			case 2:
				s.TimeSqueeze = v
			case 12:
				s.CPU = int(v)
			}
		}
		dst[n] = s
		n++
	}
	return n, nil
}

var (
	errSoftnetShort = fmt.Errorf("row with fewer than 3 columns")
	errSoftnetHex   = fmt.Errorf("column is not a 32-bit hex number")
)

func parseHexPrefix(b []byte) (v uint64, n int, ok bool) {
	for n < len(b) && n < 16 {
		c := b[n]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			goto done
		}
		v = v<<4 | uint64(d)
		n++
	}
done:
	if n == 0 || (n < len(b) && b[n] != ' ' && b[n] != '\t') {
		return 0, 0, false
	}
	return v, n, true
}
