package analysis

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
)

// HostFacts is one host of the run as the summary shows it: its roles
// (manifest.json) and what env/<host>.json recorded of it.
type HostFacts struct {
	Name  string   `json:"name"` // the manifest's host name (env/<name>.json)
	Roles []string `json:"roles"`
	Via   string   `json:"via"`            // "local", "ssh h", "ip netns exec"…
	Node  string   `json:"node,omitempty"` // the via of the agent that applied its node knobs
	// EnvError says why the environment is unknown ("" when env/<name>.json
	// was read): missing, damaged, or the snapshot's own error.
	EnvError     string `json:"env_error,omitempty"`
	Hostname     string `json:"hostname"`
	Kernel       string `json:"kernel"`
	CPUModel     string `json:"cpu_model"`
	CPUsOnline   []int  `json:"cpus_online"`
	CPUsIsolated []int  `json:"cpus_isolated"`
	NohzFull     []int  `json:"cpus_nohz_full"`
	SMT          bool   `json:"smt"`
	Clocksource  string `json:"clocksource"`
	// NICs are the interfaces the run used on this host.
	NICs []NICFacts `json:"nics"`
}

// NICFacts is one interface of a host.
type NICFacts struct {
	Iface     string `json:"iface"`
	Driver    string `json:"driver"`
	SpeedMbps int64  `json:"speed_mbps,omitempty"`
	// PHCIndex is the NIC's PTP hardware clock (/dev/ptpN); -1 none, nil unknown.
	PHCIndex *int `json:"phc_index"`
}

// envNIC is what the summary shows of a NIC's facts (facts.Info, which
// reads the host and is not imported here); TestReportReadsNICs
// (internal/envsnap) checks these names against a snapshot's.
type envNIC struct {
	Iface     string `json:"iface"`
	Driver    string `json:"driver"`
	SpeedMbps int64  `json:"speed_mbps"`
	DrvInfo   *struct {
		Driver string `json:"driver"`
	} `json:"drvinfo"`
	Timestamping *struct {
		Caps struct {
			PHCIndex int `json:"phc_index"`
		} `json:"caps"`
	} `json:"timestamping"`
}

// roleOrder sorts hosts and roles: sender, responder, capture.
var roleOrder = []string{string(samples.RoleSender), string(samples.RoleResponder), string(samples.RoleCapture)}

// hostFacts builds the hosts of a run from its manifest hosts and the
// env/<host>.json files, sender first. A missing or damaged file is the
// host's EnvError, never a failure.
func hostFacts(run string, hosts map[string]rundir.Host) []HostFacts {
	out := []HostFacts{}
	for name, h := range hosts {
		hf := HostFacts{Name: name, Roles: append([]string{}, h.Roles...), Via: h.Via, Node: h.Node, CPUsOnline: []int{}, CPUsIsolated: []int{}, NohzFull: []int{}, NICs: []NICFacts{}}
		readEnv(filepath.Join(run, rundir.EnvDir, name+".json"), &hf)
		out = append(out, hf)
	}
	first := func(h HostFacts) int {
		i := len(roleOrder)
		for _, r := range h.Roles {
			if j := slices.Index(roleOrder, r); j >= 0 && j < i {
				i = j
			}
		}
		return i
	}
	slices.SortFunc(out, func(a, b HostFacts) int {
		if c := first(a) - first(b); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

func readEnv(path string, hf *HostFacts) {
	b, err := rundir.ReadRegular(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		hf.EnvError = path + " is missing"
		return
	case err != nil:
		hf.EnvError = err.Error()
		return
	}
	// The snapshot, or the runner's {"error": "…"} when none could be
	// taken; each NIC is read apart, so a damaged one leaves the others.
	var e struct {
		rundir.Snapshot
		Error string                     `json:"error"`
		NIC   map[string]json.RawMessage `json:"nic"`
	}
	if err := json.Unmarshal(b, &e); err != nil {
		hf.EnvError = fmt.Sprintf("%s: damaged: %v", path, err)
		return
	}
	if e.Error != "" {
		hf.EnvError = "the snapshot could not be taken: " + e.Error
		return
	}
	hf.Hostname, hf.Kernel, hf.Clocksource = e.Hostname, e.Kernel, e.Clocksource
	hf.CPUModel, hf.SMT = e.CPU.Model, e.CPU.SMT
	hf.CPUsOnline = append(hf.CPUsOnline, e.CPU.Online...)
	hf.CPUsIsolated = append(hf.CPUsIsolated, e.CPU.Isolated...)
	hf.NohzFull = append(hf.NohzFull, e.CPU.NohzFull...)
	names := make([]string, 0, len(e.NIC))
	for n := range e.NIC {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		nf := NICFacts{Iface: n}
		var v envNIC
		if json.Unmarshal(e.NIC[n], &v) == nil {
			nf.Driver, nf.SpeedMbps = v.Driver, v.SpeedMbps
			if nf.Driver == "" && v.DrvInfo != nil {
				nf.Driver = v.DrvInfo.Driver // a virtual device has no driver link in sysfs
			}
			if v.Timestamping != nil {
				nf.PHCIndex = ptr(v.Timestamping.Caps.PHCIndex)
			}
		}
		hf.NICs = append(hf.NICs, nf)
	}
}
