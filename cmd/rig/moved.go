package main

import (
	"os"
	"regexp"
	"strings"
)

// benchMoved is what `rig bench ARGS` prints (exit 2): the bench left the
// product binary for a developer tool of its own, rigbench (docs/bench.md),
// which measures the rig binary it is given. The command it prints does
// what ARGS asked, with this rig.
func benchMoved(args []string) string {
	words := []string{"bin/rigbench"}
	if exe, err := os.Executable(); err == nil {
		words = append(words, "--rig", exe)
	}
	var cmd []string
	for _, w := range append(words, args...) {
		if !shellSafe.MatchString(w) {
			w = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
		cmd = append(cmd, w)
	}
	return "rig bench moved: build and run rigbench (make bench / make bench-smoke); for this command, " +
		"from rig's source tree: go build -o bin/rigbench ./cmd/rigbench && " + strings.Join(cmd, " ")
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./:,=@%+-]+$`)
