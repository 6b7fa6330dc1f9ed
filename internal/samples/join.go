package samples

import (
	"cmp"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/rig-project/rig/internal/rundir"
)

// FileName is the name of a role's sample file inside a round directory
// (for the responder, responder 0's: ResponderFileName).
func FileName(r Role) string { return string(r) + ".samples" }

// ResponderFileName is the name of responder id's sample file: 0's is
// FileName(RoleResponder), as before there were several; the others'
// "responder-<id>.samples".
func ResponderFileName(id uint32) string {
	if id == 0 {
		return FileName(RoleResponder)
	}
	return fmt.Sprintf("%s-%d.samples", RoleResponder, id)
}

// Joined is one round's records from every role, joined by sequence: with
// several responders, one responder's (JoinResponder) — every request and
// that responder's reply to it, as if it had been alone.
type Joined struct {
	Responder  uint32               // whose replies the records hold
	Responders int                  // how many responders answered the round (≥ 1)
	Header     Header               // of the sender file (else the first file)
	Headers    map[Role]Header      // every file's header, per role (where each ran, its settings)
	Clocks     map[string]Clock     // per stamp column, from the file that took it
	Present    [NumStamps]bool      // columns some file carries
	Records    []Record             // sorted by Seq
	Counters   map[Role]Counters    // per role, from the footers
	Threads    map[Role]ThreadUsage // per role, the measuring thread's CPU use (footers that carry it)
	Stopped    map[Role]string      // per role, Footer.Stopped where set
	Roles      []Role               // roles joined
	Problems   []string             // per-file problems (truncation) that did not stop the join
}

// JoinResponder merges responder id's records of one round by sequence
// number: the sender's and the capture's records of that responder, and
// that responder's own file (the other responders' files are left out).
// The files must share the run id, arm and round; a role may appear once
// per responder. The files are not modified.
func JoinResponder(id uint32, files ...*File) (*Joined, error) {
	runs := make([]run, 0, len(files))
	for _, f := range files {
		runs = append(runs, held(f, id))
	}
	j, err := joinMeta(id, runs)
	if err != nil {
		return nil, err
	}
	if j.Records, _, err = merge(runs); err != nil {
		return nil, err
	}
	j.footers(runs)
	return j, nil
}

// JoinDir reads and joins the sample files of a round directory (or the
// single sample file named by path) for responder id: every request and
// that responder's reply to it, as if it had been alone (with one
// responder, id 0's join is the round's). The files are merged as they
// are read, so the round holds the joined records and nothing else; a file
// out of order (not a writer's) is read whole and sorted first. Truncated
// files still contribute their complete records; the damage is listed in
// Problems. A round without responder id is an error naming it.
func JoinDir(path string, id uint32) (*Joined, error) {
	names, err := roundFiles(path)
	if err != nil {
		return nil, err
	}
	var sorted []string // files out of order: read whole and sorted
	for {
		j, unsorted, err := joinDir(path, names, id, sorted)
		if unsorted == "" {
			return j, err
		}
		sorted = append(sorted, unsorted)
	}
}

// joinDir is one attempt of JoinDir: it returns the name of a file found
// out of order (its records must be sorted first: sorted) instead of a
// join.
func joinDir(path string, names []string, id uint32, sorted []string) (*Joined, string, error) {
	runs := make([]run, 0, len(names))
	var problems []string
	defer func() {
		for i := range runs {
			runs[i].close()
		}
	}()
	for _, n := range names {
		r, err := openRun(n, id, slices.Contains(sorted, n))
		if err != nil {
			if r.f == nil || !errors.Is(err, ErrTruncated) {
				return nil, "", err
			}
			problems = append(problems, err.Error())
		}
		runs = append(runs, r)
	}
	j, err := joinMeta(id, runs)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", path, err)
	}
	if n := responderCount(runs); int(id) >= n {
		return nil, "", fmt.Errorf("%s: no file or records of responder %d (the round has %d)", path, id, n)
	}
	recs, unsorted, err := merge(runs)
	if err != nil || unsorted != nil {
		return nil, unsorted.name(), err
	}
	for i := range runs {
		if err := runs[i].finish(); err != nil {
			if !errors.Is(err, ErrTruncated) {
				return nil, "", err
			}
			problems = append(problems, err.Error())
		}
	}
	j.Records, j.Problems = recs, problems
	j.footers(runs)
	return j, "", nil
}

// run is one file's records of responder id in sequence order, the merge
// taking them one at a time (head): read from the file as the merge goes
// (rr), or held in memory (recs, sorted). Another responder's own file is
// a run without records (other): its header counts the responders.
type run struct {
	f     *File
	path  string // "" for a file in memory
	id    uint32
	other bool
	rr    *recordReader
	fh    io.Closer
	recs  []Record
	head  Record
	ok    bool  // head holds a record
	count int   // the records of responder id it holds, about: the join's size
	trunc error // the file ended early: no more records, no footer
}

// held is f's run of responder id: its records of id as they are, or a
// sorted copy when they are out of order.
func held(f *File, id uint32) run {
	if f.Header.Role == RoleResponder && f.Header.ResponderID != id {
		return run{f: f, id: id, other: true}
	}
	recs := f.Records
	if slices.ContainsFunc(recs, func(r Record) bool { return r.Responder != id }) {
		recs = slices.DeleteFunc(slices.Clone(recs), func(r Record) bool { return r.Responder != id })
	}
	if !slices.IsSortedFunc(recs, bySeq) {
		recs = slices.Clone(recs)
		slices.SortStableFunc(recs, bySeq)
	}
	return run{f: f, id: id, recs: recs, count: len(recs)}
}

// openRun opens the sample file at path as a run of responder id: read
// as the merge goes, or whole and sorted. Errors are ReadFile's; with
// ErrTruncated the run holds what precedes the damage.
func openRun(path string, id uint32, sorted bool) (run, error) {
	if sorted {
		f, err := ReadFile(path)
		if f == nil {
			return run{}, err
		}
		r := held(f, id)
		r.path = path
		return r, err
	}
	fh, err := rundir.OpenRegular(path)
	if err != nil {
		return run{}, err
	}
	rr, err := openRecords(fh)
	if rr == nil {
		fh.Close()
		return run{}, fmt.Errorf("%s: %w", path, err)
	}
	r := run{f: rr.f, path: path, id: id, rr: rr, fh: fh, trunc: err} // err: no record count
	if h := rr.f.Header; h.Role == RoleResponder && h.ResponderID != id {
		r.other, r.rr, r.trunc = true, nil, nil
	} else if err == nil {
		r.count = int(recordsCap(fh, rr.count, len(rr.rec))) / slots(h)
	}
	return r, nil
}

// slots is how many records a file holds per request: one per responder
// in the sender's and the capture's, one in a responder's.
func slots(h Header) int {
	if h.Role == RoleResponder {
		return 1
	}
	return h.ResponderCount()
}

// bySeq is the order of records: by sequence.
func bySeq(a, b Record) int { return cmp.Compare(a.Seq, b.Seq) }

// errUnsorted stops the merge at a run out of sequence order.
var errUnsorted = errors.New("records out of order")

// next moves the run to its next record of responder id; a record out of
// order is errUnsorted, a sequence twice damage. A truncated file ends the
// run, its damage kept for finish.
func (r *run) next() error {
	prev, had := r.head.Seq, r.ok
	r.ok = false
	switch {
	case r.rr != nil && r.trunc == nil:
		for {
			ok, err := r.rr.next(&r.head)
			if errors.Is(err, ErrTruncated) {
				r.trunc = err
				return nil
			}
			if err != nil {
				return r.errorf(err)
			}
			if !ok || r.head.Responder == r.id {
				r.ok = ok
				break
			}
		}
	case r.rr == nil && len(r.recs) > 0:
		r.head, r.recs, r.ok = r.recs[0], r.recs[1:], true
	}
	if r.ok && had {
		switch cmp.Compare(r.head.Seq, prev) {
		case 0:
			return r.errorf(dupSeq(r.f, prev))
		case -1:
			return errUnsorted
		}
	}
	return nil
}

// finish reads the footer after the run's last record (the file's own
// checks); a truncated file's damage is ErrTruncated.
func (r *run) finish() error {
	if r.rr == nil {
		return nil
	}
	if r.trunc != nil {
		return r.errorf(r.trunc)
	}
	if err := r.rr.finish(); err != nil {
		return r.errorf(err)
	}
	return nil
}

func (r *run) errorf(err error) error {
	if r.path == "" {
		return err
	}
	return fmt.Errorf("%s: %w", r.path, err)
}

func (r *run) close() {
	if r.fh != nil {
		r.fh.Close()
	}
}

// name is the file of a run ("" without one).
func (r *run) name() string {
	if r == nil {
		return ""
	}
	return r.path
}

// merge joins runs by sequence: a k-way merge, each record of the join
// taking the stamps of every run that has its sequence. It stops at a run
// found out of order (unsorted), whose records must be sorted first.
func merge(runs []run) (recs []Record, unsorted *run, err error) {
	n := 0
	for i := range runs {
		r := &runs[i]
		n = max(n, r.count)
		if err := r.next(); err != nil {
			return stopped(r, err)
		}
	}
	recs = make([]Record, 0, n) // the joined size when one run has every sequence
	for {
		var m uint64
		found := false
		for i := range runs {
			if r := &runs[i]; r.ok && (!found || r.head.Seq < m) {
				m, found = r.head.Seq, true
			}
		}
		if !found {
			return recs, nil, nil
		}
		recs = append(recs, Record{Seq: m})
		d := &recs[len(recs)-1]
		for i := range runs {
			r := &runs[i]
			if !r.ok || r.head.Seq != m {
				continue
			}
			mergeStamps(d, &r.head, r.f.Stamps())
			if err := r.next(); err != nil {
				return stopped(r, err)
			}
		}
	}
}

// stopped is merge's end at run r's error: r when it is out of order.
func stopped(r *run, err error) ([]Record, *run, error) {
	if err == errUnsorted {
		return nil, r, nil
	}
	return nil, nil, err
}

// joinMeta checks that runs belong to one round, a role once each, and
// gathers everything of responder id's join but the records and what the
// footers say (footers).
func joinMeta(id uint32, runs []run) (*Joined, error) {
	if len(runs) == 0 {
		return nil, errors.New("samples: nothing to join")
	}
	j := &Joined{Responder: id, Headers: map[Role]Header{}, Clocks: map[string]Clock{}, Counters: map[Role]Counters{}, Threads: map[Role]ThreadUsage{}, Stopped: map[Role]string{}}
	j.Header = runs[0].f.Header
	for _, r := range runs {
		if r.f.Header.Role == RoleSender {
			j.Header = r.f.Header
		}
	}
	j.Responders = j.Header.ResponderCount()
	for _, r := range runs {
		h := r.f.Header
		if r.other {
			continue // another responder's
		}
		if h.RunID != j.Header.RunID || h.ArmIndex != j.Header.ArmIndex || h.Round != j.Header.Round {
			return nil, fmt.Errorf("samples: %s file is run %s arm %d round %d, %s file is run %s arm %d round %d",
				h.Role, h.RunID, h.ArmIndex, h.Round, j.Header.Role, j.Header.RunID, j.Header.ArmIndex, j.Header.Round)
		}
		if slices.Contains(j.Roles, h.Role) {
			return nil, fmt.Errorf("samples: two %s files for one round", h.Role)
		}
		j.Roles = append(j.Roles, h.Role)
		j.Headers[h.Role] = h
		for _, c := range r.f.Stamps() {
			j.Present[c] = true
			if ck, ok := h.Clocks[c.String()]; ok {
				j.Clocks[c.String()] = ck
			}
		}
	}
	return j, nil
}

// footers adds what the runs' footers say: counters, thread use, stops.
func (j *Joined) footers(runs []run) {
	for _, r := range runs {
		role, foot := r.f.Header.Role, r.f.Footer
		if foot == nil || r.other {
			continue
		}
		j.Counters[role] = foot.CountersOf(j.Responder)
		if foot.Thread != nil {
			j.Threads[role] = *foot.Thread
		}
		if foot.Stopped != "" {
			j.Stopped[role] = foot.Stopped
		}
	}
}

// mergeStamps copies r's responder, flags and the stamps of columns cols into d.
func mergeStamps(d, r *Record, cols []Stamp) {
	d.Responder = r.Responder
	d.Flags |= r.Flags
	for _, c := range cols {
		if r.T[c] != 0 {
			d.T[c] = r.T[c]
		}
	}
}

// dupSeq: every writer records a sequence once, so a second record is
// damage, and which of the two is right is unknowable.
func dupSeq(f *File, seq uint64) error {
	return fmt.Errorf("samples: %s file has sequence %d twice (damaged file)", f.Header.Role, seq)
}

// responderCount is how many responders a round's files say answered:
// the sender's and capture's count, or the highest responder file's id.
func responderCount(runs []run) int {
	n := 1
	for _, r := range runs {
		switch h := r.f.Header; h.Role {
		case RoleResponder:
			n = max(n, int(h.ResponderID)+1)
		default:
			n = max(n, h.ResponderCount())
		}
	}
	return n
}

// roundFiles lists the sample files of a round directory — sender,
// responder (0), capture, then the other responders' in name order — or
// names the one file path is.
func roundFiles(path string) (names []string, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	for _, r := range Roles {
		p := filepath.Join(path, FileName(r))
		if ok, err := present(p); err != nil {
			return nil, err
		} else if ok {
			names = append(names, p)
		}
	}
	others, err := filepath.Glob(filepath.Join(path, string(RoleResponder)+"-*.samples"))
	if err != nil {
		return nil, err
	}
	slices.Sort(others)
	for _, p := range others {
		if _, err := present(p); err != nil {
			return nil, err
		}
	}
	names = append(names, others...)
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: no sample files (want %s, %s or %s)", path,
			FileName(RoleSender), FileName(RoleResponder), FileName(RoleCapture))
	}
	return names, nil
}

// present reports whether a round has sample file p: false when nothing
// has that name, an error when something that cannot be read does (a
// dangling symlink): never a role silently absent.
func present(p string) (bool, error) {
	_, err := os.Stat(p)
	if target, lerr := os.Readlink(p); err != nil && lerr == nil {
		return false, fmt.Errorf("%s is a symlink to %s, which cannot be read (%w): fix or remove the link", p, target, err)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// SourceLabel is the short source text of a clock: "hw:eth1:phc0", "sw",
// "sw:sched" (a software TX stamp taken before the qdisc), "user".
func (c Clock) SourceLabel() string {
	switch {
	case c.Source == "hw":
		return fmt.Sprintf("hw:%s:phc%d", c.Iface, c.PHCIndex)
	case c.Point != "":
		return c.Source + ":" + c.Point
	}
	return c.Source
}

// WriteCSV prints one row per sequence: seq, flags, then for every stamp
// column the value in ns (empty when missing) and its source.
func (j *Joined) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	head := []string{"seq", "flags"}
	var cols []Stamp
	for s := Stamp(0); s < NumStamps; s++ {
		if j.Present[s] {
			cols = append(cols, s)
			head = append(head, s.String()+"_ns", s.String()+"_src")
		}
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	row := make([]string, len(head))
	for i := range j.Records {
		r := &j.Records[i]
		row[0] = strconv.FormatUint(r.Seq, 10)
		row[1] = strconv.FormatUint(uint64(r.Flags), 10)
		for k, s := range cols {
			row[2+2*k], row[3+2*k] = "", ""
			if r.T[s] != 0 {
				row[2+2*k] = strconv.FormatInt(r.T[s], 10)
				row[3+2*k] = j.Clocks[s.String()].SourceLabel()
			}
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
