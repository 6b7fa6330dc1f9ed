package bench

import (
	"context"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/version"
)

// Env describes where and when the bench ran, so a table can be traced.
type Env struct {
	Date       time.Time
	Commit     string // `git rev-parse HEAD`, or "uncommitted"
	Rig        string // the measured rig's version line (`rig version`'s first)
	Kernel     string
	CPUs       int
	LoadBefore string // /proc/loadavg at the start
	LoadAfter  string // and at the end
	Sockperf   string
	Cyclictest string
}

// snapshotEnv reads the host and the tools; rig is the binary measured,
// whose own version is asked: rigbench's may be another build.
func snapshotEnv(ctx context.Context, rig string) Env {
	e := Env{Date: time.Now().UTC(), Rig: toolVersion(ctx, `^(rig [^\n]*)`, rig, "version"), CPUs: runtime.NumCPU(), LoadBefore: readLoadavg()}
	if e.Rig == "" {
		e.Rig = "unknown (" + rig + " version failed); rigbench " + version.String()
	}
	e.Commit = "uncommitted"
	if out, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output(); err == nil {
		e.Commit = strings.TrimSpace(string(out))
		if st, err := exec.CommandContext(ctx, "git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
			e.Commit += " (tree modified)"
		}
	}
	if s, err := hostfs.Default().ReadString("/proc/sys/kernel/osrelease"); err == nil {
		e.Kernel = s
	}
	e.Sockperf = toolVersion(ctx, `version ([0-9][^ \n]*)`, "sockperf", "--version")
	e.Cyclictest = toolVersion(ctx, `V ([0-9.]+)`, "cyclictest", "--help")
	return e
}

// toolVersion runs a tool and extracts its version ("" when missing).
func toolVersion(ctx context.Context, re string, argv ...string) string {
	out, _ := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if m := regexp.MustCompile(re).FindSubmatch(out); m != nil {
		return string(m[1])
	}
	return ""
}

// readLoadavg returns the three load averages ("1.02 0.80 0.55").
func readLoadavg() string {
	s, err := hostfs.Default().ReadString("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(s)
	if len(f) < 3 {
		return s
	}
	return strings.Join(f[:3], " ")
}
