package samples

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
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
// per responder.
func JoinResponder(id uint32, files ...*File) (*Joined, error) {
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
	bySeq := map[uint64]int{}
	var seen []uint8 // per joined record: the files (bit per role joined) that had it
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
		bit := uint8(1) << (len(j.Roles) - 1) // this file's mark in seen
		for i := range f.Records {
			r := &f.Records[i]
			if r.Responder != id {
				continue
			}
			k, ok := bySeq[r.Seq]
			if !ok {
				k = len(j.Records)
				bySeq[r.Seq] = k
				j.Records = append(j.Records, Record{Seq: r.Seq, Responder: id})
				seen = append(seen, 0)
			}
			if seen[k]&bit != 0 {
				// Every writer records a sequence once: a second record
				// is damage, and which of the two is right is unknowable.
				return nil, fmt.Errorf("samples: %s file has sequence %d twice (damaged file)", h.Role, r.Seq)
			}
			seen[k] |= bit
			d := &j.Records[k]
			d.Flags |= r.Flags
			for _, c := range f.Stamps() {
				if r.T[c] != 0 {
					d.T[c] = r.T[c]
				}
			}
		}
	}
	slices.SortFunc(j.Records, func(a, b Record) int {
		switch {
		case a.Seq < b.Seq:
			return -1
		case a.Seq > b.Seq:
			return 1
		}
		return 0
	})
	return j, nil
}

// JoinDir reads and joins every role's file in a round directory (or the
// single sample file named by path): responder 0's join, the only one of a
// round with one responder (JoinDirAll gives every responder's).
// Truncated files still contribute their complete records; the damage is
// listed in Problems.
func JoinDir(path string) (*Joined, error) {
	js, err := JoinDirAll(path)
	if err != nil {
		return nil, err
	}
	return js[0], nil
}

// JoinDirResponder is responder id's join of a round directory
// (JoinDirAll); a round without that responder is an error naming it.
func JoinDirResponder(path string, id uint32) (*Joined, error) {
	js, err := JoinDirAll(path)
	if err != nil {
		return nil, err
	}
	if int(id) >= len(js) {
		return nil, fmt.Errorf("%s: no file or records of responder %d (the round has %d)", path, id, len(js))
	}
	return js[id], nil
}

// JoinDirAll is JoinDir for every responder of the round, in id order:
// one Joined per responder the sender's file counts (else per responder
// file found). A responder without a file still gets its join (the
// sender's and the capture's records), which says the file is missing.
func JoinDirAll(path string) ([]*Joined, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	var names []string
	if st.IsDir() {
		for _, n := range []string{FileName(RoleSender), FileName(RoleResponder), FileName(RoleCapture)} {
			p := filepath.Join(path, n)
			if _, err := os.Stat(p); err == nil {
				names = append(names, p)
			}
		}
		more, err := filepath.Glob(filepath.Join(path, string(RoleResponder)+"-*.samples"))
		if err != nil {
			return nil, err
		}
		slices.Sort(more)
		names = append(names, more...)
		if len(names) == 0 {
			return nil, fmt.Errorf("%s: no sample files (want %s, %s or %s)", path,
				FileName(RoleSender), FileName(RoleResponder), FileName(RoleCapture))
		}
	} else {
		names = []string{path}
	}
	var files []*File
	var problems []string
	for _, n := range names {
		f, err := ReadFile(n)
		if err != nil {
			if f == nil || !errors.Is(err, ErrTruncated) {
				return nil, err
			}
			problems = append(problems, err.Error())
		}
		files = append(files, f)
	}
	n := 1
	for _, f := range files {
		switch h := f.Header; h.Role {
		case RoleResponder:
			n = max(n, int(h.ResponderID)+1)
		default:
			n = max(n, h.ResponderCount())
		}
	}
	var js []*Joined
	for id := range n {
		j, err := JoinResponder(uint32(id), files...)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		j.Problems = problems
		js = append(js, j)
	}
	return js, nil
}

// SourceLabel is the short source text of a clock: "hw:eth1:phc0", "sw",
// "user".
func (c Clock) SourceLabel() string {
	if c.Source == "hw" {
		return fmt.Sprintf("hw:%s:phc%d", c.Iface, c.PHCIndex)
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
