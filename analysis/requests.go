package analysis

import (
	"slices"
	"strings"
)

// addRequests records where a round's requests went (the sender header's
// samples.Header.Requests); rounds that disagree are all listed.
func (a *ArmReport) addRequests(s string) {
	if s == "" {
		return
	}
	have := strings.Split(a.Requests, "; ")
	if a.Requests == "" {
		a.Requests = s
	} else if !slices.Contains(have, s) {
		a.Requests += "; " + s
	}
}
