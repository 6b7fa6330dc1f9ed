package scenario

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/rig-project/rig/internal/cpulist"
)

// The longest window a ranking may watch: it runs before every round.
const maxQuietestWindow = time.Minute

// responderCPU reads responder.cpu: a CPU number, `quietest`, or
// {quietest: LIST | allowed, window: D}.
func (c *checker) responderCPU(p string, v any) (*int, *Quietest) {
	hint := `write a CPU number (cpu: 3), quietest (cpu: quietest), or cpu: {quietest: "2-5", window: 1s}`
	switch x := v.(type) {
	case uint64, int64, int:
		n := toInt64(x)
		if n < 0 || n > cpulist.MaxCPU {
			c.val(p, fmt.Sprintf("CPU %d is out of range", n), fmt.Sprintf("CPU numbers are 0..%d", cpulist.MaxCPU))
			return nil, nil
		}
		cpu := int(n)
		return &cpu, nil
	case string:
		if x == "quietest" {
			return nil, &Quietest{}
		}
		h := hint
		if d := closest(x, []string{"quietest"}); d != "" {
			h = fmt.Sprintf("did you mean %q? %s", d, hint)
		}
		c.val(p, fmt.Sprintf("responder.cpu %q is not a CPU number or quietest", x), h)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		q := &Quietest{}
		ok := true
		for _, k := range keys {
			kp := p + "." + k
			switch k {
			case "quietest":
				if s, isStr := x[k].(string); isStr && s == "allowed" {
					continue
				}
				l, good := c.cpuList(kp, x[k])
				if !good {
					ok = false
					continue
				}
				q.CPUs = l
			case "window":
				d, good := c.duration(kp, x[k])
				if good && d > maxQuietestWindow {
					c.val(kp, fmt.Sprintf("window %v is longer than %v", d, maxQuietestWindow), "the ranking runs before every round; 1s (the default) to a few seconds is plenty")
					good = false
				}
				if !good {
					ok = false
					continue
				}
				q.Window = d
			default:
				h := "known fields in " + p + ": quietest, window"
				if d := closest(k, []string{"quietest", "window"}); d != "" {
					h = fmt.Sprintf("did you mean %q? %s", d, h)
				}
				c.key(kp, fmt.Sprintf("unknown field %q in %s", k, p), h)
				ok = false
			}
		}
		if _, has := x["quietest"]; !has && ok {
			c.val(p, "responder.cpu as a mapping needs quietest:", `e.g. cpu: {quietest: "2-5"} (candidates) or cpu: {quietest: allowed, window: 2s}`)
			ok = false
		}
		if ok {
			return nil, q
		}
	default:
		c.val(p, fmt.Sprintf("responder.cpu %v is not a CPU number or quietest", v), hint)
	}
	return nil, nil
}

func toInt64(v any) int64 {
	switch y := v.(type) {
	case uint64:
		if y > math.MaxInt32 {
			return math.MaxInt64
		}
		return int64(y)
	case int64:
		return y
	case int:
		return int64(y)
	}
	return -1
}

// String is how the dry run and the logs name the choice.
func (q Quietest) String() string {
	from := "every CPU rig may use there"
	if q.CPUs != nil {
		from = cpulist.Format(q.CPUs)
	}
	w := q.Window
	if w == 0 {
		w = time.Second
	}
	return fmt.Sprintf("the quietest of %s (ranked over %v on the host before each round)", from, w)
}

// candidatesOr returns the candidate CPUs to check facts on: the list, or
// the host's online CPUs when the choice is among every allowed one.
func (q Quietest) candidatesOr(online []int) []int {
	if q.CPUs != nil {
		return slices.Clone(q.CPUs)
	}
	return slices.Clone(online)
}
