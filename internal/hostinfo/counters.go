package hostinfo

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/rig-project/rig/internal/hostfs"
)

// CounterTable is a per-CPU counter file: /proc/interrupts or /proc/softirqs.
// Both have a header of CPU columns ("CPU0 CPU1 ...", offline CPUs are
// absent) and one row per source.
type CounterTable struct {
	// CPUs are the CPU numbers of the columns, in file order.
	CPUs []int
	Rows []CounterRow
}

// CounterRow is one source: a numbered IRQ ("24"), an arch interrupt
// ("LOC", "RES", "NMI", "IPI0", "Err") or a softirq type ("NET_RX").
type CounterRow struct {
	ID string
	// IRQ is the number of a device IRQ row (ID "24" → 24), -1 for every
	// other row.
	IRQ int
	// Counts has one entry per column of the table. Arch rows with fewer
	// numbers than columns (x86 ERR and MIS, arm64 Err have one) are
	// zero-padded; a device IRQ row with fewer is an error.
	Counts []uint64
	// Desc is the text after the counts with whitespace collapsed, e.g.
	// "PCI-MSIX-0000:00:04.0 1-edge virtio3-rx". Empty for softirqs.
	Desc string
	// Name is the handler names of a device IRQ, ", "-joined
	// ("virtio3-rx", "i8042, serio"), and Desc for the other rows.
	Name string
	// The fields of a device IRQ row as kernel/irq/proc.c show_interrupts
	// prints them: the irq_chip ("IO-APIC", "PCI-MSIX-0000:00:05.0",
	// "GICv3", "ITS-MSI"), the hardware IRQ in the chip's domain ("" when
	// it has none), the trigger ("Edge" or "Level", printed only where the
	// kernel has GENERIC_IRQ_SHOW_LEVEL: arm64, riscv, powerpc), the flow
	// handler's name (x86 glues it to the hwirq: "5-edge", "9-fasteoi"),
	// and the names the handlers registered, one per shared handler.
	Chip, HWIRQ, Trigger, Handler string
	Actions                       []string
}

// Row returns the row with the given ID, or nil.
func (t *CounterTable) Row(id string) *CounterRow {
	for i := range t.Rows {
		if t.Rows[i].ID == id {
			return &t.Rows[i]
		}
	}
	return nil
}

// Column returns the column index of cpu, or -1 when the CPU has no column
// (offline or absent).
func (t *CounterTable) Column(cpu int) int {
	for i, c := range t.CPUs {
		if c == cpu {
			return i
		}
	}
	return -1
}

// Count returns the counter of row id on cpu.
func (t *CounterTable) Count(id string, cpu int) (uint64, bool) {
	r, c := t.Row(id), t.Column(cpu)
	if r == nil || c < 0 {
		return 0, false
	}
	return r.Counts[c], true
}

// ReadInterrupts reads and parses /proc/interrupts.
func ReadInterrupts(fs hostfs.FS) (*CounterTable, error) {
	return readTable(fs, "/proc/interrupts")
}

func readTable(fs hostfs.FS, p string) (*CounterTable, error) {
	b, err := fs.ReadFile(p)
	if err != nil {
		return nil, err
	}
	t, err := ParseCounterTable(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return t, nil
}

// ParseCounterTable parses the text of /proc/interrupts or /proc/softirqs.
// It is the one parser of both files (the telemetry's CounterReader reads
// the counts of the rows it found, allocation-free). Device IRQ rows are
// split into chip, hwirq, trigger, flow handler and action names for both
// layouts the kernel prints: x86's "IO-APIC   2-edge      timer" and
// arm64's "GICv3  27 Level     arch_timer" (GENERIC_IRQ_SHOW_LEVEL adds
// the Edge/Level column). A row that cannot be read is an error naming its
// line: a skipped IRQ would be one nicctl forgets to move and put back.
func ParseCounterTable(b []byte) (*CounterTable, error) {
	header, rest, _ := bytes.Cut(b, []byte("\n"))
	cpus, err := parseHeader(header)
	if err != nil {
		return nil, err
	}
	t := &CounterTable{CPUs: cpus}
	for ln := 2; len(rest) > 0; ln++ {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		id, tail, ok := bytes.Cut(line, []byte(":"))
		id = bytes.TrimSpace(id)
		if !ok || len(id) == 0 || bytes.ContainsAny(id, " \t") {
			return nil, fmt.Errorf("line %d: %q has no \"ID:\" prefix", ln, clip(line))
		}
		row := CounterRow{ID: string(id), IRQ: -1, Counts: make([]uint64, len(cpus))}
		if n, err := strconv.Atoi(row.ID); err == nil {
			if n < 0 {
				return nil, fmt.Errorf("line %d: negative IRQ %d", ln, n)
			}
			row.IRQ = n
		}
		fields := strings.Fields(string(tail))
		n := 0
		for n < len(fields) && n < len(cpus) {
			v, err := strconv.ParseUint(fields[n], 10, 64)
			if err != nil {
				break
			}
			row.Counts[n] = v
			n++
		}
		if row.IRQ >= 0 && n != len(cpus) {
			return nil, fmt.Errorf("line %d: IRQ %d has %d counts for %d CPUs", ln, row.IRQ, n, len(cpus))
		}
		desc := fields[n:]
		row.Desc = strings.Join(desc, " ")
		row.Name = row.Desc
		if row.IRQ >= 0 {
			parseIRQDesc(&row, desc)
			row.Name = strings.Join(row.Actions, ", ")
		}
		t.Rows = append(t.Rows, row)
	}
	return t, nil
}

// parseIRQDesc splits what show_interrupts prints after the counts of a
// device IRQ: " %8s" chip, " %*lu" hwirq (blank without a domain),
// [" %-8s" Edge|Level], ["-%-8s" flow handler name], "  %s" first action,
// ", %s" each further one. x86 thus reads "IO-APIC   2-edge      timer";
// arm64 "GICv3  27 Level     arch_timer" and
// "ITS-PCI-MSIX-0000:00:05.0   1 Edge      ens5-Tx-Rx-0". Chips whose
// irq_print_chip prints spaces are not told apart from action names.
func parseIRQDesc(r *CounterRow, desc []string) {
	i := 0
	if i < len(desc) {
		r.Chip = desc[i]
		i++
	}
	if i < len(desc) {
		num, h, glued := strings.Cut(desc[i], "-")
		switch {
		case isDigits(num) && !glued:
			r.HWIRQ = num
			i++
		case isDigits(num) && isHandlerName(h):
			r.HWIRQ, r.Handler = num, h
			i++
		}
	}
	if i < len(desc) && (desc[i] == "Edge" || desc[i] == "Level") {
		r.Trigger = desc[i]
		i++
	}
	if i < len(desc) && r.Handler == "" && len(desc[i]) > 1 && desc[i][0] == '-' && isHandlerName(desc[i][1:]) {
		r.Handler = desc[i][1:]
		i++
	}
	if i < len(desc) {
		for _, a := range strings.Split(strings.Join(desc[i:], " "), ",") {
			if a = strings.TrimSpace(a); a != "" {
				r.Actions = append(r.Actions, a)
			}
		}
	}
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// isHandlerName matches a flow handler name: "edge", "fasteoi",
// "percpu_devid".
func isHandlerName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

func parseHeader(h []byte) ([]int, error) {
	f := bytes.Fields(h)
	if len(f) == 0 {
		return nil, errors.New("line 1: empty header, want CPU columns (CPU0 CPU1 ...)")
	}
	cpus := make([]int, 0, len(f))
	for _, c := range f {
		n, ok := bytes.CutPrefix(c, []byte("CPU"))
		v, err := strconv.Atoi(string(n))
		if !ok || err != nil || v < 0 {
			return nil, fmt.Errorf("line 1: header column %q is not CPU<n>", clip(c))
		}
		cpus = append(cpus, v)
	}
	return cpus, nil
}

func clip(b []byte) string {
	if len(b) > 60 {
		return string(b[:60]) + "..."
	}
	return string(b)
}

// ErrLayoutChanged reports that a counter file's CPU columns differ from the
// ones a CounterReader was built for (a CPU went on- or offline).
var ErrLayoutChanged = errors.New("CPU columns changed (CPU hotplug?); rebuild the reader")

// CounterReader re-parses a counter file allocation-free, extracting the
// counts of chosen CPUs for the rows present when it was built. It is the
// per-sample path of the telemetry sampler.
type CounterReader struct {
	ids    []string
	cpus   []int
	slot   []int // per column: index into cpus, or -1
	header []byte
}

// NewCounterReader builds a reader from one full read of the file. A CPU
// without a column yields an error: telemetry on an offline CPU is a mistake.
func NewCounterReader(b []byte, cpus []int) (*CounterReader, *CounterTable, error) {
	t, err := ParseCounterTable(b)
	if err != nil {
		return nil, nil, err
	}
	r := &CounterReader{cpus: append([]int(nil), cpus...), slot: make([]int, len(t.CPUs))}
	for i := range r.slot {
		r.slot[i] = -1
	}
	for k, c := range cpus {
		col := t.Column(c)
		if col < 0 {
			return nil, nil, fmt.Errorf("CPU %d has no column (offline?); columns are %v", c, t.CPUs)
		}
		r.slot[col] = k
	}
	for _, row := range t.Rows {
		r.ids = append(r.ids, row.ID)
	}
	h, _, _ := bytes.Cut(b, []byte("\n"))
	r.header = bytes.Clone(bytes.TrimSpace(h))
	return r, t, nil
}

// IDs are the row IDs in dst order.
func (r *CounterReader) IDs() []string { return r.ids }

// Len is the length Read needs for dst: rows × CPUs.
func (r *CounterReader) Len() int { return len(r.ids) * len(r.cpus) }

// Read parses b into dst, laid out [row][cpu] in IDs() and cpus order. A row
// that has disappeared keeps the value from prev (if prev is non-nil) so a
// delta stays 0; rows that appeared after NewCounterReader are ignored and
// counted in the return value. Read does not allocate.
func (r *CounterReader) Read(b []byte, dst, prev []uint64) (unknown int, err error) {
	if len(dst) < r.Len() {
		return 0, errShortDst
	}
	h, rest, _ := bytes.Cut(b, []byte("\n"))
	if !bytes.Equal(bytes.TrimSpace(h), r.header) {
		return 0, ErrLayoutChanged
	}
	nc := len(r.cpus)
	seen := 0
	next := 0
	for len(rest) > 0 {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		id, tail, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		id = bytes.TrimSpace(id)
		k := -1
		if next < len(r.ids) && string(id) == r.ids[next] {
			k = next
		} else {
			for i, s := range r.ids {
				if string(id) == s {
					k = i
					break
				}
			}
		}
		if k < 0 {
			unknown++
			continue
		}
		next = k + 1
		seen++
		row := dst[k*nc : (k+1)*nc]
		for i := range row {
			row[i] = 0
		}
		col := 0
		for col < len(r.slot) {
			tail = trimLeftSpace(tail)
			v, n, ok := parseUintPrefix(tail)
			if !ok {
				break
			}
			if s := r.slot[col]; s >= 0 {
				row[s] = v
			}
			tail = tail[n:]
			col++
		}
	}
	if seen < len(r.ids) && prev != nil {
		r.fillMissing(b, dst, prev)
	}
	return unknown, nil
}

// fillMissing copies prev into rows that Read did not find. It is the rare
// path (an IRQ was freed), so it re-scans instead of tracking per-row flags.
func (r *CounterReader) fillMissing(b []byte, dst, prev []uint64) {
	nc := len(r.cpus)
	for k, id := range r.ids {
		if !hasRow(b, id) {
			copy(dst[k*nc:(k+1)*nc], prev[k*nc:(k+1)*nc])
		}
	}
}

func hasRow(b []byte, id string) bool {
	_, rest, _ := bytes.Cut(b, []byte("\n"))
	for len(rest) > 0 {
		var line []byte
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		got, _, ok := bytes.Cut(line, []byte(":"))
		if ok && string(bytes.TrimSpace(got)) == id {
			return true
		}
	}
	return false
}

var errShortDst = errors.New("hostinfo: destination slice too short")

func trimLeftSpace(b []byte) []byte {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	return b[i:]
}

// parseUintPrefix parses the decimal number at the start of b, which must
// end at a space, tab or the end of b. It does not allocate.
func parseUintPrefix(b []byte) (v uint64, n int, ok bool) {
	for n < len(b) && b[n] >= '0' && b[n] <= '9' {
		d := uint64(b[n] - '0')
		if v > (^uint64(0)-d)/10 {
			return 0, 0, false
		}
		v = v*10 + d
		n++
	}
	if n == 0 || (n < len(b) && b[n] != ' ' && b[n] != '\t' && b[n] != '\n') {
		return 0, 0, false
	}
	return v, n, true
}

// ParseUint parses a file holding one decimal number (sysfs style, with
// surrounding whitespace). It does not allocate.
func ParseUint(b []byte) (uint64, bool) {
	b = bytes.TrimSpace(b)
	v, n, ok := parseUintPrefix(b)
	return v, ok && n == len(b)
}
