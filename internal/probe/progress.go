package probe

import (
	"strconv"
	"strings"
)

// progressPrefix starts rig send's progress lines.
const progressPrefix = "progress "

// FormatProgress is the line rig send --progress-lines prints on stderr
// once a second: "progress SENT RECEIVED".
func FormatProgress(sent, received int) string {
	return progressPrefix + strconv.Itoa(sent) + " " + strconv.Itoa(received)
}

// IsProgress reports whether a line of a probe's stderr is a progress
// line (the agent relays those as progress, not as log).
func IsProgress(line string) bool { return strings.HasPrefix(line, progressPrefix) }

// ParseProgress reads a line FormatProgress wrote.
func ParseProgress(line string) (sent, received int, ok bool) {
	rest, ok := strings.CutPrefix(line, progressPrefix)
	if !ok {
		return 0, 0, false
	}
	s, r, ok := strings.Cut(rest, " ")
	if !ok {
		return 0, 0, false
	}
	sent, err1 := strconv.Atoi(s)
	received, err2 := strconv.Atoi(r)
	if err1 != nil || err2 != nil || sent < 0 || received < 0 {
		return 0, 0, false
	}
	return sent, received, true
}
