package hostinfo

import (
	"fmt"
	"strings"

	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/hostfs"
)

// Param is one kernel parameter. HasValue distinguishes "quiet" from "x=".
type Param struct {
	Key      string `json:"key"`
	Value    string `json:"value,omitempty"`
	HasValue bool   `json:"has_value,omitempty"`
}

// CPUSpec is a CPU list from a boot parameter.
type CPUSpec struct {
	Set  bool   `json:"set"`           // the parameter is present
	Raw  string `json:"raw,omitempty"` // value as given
	All  bool   `json:"all,omitempty"` // "all", or rcu_nocbs without a list
	CPUs []int  `json:"cpus,omitempty"`
}

// Contains reports whether the spec covers cpu.
func (s CPUSpec) Contains(cpu int) bool {
	return s.All || cpulist.Contains(s.CPUs, cpu)
}

// Cmdline is /proc/cmdline with the isolation parameters decoded.
type Cmdline struct {
	Raw    string  `json:"raw"`
	Params []Param `json:"-"`
	// Isolcpus flags: "domain" (the default when none is given), "nohz",
	// "managed_irq".
	IsolcpusFlags []string `json:"isolcpus_flags,omitempty"`
	Isolcpus      CPUSpec  `json:"isolcpus"`
	NohzFull      CPUSpec  `json:"nohz_full"`
	RcuNocbs      CPUSpec  `json:"rcu_nocbs"`
	IRQAffinity   CPUSpec  `json:"irqaffinity"`
	// Problems lists values the kernel would reject or that rig could not
	// decode (e.g. "N" for the last CPU).
	Problems []string `json:"problems,omitempty"`
}

// Get returns the last value of key (the kernel uses the last occurrence
// for most parameters). Dashes and underscores match each other, as in the
// kernel's parameq.
func (c *Cmdline) Get(key string) (string, bool) {
	key = strings.ReplaceAll(key, "-", "_")
	v, ok := "", false
	for _, p := range c.Params {
		if strings.ReplaceAll(p.Key, "-", "_") == key {
			v, ok = p.Value, true
		}
	}
	return v, ok
}

// ReadCmdline reads and parses /proc/cmdline.
func ReadCmdline(fs hostfs.FS) (*Cmdline, error) {
	b, err := fs.ReadFile("/proc/cmdline")
	if err != nil {
		return nil, err
	}
	return ParseCmdline(string(b)), nil
}

// ParseCmdline splits a kernel command line the way the kernel's next_arg
// does (double quotes group, "--" ends the kernel's part) and decodes
// isolcpus=, nohz_full=, rcu_nocbs= and irqaffinity=. It never fails;
// undecodable values land in Problems.
func ParseCmdline(s string) *Cmdline {
	c := &Cmdline{Raw: strings.TrimSpace(s)}
	for _, w := range splitArgs(s) {
		if w == "--" {
			break
		}
		k, v, has := strings.Cut(w, "=")
		c.Params = append(c.Params, Param{Key: k, Value: v, HasValue: has})
	}
	if v, ok := c.Get("isolcpus"); ok {
		c.Isolcpus = CPUSpec{Set: true, Raw: v}
		rest := v
		for rest != "" && (rest[0] < '0' || rest[0] > '9') {
			f, r, _ := strings.Cut(rest, ",")
			switch f {
			case "nohz", "domain", "managed_irq":
				c.IsolcpusFlags = append(c.IsolcpusFlags, f)
			default:
				c.Problems = append(c.Problems, fmt.Sprintf("isolcpus: unknown flag %q (want nohz, domain, managed_irq)", f))
			}
			rest = r
		}
		if len(c.IsolcpusFlags) == 0 {
			c.IsolcpusFlags = []string{"domain"}
		}
		c.Isolcpus.CPUs = c.cpus("isolcpus", rest)
	}
	for _, x := range []struct {
		key string
		dst *CPUSpec
	}{{"nohz_full", &c.NohzFull}, {"rcu_nocbs", &c.RcuNocbs}, {"irqaffinity", &c.IRQAffinity}} {
		v, ok := c.Get(x.key)
		if !ok {
			continue
		}
		*x.dst = CPUSpec{Set: true, Raw: v}
		if v == "all" || (x.key == "rcu_nocbs" && v == "") {
			x.dst.All = true
			continue
		}
		x.dst.CPUs = c.cpus(x.key, v)
	}
	return c
}

func (c *Cmdline) cpus(key, v string) []int {
	l, err := cpulist.Parse(v)
	if err != nil {
		c.Problems = append(c.Problems, fmt.Sprintf("%s=%s: %v", key, v, err))
	}
	return l
}

// splitArgs splits on spaces outside double quotes and strips the quotes,
// like the kernel's next_arg.
func splitArgs(s string) []string {
	var out []string
	var b strings.Builder
	inQ, have := false, false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '"':
			inQ, have = !inQ, true
		case !inQ && (ch == ' ' || ch == '\t' || ch == '\n'):
			if have {
				out = append(out, b.String())
				b.Reset()
				have = false
			}
		default:
			b.WriteByte(ch)
			have = true
		}
	}
	if have {
		out = append(out, b.String())
	}
	return out
}
