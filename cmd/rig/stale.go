package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/rig-project/rig/internal/agent"
	"github.com/rig-project/rig/internal/netlab"
)

// removeStale removes what rig processes killed on this machine left
// besides their journals — emulated labs and agent work directories whose
// owner no longer runs — and says so on w, one line each, prefixed with
// who. It returns how many it removed.
func removeStale(w io.Writer, who string) (int, error) {
	labs, lerr := netlab.RemoveStale()
	for _, l := range labs {
		o, what := l.Building, "unfinished lab"
		if l.Topology != nil {
			o, what = l.Topology.Owner, "lab"
		}
		fmt.Fprintf(w, "%s: removed %s %s (%s) left by %s, which no longer runs\n", who, what, l.Name, namespaceList(l.Netns), o)
	}
	dirs, derr := agent.RemoveStaleWorkDirs("")
	for _, d := range dirs {
		fmt.Fprintf(w, "%s: removed agent work directory %s left by %s, which no longer runs\n", who, d.Path, d.Owner)
	}
	return len(labs) + len(dirs), errors.Join(lerr, derr)
}

// namespaceList names the namespaces a lab had.
func namespaceList(ns []string) string {
	if len(ns) == 0 {
		return "no namespace"
	}
	return "namespaces " + strings.Join(ns, " ")
}
