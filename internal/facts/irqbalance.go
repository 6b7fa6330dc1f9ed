//go:build linux

package facts

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/rig-project/rig/internal/cpulist"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
)

// IRQBalanceState is what rig knows about the irqbalance daemon.
type IRQBalanceState struct {
	Running bool `json:"running"`
	PID     int  `json:"pid,omitempty"`
	// Systemd is true when the process runs in irqbalance.service.
	Systemd bool `json:"systemd"`
	// BannedCPUs is the cpulist irqbalance leaves alone, from its
	// environment (IRQBALANCE_BANNED_CPULIST, or the deprecated hex
	// IRQBALANCE_BANNED_CPUS); empty when neither is set, in which case
	// irqbalance bans isolated ∪ nohz_full CPUs by default.
	BannedCPUs   string `json:"banned_cpus,omitempty"`
	BannedSource string `json:"banned_source,omitempty"`
	// EnvErr says why the banned CPUs could not be read from the
	// environment (unreadable, or a list that does not parse).
	EnvErr string `json:"env_error,omitempty"`
}

// ReadIRQBalance finds irqbalance in fs's /proc (the first by PID when
// several run) and reads its banned CPUs from its environment. An
// environment that cannot be read or a banned list that does not parse is
// said in EnvErr, not returned: the daemon still runs.
func ReadIRQBalance(fs hostfs.FS) (IRQBalanceState, error) {
	ps, err := hostinfo.FindProcesses(fs, "irqbalance")
	if err != nil || len(ps) == 0 {
		return IRQBalanceState{}, err
	}
	st := IRQBalanceState{Running: true, PID: ps[0].PID}
	dir := fmt.Sprintf("/proc/%d", st.PID)
	if cg, err := fs.ReadString(dir + "/cgroup"); err == nil {
		st.Systemd = strings.Contains(cg, "/irqbalance.service")
	}
	env, err := fs.ReadFile(dir + "/environ")
	if err != nil {
		st.EnvErr = err.Error()
		return st, nil
	}
	for _, kv := range bytes.Split(env, []byte{0}) {
		k, v, _ := strings.Cut(string(kv), "=")
		var cpus []int
		switch k {
		case "IRQBALANCE_BANNED_CPULIST":
			cpus, err = cpulist.Parse(v)
		case "IRQBALANCE_BANNED_CPUS": // deprecated hex mask
			if st.BannedSource != "" {
				continue
			}
			cpus, err = cpulist.ParseMask(v)
		default:
			continue
		}
		if err != nil {
			st.EnvErr = fmt.Sprintf("%s: %v", k, err)
			continue
		}
		st.BannedCPUs, st.BannedSource = cpulist.Format(cpus), k
	}
	return st, nil
}

// DefaultBanned names where irqbalance's banned CPUs come from when its
// environment sets none.
const DefaultBanned = "default (isolated ∪ nohz_full)"

// Banned returns the CPUs irqbalance leaves alone and where that list comes
// from: its environment, or else its default, the isolated and nohz_full
// CPUs of the host.
func (st IRQBalanceState) Banned(isolated, nohz []int) ([]int, string) {
	if st.BannedSource != "" {
		l, _ := cpulist.Parse(st.BannedCPUs) // State wrote it with cpulist.Format
		return l, st.BannedSource
	}
	from := DefaultBanned
	if st.EnvErr != "" {
		from += "; its environment: " + st.EnvErr
	}
	return cpulist.Union(isolated, nohz), from
}
