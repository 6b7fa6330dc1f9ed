// Package rundir names the files of a run directory (docs/formats.md) and
// holds their types: the manifest, telemetry.json, env/<host>.json,
// cpu-rank.json, noise.json, host-changes.txt and the host values they record. Their producers write
// these types and the analysis reads them back; the package reads no host
// (no /proc, no x/sys), so the report builds on any OS.
//
//	results/<scenario>-<UTC time>[-N]/
//	  manifest.json
//	  env/<host>.json
//	  arms/<arm>/round-<k>/{sender,responder,capture}.samples, telemetry.json, cpu-rank.json, noise.json, capture.pcap
//	  tables.md tables.csv report.md report.json report.html hist.hlog plots/
package rundir

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// FormatVersion is the run-directory/manifest format version.
const FormatVersion = 1

// Manifest is manifest.json: what ran, with which versions, how.
type Manifest struct {
	Format        string   `json:"format"` // "rig-run"
	FormatVersion int      `json:"format_version"`
	RigVersion    string   `json:"rig_version"`
	RigCommit     string   `json:"rig_commit"`
	WireVersion   int      `json:"wire_version"`
	SampleVersion int      `json:"sample_format_version"`
	CommandLine   []string `json:"command_line"`
	Scenario      string   `json:"scenario"` // name
	ScenarioFile  string   `json:"scenario_file,omitempty"`
	ScenarioGiven string   `json:"scenario_given,omitempty"` // the file as given
	Effective     any      `json:"scenario_effective,omitempty"`
	RunID         string   `json:"run_id"`
	StartedAt     string   `json:"started_at"`
	EndedAt       string   `json:"ended_at,omitempty"`
	Interrupted   string   `json:"interrupted,omitempty"`
	Baseline      string   `json:"baseline"`
	Warmup        int      `json:"warmup"`
	Rounds        int      `json:"rounds"`
	Count         int      `json:"count"`
	IntervalNS    int64    `json:"interval_ns"`
	Timestamps    string   `json:"timestamps"` // mode asked: hardware|software|auto
	Arms          []Arm    `json:"arms"`
	// Order[r] lists arm indexes in the order they ran in round r.
	Order [][]int         `json:"order"`
	Hosts map[string]Host `json:"hosts,omitempty"`
	// Responders names the responder hosts by id when several answered
	// each request (fan-out); absent with one.
	Responders []string `json:"responders,omitempty"`
	// Granted records the timestamp sources each host granted.
	Granted map[string]any `json:"timestamps_granted,omitempty"`
	// NICTimestamping is what rig did with each host's NIC timestamping
	// for the run (once, before the first round): the state it found, its
	// decision, and what it granted (nicctl.TSResult, per host).
	NICTimestamping []NICTimestamping `json:"nic_timestamping,omitempty"`
}

// NICTimestamping is one host interface's timestamping for the run.
type NICTimestamping struct {
	Host   string `json:"host"`
	Iface  string `json:"iface"`
	Result any    `json:"result"` // nicctl.TSResult
	Error  string `json:"error,omitempty"`
}

// Arm is one named set of knobs.
type Arm struct {
	Name    string         `json:"name"`
	Index   int            `json:"index"`
	Knobs   map[string]any `json:"knobs,omitempty"`
	Skipped string         `json:"skipped,omitempty"` // reason, when a requirement is missing
	// ResponderKnobs are, with several responders, the knobs each
	// responder host got (Knobs: those for every responder).
	ResponderKnobs map[string]map[string]any `json:"responder_knobs,omitempty"`
	// Requests is where the arm's requests went, as the captions say:
	// "multicast 239.1.1.1:9000" or "unicast to 10.0.0.2:9000".
	Requests string `json:"requests,omitempty"`
}

// Host is one host of the run.
type Host struct {
	Roles []string `json:"roles"`
	Via   string   `json:"via"` // "local", "ssh h", "ip netns exec ns", ...
	// Node is the via of the agent that applied its node knobs (host
	// option node), "" for none.
	Node string `json:"node,omitempty"`
}

// ManifestFile etc. name the fixed files of a run directory.
const (
	ManifestFile = "manifest.json"
	EnvDir       = "env"
	ArmsDir      = "arms"
	Telemetry    = "telemetry.json"
	// CPURank is a round's CPU ranking (responder.cpu: quietest): which
	// CPU the responder was pinned to and the evidence (Ranking).
	CPURank = "cpu-rank.json"
	// PcapFile is a round's capture frames as pcap (scenario capture:
	// {pcap: true}), stamped as capture.samples is.
	PcapFile = "capture.pcap"
	// HostChanges is what the responder hosts reported changing for a
	// round's arm and putting back, one line each ([host] line).
	HostChanges = "host-changes.txt"
)

// TelemetryFile is the telemetry file of responder id in a round
// directory: telemetry.json for responder 0, telemetry-<id>.json for the
// others of a fan-out round.
func TelemetryFile(id uint32) string {
	if id == 0 {
		return Telemetry
	}
	return "telemetry-" + strconv.FormatUint(uint64(id), 10) + ".json"
}

// CPURankFile is the CPU ranking of responder id in a round directory:
// cpu-rank.json for responder 0, cpu-rank-<id>.json for the others of a
// fan-out round.
func CPURankFile(id uint32) string {
	if id == 0 {
		return CPURank
	}
	return "cpu-rank-" + strconv.FormatUint(uint64(id), 10) + ".json"
}

// RoundDir is the directory of one arm's round k.
func RoundDir(run, arm string, k int) string {
	return filepath.Join(run, ArmsDir, arm, "round-"+strconv.Itoa(k))
}

// Create makes the directory of a run of scenario started at start, below
// results (created if needed): <scenario>-<UTC second>, or with -2, -3, …
// appended when another run took that name in the same second. It is
// created exclusively, so two runs never share one directory.
func Create(results, scenario string, start time.Time) (string, error) {
	if err := os.MkdirAll(results, 0o755); err != nil {
		return "", err
	}
	base := filepath.Join(results, scenario+"-"+start.UTC().Format("20060102T150405Z"))
	dir := base
	for i := 2; ; i++ {
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, os.ErrExist) || i > 1000 {
			return "", err
		}
		dir = base + "-" + strconv.Itoa(i)
	}
}

// ReadManifest reads manifest.json of a run directory.
func ReadManifest(run string) (*Manifest, error) {
	b, err := ReadRegular(filepath.Join(run, ManifestFile))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(run, ManifestFile), err)
	}
	if m.Format != "rig-run" || m.FormatVersion > FormatVersion {
		return nil, fmt.Errorf("%s: format %q version %d (this rig reads rig-run version %d)",
			filepath.Join(run, ManifestFile), m.Format, m.FormatVersion, FormatVersion)
	}
	return &m, nil
}

// WriteJSON writes v as indented JSON atomically (temp file, fsync, rename).
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, append(b, '\n'))
}

// WriteFileAtomic writes data to path (creating its directory) through
// WriteAtomic.
func WriteFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return WriteAtomic(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteAtomic writes path through write into a temporary file in the same
// directory, fsync and a rename, so readers see the old file or the whole
// new one, never half of it. On any error the temporary file is removed
// and path is untouched.
func WriteAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	// After a successful rename the name is gone and Remove fails: nothing
	// to clean up then.
	defer os.Remove(tmp.Name())
	// CreateTemp makes the file 0600; a run directory is for every reader.
	if err := errors.Join(tmp.Chmod(0o644), write(tmp)); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// OpenRegular opens path for reading and refuses anything but a regular
// file: a FIFO planted under a sample file's name would block a reader
// forever, a device would never end. The open does not block (O_NONBLOCK:
// a FIFO without a writer opens at once), and the type is checked on the
// open descriptor, so a rename between check and open cannot slip one in.
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file (%s); refusing to read it", path, fileType(st.Mode()))
	}
	return f, nil
}

// ReadRegular reads a whole regular file (see OpenRegular).
func ReadRegular(path string) ([]byte, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func fileType(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return m.Type().String()
}
