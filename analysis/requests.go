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

// requestsCaption is the sentence every table caption ends with: where
// the requests went, once when every arm that ran agrees, else per arm.
func requestsCaption(r *Report) string {
	var per []string
	distinct := map[string]bool{}
	ran := 0
	for _, a := range r.Arms {
		if a.Skipped == "" {
			ran++
		}
		if a.Requests != "" {
			per = append(per, "arm "+a.Name+": "+a.Requests)
			distinct[a.Requests] = true
		}
	}
	if len(per) == 0 {
		return ""
	}
	if len(distinct) == 1 && len(per) == ran {
		for s := range distinct {
			return " Requests: " + s + "."
		}
	}
	return " Requests: " + strings.Join(per, "; ") + "."
}
