package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rig-project/rig/internal/owner"
	"github.com/rig-project/rig/internal/rundir"
)

// An agent keeps its processes' sample files in a work directory of its
// own below the temporary directory, removed when it exits. An agent
// killed with SIGKILL cannot remove it, so the directory names its owner
// (owner.json) and RemoveStaleWorkDirs removes those whose owner is gone.
const (
	workDirPrefix = "rig-agent-"
	ownerFile     = "owner.json"
)

func newWorkDir() (string, error) {
	d, err := os.MkdirTemp("", workDirPrefix)
	if err != nil {
		return "", fmt.Errorf("work directory: %w", err)
	}
	b, _ := json.Marshal(owner.Self())
	// Atomic: an agent killed mid-write must leave no record or a whole
	// one (a half record names no owner, so its directory would stay).
	if err := rundir.WriteFileAtomic(filepath.Join(d, ownerFile), b); err != nil {
		os.RemoveAll(d)
		return "", fmt.Errorf("work directory: %w", err)
	}
	return d, nil
}

// StaleWorkDir is a work directory left by an agent that no longer runs.
type StaleWorkDir struct {
	Path  string
	Owner owner.Process
}

// RemoveStaleWorkDirs removes the work directories below tmp (default
// os.TempDir()) left by agents that no longer run, and returns them. A
// directory without a readable owner record is left alone.
func RemoveStaleWorkDirs(tmp string) ([]StaleWorkDir, error) {
	if tmp == "" {
		tmp = os.TempDir()
	}
	ents, err := os.ReadDir(tmp)
	if err != nil {
		return nil, err
	}
	var out []StaleWorkDir
	var errs []error
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), workDirPrefix) {
			continue
		}
		d := filepath.Join(tmp, e.Name())
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue
		}
		var o owner.Process
		if json.Unmarshal(b, &o) != nil || o.Alive() {
			continue
		}
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, StaleWorkDir{Path: d, Owner: o})
	}
	return out, errors.Join(errs...)
}
