// Package version reports what build of rig this is. Every run directory and
// sample file records it, so a number can be traced to the code that took it.
package version

import (
	"fmt"
	"runtime/debug"
)

// Version is the rig release; the Makefile may override it with -ldflags -X.
var Version = "0.1.0-dev"

// commit is set by the Makefile (-ldflags -X) for builds where Go's own
// VCS stamping is off (GOFLAGS=-buildvcs=false, or no git at build time).
var commit string

// Commit returns the VCS revision the binary was built from ("unknown" when
// the build carried none), with "+dirty" when the tree was modified.
func Commit() string {
	if commit != "" {
		return commit
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "unknown", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}

// String is the one-line version report.
func String() string {
	return fmt.Sprintf("rig %s (commit %s)", Version, Commit())
}
