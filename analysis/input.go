package analysis

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
)

// Input is what Analyze reads: the arms of a run and a loader per round.
// Load builds it from a run directory; tests and benchmarks build it from
// synthetic rounds.
type Input struct {
	Run      string // directory (or a name)
	RunID    string
	Scenario string
	Baseline string
	// StartedAt, EndedAt (RFC 3339, from the manifest) time-stamp hist.hlog.
	StartedAt, EndedAt string
	// Warmup from the manifest; −1 when unknown (then each round's sample
	// header decides).
	Warmup int
	// Interrupted is the manifest's reason when the run did not finish.
	Interrupted string
	// Timestamps is the timestamp mode the run asked for (manifest:
	// hardware, software or auto); "" unknown.
	Timestamps string
	// Hosts are the manifest's hosts with what env/<host>.json says of
	// them, sender first; empty without a manifest.
	Hosts []HostFacts
	// Expect are the roles whose sample file every round must have; a
	// round lacking one is left out of the statistics. Empty: no check
	// (synthetic rounds).
	Expect   []samples.Role
	Arms     []InputArm
	Problems []string
	// Responders names the responder hosts by id when several answered
	// every request (fan-out, manifest.json responders): Arms then holds
	// one entry per arm × responder, named ArmResponderName.
	Responders []string
}

// InputArm is one arm and its rounds; with several responders, one arm's
// rounds as one responder answered them.
type InputArm struct {
	Name    string
	Skipped string
	Rounds  []InputRound
	// Arm and Responder, with several responders: the scenario's arm and
	// the responder host (Name is ArmResponderName(Arm, Responder)).
	Arm, Responder string
}

// ArmResponderName is the name an arm × responder row carries in every
// table: "arm@responder".
func ArmResponderName(arm, responder string) string { return arm + "@" + responder }

// InputRound is one round of an arm.
type InputRound struct {
	K    int
	Dir  string // round directory; "" for synthetic rounds
	Load func() (*samples.Joined, error)
	// Responder is the responder whose telemetry file is the arm's
	// (rundir.TelemetryFile): 0 but in a fan-out arm.
	Responder uint32
}

// Load discovers the arms and rounds of a run directory. A missing or bad
// manifest.json is a problem, not an error: the arms are then found from
// arms/*/round-*/. The error is non-nil only when no arm can be found.
func Load(run string) (*Input, error) {
	in := &Input{Run: run, Warmup: -1}
	st, err := os.Stat(run)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s: not a run directory", run)
	}
	m, merr := rundir.ReadManifest(run)
	onDisk, derr := armDirs(run)
	if merr != nil {
		if errors.Is(merr, os.ErrNotExist) {
			in.Problems = append(in.Problems, fmt.Sprintf("%s: missing; arms discovered from %s/*/round-*/",
				filepath.Join(run, rundir.ManifestFile), rundir.ArmsDir))
		} else {
			in.Problems = append(in.Problems, fmt.Sprintf("bad manifest: %v; arms discovered from %s/*/round-*/", merr, rundir.ArmsDir))
		}
		for _, a := range onDisk {
			in.Arms = append(in.Arms, InputArm{Name: a})
		}
		if len(in.Arms) > 0 {
			in.Baseline = in.Arms[0].Name
			in.Problems = append(in.Problems, fmt.Sprintf("baseline unknown without a manifest: comparing against %q (first by name)", in.Baseline))
		}
	} else {
		in.RunID, in.Scenario, in.Baseline, in.Warmup = m.RunID, m.Scenario, m.Baseline, m.Warmup
		in.StartedAt, in.EndedAt, in.Interrupted = m.StartedAt, m.EndedAt, m.Interrupted
		in.Timestamps, in.Hosts = m.Timestamps, hostFacts(run, m.Hosts)
		if len(m.Responders) > 1 {
			in.Responders = m.Responders
		}
		if m.Warmup < 0 {
			in.Problems = append(in.Problems, fmt.Sprintf("%s: warmup %d is not a count; the sample headers' warm-up is used",
				filepath.Join(run, rundir.ManifestFile), m.Warmup))
			in.Warmup = -1
		}
		for _, a := range m.Arms {
			if slices.ContainsFunc(in.Arms, func(b InputArm) bool { return b.Name == a.Name }) {
				in.Problems = append(in.Problems, fmt.Sprintf("%s: arm %q listed twice; reported once",
					filepath.Join(run, rundir.ManifestFile), a.Name))
				continue
			}
			in.Arms = append(in.Arms, InputArm{Name: a.Name, Skipped: a.Skipped})
		}
		for _, h := range m.Hosts {
			if slices.Contains(h.Roles, string(samples.RoleCapture)) {
				in.Expect = append(in.Expect, samples.RoleCapture)
				break
			}
		}
		for _, d := range onDisk {
			if !slices.ContainsFunc(in.Arms, func(a InputArm) bool { return a.Name == d }) {
				in.Problems = append(in.Problems, fmt.Sprintf("%s: arm not in the manifest; reported anyway", filepath.Join(run, rundir.ArmsDir, d)))
				in.Arms = append(in.Arms, InputArm{Name: d})
			}
		}
	}
	if len(in.Arms) == 0 {
		if derr != nil {
			return nil, fmt.Errorf("%s: no arms: %v", run, derr)
		}
		return nil, fmt.Errorf("%s: no arms (no manifest arms and no %s/*/round-*/ directories)", run, rundir.ArmsDir)
	}
	capture := false
	for i := range in.Arms {
		a := &in.Arms[i]
		ks, stray, err := roundNumbers(filepath.Join(run, rundir.ArmsDir, a.Name))
		if err != nil && a.Skipped == "" {
			in.Problems = append(in.Problems, fmt.Sprintf("arm %q: %v", a.Name, err))
		}
		for _, d := range stray {
			in.Problems = append(in.Problems, fmt.Sprintf("%s: not a round directory (want round-<k>, k = 0, 1, …); ignored",
				filepath.Join(run, rundir.ArmsDir, a.Name, d)))
		}
		for _, k := range ks {
			dir := rundir.RoundDir(run, a.Name, k)
			a.Rounds = append(a.Rounds, InputRound{K: k, Dir: dir, Load: func() (*samples.Joined, error) { return samples.JoinDir(dir, 0) }})
			if _, err := os.Lstat(filepath.Join(dir, samples.FileName(samples.RoleCapture))); err == nil {
				capture = true
			}
		}
	}
	if len(in.Responders) > 1 {
		in.fanout()
	}
	// Every round of a run has a sender and a responder file, and a capture
	// file when the run had a capture (the manifest says so, or another
	// round has one).
	in.Expect = append([]samples.Role{samples.RoleSender, samples.RoleResponder}, in.Expect...)
	if capture && !slices.Contains(in.Expect, samples.RoleCapture) {
		in.Expect = append(in.Expect, samples.RoleCapture)
	}
	return in, nil
}

// fanout turns every arm into one arm per responder: the same rounds,
// each joined with that responder's replies (samples.JoinDir),
// so every table has a row per arm × responder. The baseline is the
// baseline arm as responder 0 answered it.
func (in *Input) fanout() {
	var out []InputArm
	for _, a := range in.Arms {
		for id, h := range in.Responders {
			ra := InputArm{Name: ArmResponderName(a.Name, h), Skipped: a.Skipped, Arm: a.Name, Responder: h}
			for _, r := range a.Rounds {
				dir := r.Dir
				// Each responder's telemetry watched its own CPUs.
				ir := InputRound{K: r.K, Dir: dir, Responder: uint32(id), Load: func() (*samples.Joined, error) {
					return samples.JoinDir(dir, uint32(id))
				}}
				ra.Rounds = append(ra.Rounds, ir)
			}
			out = append(out, ra)
		}
	}
	in.Arms = out
	if in.Baseline != "" {
		in.Baseline = ArmResponderName(in.Baseline, in.Responders[0])
	}
}

// armDirs lists arms/* directories that hold at least one round-<k>.
func armDirs(run string) ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(run, rundir.ArmsDir))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		if ks, _, _ := roundNumbers(filepath.Join(run, rundir.ArmsDir, e.Name())); len(ks) > 0 {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// roundNumbers lists k of the round-<k> directories, ascending, and the
// entries named round-… that are not one (round--1, round-abc, round-01,
// a file): the runner never writes them, so they are damage to report.
func roundNumbers(armDir string) (ks []int, stray []string, err error) {
	ents, err := os.ReadDir(armDir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range ents {
		s, ok := strings.CutPrefix(e.Name(), "round-")
		if !ok {
			continue
		}
		k, err := strconv.Atoi(s)
		if err != nil || k < 0 || strconv.Itoa(k) != s || !e.IsDir() {
			stray = append(stray, e.Name())
			continue
		}
		ks = append(ks, k)
	}
	slices.Sort(ks)
	if len(ks) == 0 {
		return nil, stray, fmt.Errorf("%s: no round-<k> directories", armDir)
	}
	return ks, stray, nil
}
