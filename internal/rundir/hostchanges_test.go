package rundir

import (
	"strings"
	"testing"
)

// FuzzHostChanges: a file the parser accepts is rebuilt line for line from
// what it returned, every line with its host; anything else is an error.
func FuzzHostChanges(f *testing.F) {
	f.Add([]byte("[rsp1] IRQ 27 (eth1-rx-0): CPU 2 → CPUs 0-1\n[rsp1] held to the end of the arm\n"))
	f.Add([]byte("[rsp1] CPU 3 offline\n[node rsp1] irqbalance held\n"))
	f.Add([]byte("rsp1 no host\n"))
	f.Add([]byte("[] empty host\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		cs, err := ParseHostChanges(b)
		if err != nil {
			return
		}
		var lines []string
		for _, c := range cs {
			if c.Host == "" || strings.ContainsAny(c.Host+c.Line, "\n") {
				t.Fatalf("%q: change %+v", b, c)
			}
			lines = append(lines, "["+c.Host+"] "+c.Line)
		}
		if got := strings.Join(lines, "\n"); got != strings.TrimSuffix(string(b), "\n") {
			t.Fatalf("%q parsed to %+v, rebuilt as %q", b, cs, got)
		}
	})
}

func TestParseHostChanges(t *testing.T) {
	cs, err := ParseHostChanges([]byte("[rsp1] CPU 3 offline\n[node] a] b\n"))
	if err != nil || len(cs) != 2 || cs[0] != (HostChange{"rsp1", "CPU 3 offline"}) || cs[1] != (HostChange{"node", "a] b"}) {
		t.Errorf("%+v, %v", cs, err)
	}
	for _, bad := range []string{"", "\n", "no host\n", "[rsp1]no space\n", "[] x\n", "[rsp1] ok\n\n", "[r] \xff\n"} {
		if _, err := ParseHostChanges([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
