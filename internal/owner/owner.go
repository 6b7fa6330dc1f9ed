// Package owner names the process that owns something rig leaves on a host
// while it runs — the host lock, an emulated lab, an agent's work directory —
// so that another rig process can tell later whether that owner still runs.
//
// A pid alone is not enough: the kernel hands it to a new process once the
// old one is gone. A Process is the pid plus its start time in clock ticks
// after boot (/proc/PID/stat field 22) plus the boot id; no later process,
// in this boot or another, matches all three.
package owner

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
)

// Process identifies one process for the life of the machine.
type Process struct {
	PID int `json:"pid"`
	// Start is the process's start time in clock ticks after boot.
	Start uint64 `json:"start_ticks"`
	// Boot is /proc/sys/kernel/random/boot_id of the boot it ran in.
	Boot string `json:"boot_id"`
	// Command is its command line, for messages.
	Command string    `json:"command,omitempty"`
	Since   time.Time `json:"since"`
}

// maxCommand bounds Command: it is for messages, not a record of argv.
const maxCommand = 300

// Self returns the calling process. Start and Boot are zero when /proc
// cannot be read; such a record never counts as a dead owner (see Alive).
func Self() Process {
	p := Process{PID: os.Getpid(), Since: time.Now().UTC().Truncate(time.Second), Boot: BootID()}
	p.Start, _ = startTicks(p.PID)
	p.Command = strings.Join(os.Args, " ")
	if len(p.Command) > maxCommand {
		p.Command = p.Command[:maxCommand] + "…"
	}
	return p
}

// BootID returns this boot's id, or "" when it cannot be read.
func BootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func startTicks(pid int) (uint64, error) {
	fs, err := procfs.NewFS("/proc")
	if err != nil {
		return 0, err
	}
	pr, err := fs.Proc(pid)
	if err != nil {
		return 0, err
	}
	st, err := pr.Stat()
	if err != nil {
		return 0, err
	}
	return st.Starttime, nil
}

// Alive reports whether the process still runs. A record without a pid is
// never alive; a record this machine cannot judge (no start time or boot
// id, from a rig that could not read /proc) counts as alive, so that rig
// never removes what might still be in use.
func (p Process) Alive() bool {
	if p.PID <= 0 {
		return false
	}
	if p.Start == 0 || p.Boot == "" {
		return true
	}
	if b := BootID(); b != "" && b != p.Boot {
		return false
	}
	st, err := startTicks(p.PID)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return false
	}
	if err != nil {
		return true // cannot tell: keep what it owns
	}
	return st == p.Start
}

// String names the process for a message: pid, command and since when.
func (p Process) String() string {
	s := fmt.Sprintf("pid %d", p.PID)
	if p.Command != "" {
		s += fmt.Sprintf(" (%s)", p.Command)
	}
	if !p.Since.IsZero() {
		s += " since " + p.Since.Format(time.RFC3339)
	}
	return s
}
