package nicctl

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// InterruptLine is one row of /proc/interrupts.
type InterruptLine struct {
	// IRQ is the Linux IRQ number, or -1 for the architecture rows
	// (NMI, LOC, RES, ...) whose label is in Label.
	IRQ   int
	Label string
	// Counts holds one count per CPU column (fewer on rows like ERR/MIS).
	Counts []uint64
	// Chip is the irq_chip name ("IR-PCI-MSI", "PCI-MSIX-0000:00:03.0"),
	// HWIRQ the hardware IRQ and trigger ("1-edge").
	Chip, HWIRQ string
	// Actions are the names the handlers registered, e.g. "eth0-TxRx-0";
	// shared IRQs have several.
	Actions []string
}

// Interrupts is a parsed /proc/interrupts.
type Interrupts struct {
	CPUs  []int // CPU numbers of the count columns, from the header
	Lines []InterruptLine
}

// ParseInterrupts parses the contents of /proc/interrupts. Rows it cannot
// read are an error naming the line: a silently skipped IRQ would be an
// IRQ nicctl forgets to move and to put back.
func ParseInterrupts(b []byte) (*Interrupts, error) {
	lines := bytes.Split(b, []byte("\n"))
	if len(lines) == 0 || len(bytes.TrimSpace(lines[0])) == 0 {
		return nil, fmt.Errorf("/proc/interrupts: no CPU header")
	}
	out := &Interrupts{}
	for _, f := range strings.Fields(string(lines[0])) {
		n, ok := strings.CutPrefix(f, "CPU")
		c, err := strconv.Atoi(n)
		if !ok || err != nil || c < 0 {
			return nil, fmt.Errorf("/proc/interrupts header: %q is not a CPU column", f)
		}
		out.CPUs = append(out.CPUs, c)
	}
	ncpu := len(out.CPUs)
	for i, raw := range lines[1:] {
		s := string(raw)
		if strings.TrimSpace(s) == "" {
			continue
		}
		label, rest, ok := strings.Cut(s, ":")
		label = strings.TrimSpace(label)
		if !ok || label == "" || strings.ContainsAny(label, " \t") {
			return nil, fmt.Errorf("/proc/interrupts line %d: no \"IRQ:\" prefix in %q", i+2, s)
		}
		l := InterruptLine{IRQ: -1, Label: label}
		if n, err := strconv.Atoi(label); err == nil {
			if n < 0 {
				return nil, fmt.Errorf("/proc/interrupts line %d: negative IRQ %d", i+2, n)
			}
			l.IRQ = n
		}
		fields := strings.Fields(rest)
		k := 0
		for k < len(fields) && k < ncpu {
			v, err := strconv.ParseUint(fields[k], 10, 64)
			if err != nil {
				break
			}
			l.Counts = append(l.Counts, v)
			k++
		}
		if l.IRQ >= 0 {
			if k != ncpu {
				return nil, fmt.Errorf("/proc/interrupts line %d: IRQ %d has %d counts for %d CPUs", i+2, l.IRQ, k, ncpu)
			}
			// Numbered rows: chip, hwirq-trigger, then the action names,
			// which may contain spaces only as the ", " separator.
			tail := fields[k:]
			if len(tail) > 0 {
				l.Chip = tail[0]
				tail = tail[1:]
			}
			if len(tail) > 0 {
				l.HWIRQ = tail[0]
				tail = tail[1:]
			}
			if len(tail) > 0 {
				for _, a := range strings.Split(strings.Join(tail, " "), ",") {
					if a = strings.TrimSpace(a); a != "" {
						l.Actions = append(l.Actions, a)
					}
				}
			}
		}
		out.Lines = append(out.Lines, l)
	}
	return out, nil
}

// ByIRQ returns the row of one numbered IRQ.
func (in *Interrupts) ByIRQ(n int) (InterruptLine, bool) {
	for _, l := range in.Lines {
		if l.IRQ == n {
			return l, true
		}
	}
	return InterruptLine{}, false
}
