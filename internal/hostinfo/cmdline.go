package hostinfo

import (
	"fmt"
	"strings"

	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/rundir"
)

// ReadCmdline reads and parses /proc/cmdline.
func ReadCmdline(fs hostfs.FS) (*rundir.Cmdline, error) {
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
func ParseCmdline(s string) *rundir.Cmdline {
	c := &rundir.Cmdline{Raw: strings.TrimSpace(s)}
	for _, w := range splitArgs(s) {
		if w == "--" {
			break
		}
		k, v, has := strings.Cut(w, "=")
		c.Params = append(c.Params, rundir.Param{Key: k, Value: v, HasValue: has})
	}
	if v, ok := c.Get("isolcpus"); ok {
		c.Isolcpus = rundir.CPUSpec{Set: true, Raw: v}
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
		c.Isolcpus.CPUs = cmdlineCPUs(c, "isolcpus", rest)
	}
	for _, x := range []struct {
		key string
		dst *rundir.CPUSpec
	}{{"nohz_full", &c.NohzFull}, {"rcu_nocbs", &c.RcuNocbs}, {"irqaffinity", &c.IRQAffinity}} {
		v, ok := c.Get(x.key)
		if !ok {
			continue
		}
		*x.dst = rundir.CPUSpec{Set: true, Raw: v}
		if v == "all" || (x.key == "rcu_nocbs" && v == "") {
			x.dst.All = true
			continue
		}
		x.dst.CPUs = cmdlineCPUs(c, x.key, v)
	}
	return c
}

func cmdlineCPUs(c *rundir.Cmdline, key, v string) []int {
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
