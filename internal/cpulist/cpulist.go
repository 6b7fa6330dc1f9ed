// Package cpulist parses and formats Linux CPU lists ("0-3,8,10-11"), the
// format of isolcpus=, smp_affinity_list, thread_siblings_list and taskset.
package cpulist

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxCPU bounds parsed CPU numbers so that a typo cannot make a huge list.
const MaxCPU = 8191

// Parse parses a CPU list such as "0-3,8,10-11". Whitespace around the list
// and an empty list are accepted. The result is sorted and de-duplicated.
func Parse(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("cpu list %q: empty element (want e.g. 0-3,8)", s)
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := parseCPU(lo)
		if err != nil {
			return nil, fmt.Errorf("cpu list %q: %v", s, err)
		}
		b := a
		if isRange {
			// Linux also allows "0-7:2" (stride) in some places; accept it.
			hiPart, strideStr, hasStride := strings.Cut(hi, ":")
			if b, err = parseCPU(hiPart); err != nil {
				return nil, fmt.Errorf("cpu list %q: %v", s, err)
			}
			if b < a {
				return nil, fmt.Errorf("cpu list %q: range %d-%d goes backwards", s, a, b)
			}
			stride := 1
			if hasStride {
				if stride, err = strconv.Atoi(strideStr); err != nil || stride < 1 {
					return nil, fmt.Errorf("cpu list %q: bad stride %q", s, strideStr)
				}
			}
			for c := a; c <= b; c += stride {
				out = append(out, c)
			}
			continue
		}
		out = append(out, a)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func parseCPU(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a CPU number", s)
	}
	if n > MaxCPU {
		return 0, fmt.Errorf("CPU %d is above the limit %d", n, MaxCPU)
	}
	return n, nil
}

// Format returns the canonical list form of cpus ("0-3,8").
func Format(cpus []int) string {
	c := slices.Clone(cpus)
	slices.Sort(c)
	c = slices.Compact(c)
	var b strings.Builder
	for i := 0; i < len(c); {
		j := i
		for j+1 < len(c) && c[j+1] == c[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(c[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(c[j]))
		}
		i = j + 1
	}
	return b.String()
}

// ParseMask parses a hex CPU mask as in /proc/irq/N/smp_affinity
// ("00000000,0000000f"; comma-separated 32-bit words, most significant first).
func ParseMask(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	words := strings.Split(s, ",")
	var out []int
	for i := range words {
		w := words[len(words)-1-i]
		v, err := strconv.ParseUint(w, 16, 32)
		if err != nil {
			return nil, fmt.Errorf("cpu mask %q: %q is not a 32-bit hex word", s, w)
		}
		for bit := 0; bit < 32; bit++ {
			if v&(1<<bit) != 0 {
				out = append(out, i*32+bit)
			}
		}
	}
	return out, nil
}

// Union returns the CPUs in a or b, sorted, each once; nil when both are
// empty.
func Union(a, b []int) []int {
	if len(a)+len(b) == 0 {
		return nil
	}
	u := append(slices.Clone(a), b...)
	slices.Sort(u)
	return slices.Compact(u)
}

// Intersect returns the CPUs of a that are in b, in a's order.
func Intersect(a, b []int) []int {
	var out []int
	for _, c := range a {
		if slices.Contains(b, c) {
			out = append(out, c)
		}
	}
	return out
}

// Contains reports whether cpu is in cpus.
func Contains(cpus []int, cpu int) bool { return slices.Contains(cpus, cpu) }
