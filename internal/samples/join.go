package samples

import (
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

// Join merges the files of one round by sequence number: responder 0's
// join (JoinResponder).
func Join(files ...*File) (*Joined, error) { return JoinResponder(0, files...) }

// JoinResponder merges responder id's records of one round by sequence
// number: the sender's and the capture's records of that responder, and
// that responder's own file (the other responders' files are left out).
// The files must share the run id, arm and round; a role may appear once
// per responder. The files are not modified.
func JoinResponder(id uint32, files ...*File) (*Joined, error) {
	j, err := joinMeta(id, files)
	if err != nil {
		return nil, err
	}
	files = responderFiles(id, files)
	recs, ok, err := mergeSorted(files)
	if err != nil {
		return nil, err
	}
	if !ok {
		if recs, err = mergeAny(files); err != nil {
			return nil, err
		}
	}
	j.Records = recs
	return j, nil
}

// responderFiles is files without the other responders' own files, each
// holding responder id's records only: a file whose records are all id's
// (every file of a round with one responder) as it is, the others copies.
func responderFiles(id uint32, files []*File) []*File {
	out := make([]*File, 0, len(files))
	for _, f := range files {
		if f.Header.Role == RoleResponder && f.Header.ResponderID != id {
			continue
		}
		if !slices.ContainsFunc(f.Records, func(r Record) bool { return r.Responder != id }) {
			out = append(out, f)
			continue
		}
		g := *f
		g.Records = nil
		for _, r := range f.Records {
			if r.Responder == id {
				g.Records = append(g.Records, r)
			}
		}
		out = append(out, &g)
	}
	return out
}

// joinMeta checks that files belong to one round, a role once each, and
// gathers everything of responder id's join but the records.
func joinMeta(id uint32, files []*File) (*Joined, error) {
	if len(files) == 0 {
		return nil, errors.New("samples: nothing to join")
	}
	j := &Joined{Responder: id, Headers: map[Role]Header{}, Clocks: map[string]Clock{}, Counters: map[Role]Counters{}, Threads: map[Role]ThreadUsage{}, Stopped: map[Role]string{}}
	j.Header = files[0].Header
	for _, f := range files {
		if f.Header.Role == RoleSender {
			j.Header = f.Header
		}
	}
	j.Responders = j.Header.ResponderCount()
	for _, f := range files {
		h := f.Header
		if h.Role == RoleResponder && h.ResponderID != id {
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
		if f.Footer != nil {
			j.Counters[h.Role] = f.Footer.CountersOf(id)
			if f.Footer.Thread != nil {
				j.Threads[h.Role] = *f.Footer.Thread
			}
			if f.Footer.Stopped != "" {
				j.Stopped[h.Role] = f.Footer.Stopped
			}
		}
		for _, c := range f.Stamps() {
			j.Present[c] = true
			if ck, ok := h.Clocks[c.String()]; ok {
				j.Clocks[c.String()] = ck
			}
		}
	}
	return j, nil
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

// mergeSorted joins files whose records are each in strictly increasing
// sequence order (every writer's order) without a map or a sort: it counts
// the distinct sequences, allocates the joined slice once, and merges. ok
// is false when a file is out of order (mergeAny then joins); a sequence
// twice in one file is damage and an error.
func mergeSorted(files []*File) (recs []Record, ok bool, err error) {
	for _, f := range files {
		if ok, err := inOrder(f); !ok || err != nil {
			return nil, false, err
		}
	}
	var pos [8]int // one head per file: a round has at most three roles
	if len(files) > len(pos) {
		return nil, false, nil
	}
	// next returns the smallest sequence at the heads, and false when every
	// file is consumed.
	next := func() (uint64, bool) {
		var m uint64
		found := false
		for i, f := range files {
			if p := pos[i]; p < len(f.Records) && (!found || f.Records[p].Seq < m) {
				m, found = f.Records[p].Seq, true
			}
		}
		return m, found
	}
	// take merges the heads holding sequence m into d (nil: only count).
	take := func(m uint64, d *Record) {
		for i, f := range files {
			if p := pos[i]; p < len(f.Records) && f.Records[p].Seq == m {
				if d != nil {
					mergeStamps(d, &f.Records[p], f.Stamps())
				}
				pos[i]++
			}
		}
	}
	n := 0
	for m, more := next(); more; m, more = next() {
		take(m, nil)
		n++
	}
	pos = [8]int{}
	recs = make([]Record, n)
	for k := range recs {
		m, _ := next()
		recs[k].Seq = m
		take(m, &recs[k])
	}
	return recs, true, nil
}

// inOrder reports whether f's records are in strictly increasing sequence
// order; a sequence twice in a row is an error.
func inOrder(f *File) (bool, error) {
	for k := 1; k < len(f.Records); k++ {
		switch a, b := f.Records[k-1].Seq, f.Records[k].Seq; {
		case a == b:
			return false, dupSeq(f, b)
		case a > b:
			return false, nil
		}
	}
	return true, nil
}

// mergeAny joins files in any record order through a map by sequence.
func mergeAny(files []*File) ([]Record, error) {
	var recs []Record
	bySeq := map[uint64]int{}
	var seen []uint8 // per joined record: the files (bit per file) that had it
	for fi, f := range files {
		bit := uint8(1) << fi
		for i := range f.Records {
			r := &f.Records[i]
			k, ok := bySeq[r.Seq]
			if !ok {
				k = len(recs)
				bySeq[r.Seq] = k
				recs = append(recs, Record{Seq: r.Seq})
				seen = append(seen, 0)
			}
			if seen[k]&bit != 0 {
				return nil, dupSeq(f, r.Seq)
			}
			seen[k] |= bit
			mergeStamps(&recs[k], r, f.Stamps())
		}
	}
	slices.SortFunc(recs, func(a, b Record) int {
		switch {
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return 0
	})
	return recs, nil
}

// dupSeq: every writer records a sequence once, so a second record is
// damage, and which of the two is right is unknowable.
func dupSeq(f *File, seq uint64) error {
	return fmt.Errorf("samples: %s file has sequence %d twice (damaged file)", f.Header.Role, seq)
}

// errFanout stops JoinDir's merge as it reads: the round had several
// responders, whose records JoinDirAll separates.
var errFanout = errors.New("samples: a round of several responders")

// JoinDir reads and joins every role's file in a round directory (or the
// single sample file named by path): responder 0's join, the only one of a
// round with one responder (JoinDirAll gives every responder's).
// Truncated files still contribute their complete records; the damage is
// listed in Problems.
func JoinDir(path string) (*Joined, error) {
	names, more, err := roundFiles(path)
	if err != nil {
		return nil, err
	}
	if more > 0 {
		return joinDirFirst(path)
	}
	first, err := ReadFile(names[0])
	var problems []string
	if err != nil {
		if first == nil || !errors.Is(err, ErrTruncated) {
			return nil, err
		}
		problems = append(problems, err.Error())
	}
	if fanout(first.Header) {
		return joinDirFirst(path)
	}
	if ok, err := inOrder(first); err != nil || !ok {
		// Not a writer's order (damaged or made by hand): hold every file
		// and join through a map.
		return joinFiles(path, first, names[1:], problems)
	}
	// The first file's records become the joined slice; the others' are
	// merged into them as they are read, so a round holds one file's
	// records, not every file's and a copy (a million-request round:
	// 145 MB, not 435).
	files := []*File{first}
	base := first.Records
	seen := make([]uint8, len(base)) // per record: the files (bit per file) that had it
	var extra []*File                // per later file: its sequences the first lacks
	for i, n := range names[1:] {
		f, rest, err := mergeFile(n, base, seen, uint8(1)<<(i+1))
		if errors.Is(err, errFanout) {
			return joinDirFirst(path)
		}
		if err != nil {
			if f == nil || !errors.Is(err, ErrTruncated) {
				return nil, err
			}
			problems = append(problems, err.Error())
		}
		files = append(files, f)
		if len(rest) > 0 {
			extra = append(extra, &File{Header: f.Header, Records: rest, cols: f.cols})
		}
	}
	j, err := joinMeta(0, files)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	j.Records = base
	if len(extra) > 0 {
		if j.Records, err = addExtra(base, extra); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	j.Problems = problems
	return j, nil
}

// joinFiles reads the files after first whole and joins them all.
func joinFiles(path string, first *File, names, problems []string) (*Joined, error) {
	files, problems, err := readFiles(names, problems)
	if err != nil {
		return nil, err
	}
	j, err := Join(append([]*File{first}, files...)...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	j.Problems = problems
	return j, nil
}

// mergeFile reads the sample file at path and merges each record into the
// one of base (in sequence order, each sequence once) with its sequence,
// marking it in seen with bit; the records of sequences base lacks are
// returned in rest. Errors are ReadFile's (a truncated file is returned
// with the records merged so far) and a sequence twice in the file.
func mergeFile(path string, base []Record, seen []uint8, bit uint8) (f *File, rest []Record, err error) {
	fh, err := rundir.OpenRegular(path)
	if err != nil {
		return nil, nil, err
	}
	defer fh.Close()
	rr, err := openRecords(fh)
	if err != nil {
		if rr == nil {
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
		return rr.f, nil, fmt.Errorf("%s: %w", path, err)
	}
	f = rr.f
	if fanout(f.Header) {
		return nil, nil, errFanout
	}
	cols := f.Stamps()
	cmp := func(r Record, s uint64) int {
		switch {
		case r.Seq < s:
			return -1
		case r.Seq > s:
			return 1
		}
		return 0
	}
	p := 0 // where the next sequence is expected: files are in order
	var r Record
	for {
		ok, err := rr.next(&r)
		if err != nil {
			return f, rest, fmt.Errorf("%s: %w", path, err)
		}
		if !ok {
			break
		}
		q, found := p, p < len(base) && base[p].Seq == r.Seq
		switch {
		case found:
		case p == 0 || r.Seq > base[p-1].Seq:
			q, found = slices.BinarySearchFunc(base[p:], r.Seq, cmp)
			q += p
		default:
			q, found = slices.BinarySearchFunc(base[:p], r.Seq, cmp)
		}
		if !found {
			rest = append(rest, r)
			p = max(p, q)
			continue
		}
		if seen[q]&bit != 0 {
			return nil, nil, fmt.Errorf("%s: %w", path, dupSeq(f, r.Seq))
		}
		seen[q] |= bit
		mergeStamps(&base[q], &r, cols)
		p = q + 1
	}
	if err := rr.finish(); err != nil {
		return f, rest, fmt.Errorf("%s: %w", path, err)
	}
	return f, rest, nil
}

// addExtra adds to base (in order) the records of sequences it lacks,
// which later files had: those are joined among themselves, then merged
// in order.
func addExtra(base []Record, extra []*File) ([]Record, error) {
	for _, f := range extra {
		slices.SortFunc(f.Records, func(a, b Record) int {
			switch {
			case a.Seq < b.Seq:
				return -1
			case a.Seq > b.Seq:
				return 1
			}
			return 0
		})
	}
	add, _, err := mergeSorted(extra) // sorted now: ok
	if err != nil {
		return nil, err
	}
	out := make([]Record, 0, len(base)+len(add))
	i, k := 0, 0
	for i < len(base) || k < len(add) {
		if k == len(add) || (i < len(base) && base[i].Seq < add[k].Seq) {
			out = append(out, base[i])
			i++
		} else {
			out = append(out, add[k])
			k++
		}
	}
	return out, nil
}

// fanout reports whether a file with header h belongs to a round of
// several responders.
func fanout(h Header) bool {
	return h.ResponderCount() > 1 || (h.Role == RoleResponder && h.ResponderID != 0)
}

// joinDirFirst is responder 0's join of a round of several responders.
func joinDirFirst(path string) (*Joined, error) {
	js, err := JoinDirAll(path)
	if err != nil {
		return nil, err
	}
	return js[0], nil
}

// JoinDirResponder is responder id's join of a round directory, read
// once and joined for that responder only (JoinDirAll joins every one);
// a round without that responder is an error naming it.
func JoinDirResponder(path string, id uint32) (*Joined, error) {
	files, problems, err := readRound(path)
	if err != nil {
		return nil, err
	}
	if n := responderCount(files); int(id) >= n {
		return nil, fmt.Errorf("%s: no file or records of responder %d (the round has %d)", path, id, n)
	}
	j, err := JoinResponder(id, files...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	j.Problems = problems
	return j, nil
}

// JoinDirAll is JoinDir for every responder of the round, in id order:
// one Joined per responder the sender's file counts (else per responder
// file found). A responder without a file still gets its join (the
// sender's and the capture's records), which says the file is missing.
// It holds every file's records (JoinDir, for a round of one responder,
// merges them as it reads).
func JoinDirAll(path string) ([]*Joined, error) {
	files, problems, err := readRound(path)
	if err != nil {
		return nil, err
	}
	var js []*Joined
	for id := range responderCount(files) {
		j, err := JoinResponder(uint32(id), files...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		j.Problems = problems
		js = append(js, j)
	}
	return js, nil
}

// readRound reads every sample file of a round whole (roundFiles,
// readFiles).
func readRound(path string) ([]*File, []string, error) {
	names, _, err := roundFiles(path)
	if err != nil {
		return nil, nil, err
	}
	return readFiles(names, nil)
}

// responderCount is how many responders a round's files say answered:
// the sender's and capture's count, or the highest responder file's id.
func responderCount(files []*File) int {
	n := 1
	for _, f := range files {
		switch h := f.Header; h.Role {
		case RoleResponder:
			n = max(n, int(h.ResponderID)+1)
		default:
			n = max(n, h.ResponderCount())
		}
	}
	return n
}

// roundFiles lists the sample files of a round directory — sender,
// responder (0), capture, then the other responders' in name order, more
// of them — or names the one file path is.
func roundFiles(path string) (names []string, more int, err error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	if !st.IsDir() {
		return []string{path}, 0, nil
	}
	for _, r := range []Role{RoleSender, RoleResponder, RoleCapture} {
		p := filepath.Join(path, FileName(r))
		if ok, err := present(p); err != nil {
			return nil, 0, err
		} else if ok {
			names = append(names, p)
		}
	}
	others, err := filepath.Glob(filepath.Join(path, string(RoleResponder)+"-*.samples"))
	if err != nil {
		return nil, 0, err
	}
	slices.Sort(others)
	for _, p := range others {
		if _, err := present(p); err != nil {
			return nil, 0, err
		}
	}
	names = append(names, others...)
	if len(names) == 0 {
		return nil, 0, fmt.Errorf("%s: no sample files (want %s, %s or %s)", path,
			FileName(RoleSender), FileName(RoleResponder), FileName(RoleCapture))
	}
	return names, len(others), nil
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

// readFiles reads the sample files names whole; a truncated file still
// gives its complete records, its damage appended to problems.
func readFiles(names, problems []string) ([]*File, []string, error) {
	var files []*File
	for _, n := range names {
		f, err := ReadFile(n)
		if err != nil {
			if f == nil || !errors.Is(err, ErrTruncated) {
				return nil, nil, err
			}
			problems = append(problems, err.Error())
		}
		files = append(files, f)
	}
	return files, problems, nil
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
