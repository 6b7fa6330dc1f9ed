package analysis

import (
	"slices"
	"strings"

	"github.com/rig-project/rig/internal/probe"
	"github.com/rig-project/rig/internal/samples"
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
		return stacksCaption(r)
	}
	if len(distinct) == 1 && len(per) == ran {
		for s := range distinct {
			return " Requests: " + s + "." + stacksCaption(r)
		}
	}
	return " Requests: " + strings.Join(per, "; ") + "." + stacksCaption(r)
}

// stacksCaption names each arm's responder socket stack, from its sample
// headers, when one arm ran on another than the kernel's ("" otherwise:
// files before stacks say none).
func stacksCaption(r *Report) string {
	var per []string
	bypass := false
	for _, a := range r.Summary.Arms {
		if st := a.Roles[string(samples.RoleResponder)].Stack; st != "" {
			per = append(per, "arm "+a.Name+": "+st)
			bypass = bypass || st != string(probe.StackKernel)
		}
	}
	if !bypass {
		return ""
	}
	return " Responder socket stack: " + strings.Join(per, "; ") + "."
}
