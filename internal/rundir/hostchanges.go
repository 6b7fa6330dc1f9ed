package rundir

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// HostChange is one line of a round's host-changes.txt: what the agent
// of responder host Host reported changing or putting back.
type HostChange struct {
	Host string
	Line string
}

// ParseHostChanges reads host-changes.txt, one "[host] line" a line. A
// line without its host, an empty file or bytes that are not UTF-8 are
// damage: the runner writes the file only when a host reported a change.
func ParseHostChanges(b []byte) ([]HostChange, error) {
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("not UTF-8 text")
	}
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil, fmt.Errorf("empty")
	}
	var out []HostChange
	for i, l := range strings.Split(s, "\n") {
		host, line, ok := strings.Cut(l, "] ")
		if !ok || len(host) < 2 || host[0] != '[' {
			return nil, fmt.Errorf("line %d: %q is not \"[host] what changed\"", i+1, l)
		}
		out = append(out, HostChange{Host: host[1:], Line: line})
	}
	return out, nil
}
