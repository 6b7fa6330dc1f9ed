package samples

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"os"
	"slices"

	"github.com/rig-project/rig/internal/rundir"
)

var (
	fileMagic   = [8]byte{'R', 'I', 'G', 'S', 'M', 'P', 'L', '\n'}
	footerMagic = [8]byte{'R', 'I', 'G', 'F', 'O', 'O', 'T', '\n'}
	castagnoli  = crc32.MakeTable(crc32.Castagnoli)
)

// recordFixed is the bytes of a record before its stamps: seq, flags and
// responder id (version 3).
const recordFixed = 24

// Limits that keep a corrupt file from making the reader allocate wildly.
const (
	maxJSON    = 1 << 20
	maxRecords = 1 << 30
)

// ErrTruncated is wrapped by Read when the file ends early; the records
// before the damage are still returned.
var ErrTruncated = errors.New("sample file truncated")

// ErrCorrupt is wrapped by Read for a file that is not a valid sample file.
var ErrCorrupt = errors.New("not a valid rig sample file")

// File is a decoded sample file.
type File struct {
	Header  Header
	Footer  *Footer // nil when the file was truncated before the footer
	Records []Record
	cols    []Stamp
}

// Stamps returns the stamp columns the file carries: those of its header,
// or for a File built in memory without columns, those of its role.
func (f *File) Stamps() []Stamp {
	if f.cols == nil {
		if len(f.Header.Columns) == 0 {
			return ColumnsFor(f.Header.Role)
		}
		for _, n := range f.Header.Columns {
			if s, err := ParseStamp(n); err == nil {
				f.cols = append(f.cols, s)
			}
		}
	}
	return f.cols
}

// Write encodes one sample file. Columns and format fields of h are filled
// from the role when empty.
func Write(w io.Writer, h Header, recs []Record, foot Footer) error {
	cols, err := prepareHeader(&h)
	if err != nil {
		return err
	}
	for i := range recs {
		if id := recs[i].Responder; !h.holds(id) {
			return fmt.Errorf("samples: record %d: responder id %d in a %s file of %s", i, id, h.Role, h.respondersText())
		}
	}
	hj, err := json.Marshal(h)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	file := crc32.New(castagnoli) // every byte, for the trailing CRC
	out := io.MultiWriter(bw, file)
	out.Write(fileMagic[:])
	var u [8]byte
	binary.LittleEndian.PutUint32(u[:4], uint32(len(hj)))
	out.Write(u[:4])
	out.Write(hj)
	binary.LittleEndian.PutUint64(u[:], uint64(len(recs)))
	out.Write(u[:])
	crc := crc32.New(castagnoli)
	rec := make([]byte, recordFixed+8*len(cols))
	for i := range recs {
		r := &recs[i]
		binary.LittleEndian.PutUint64(rec[0:], r.Seq)
		binary.LittleEndian.PutUint64(rec[8:], uint64(r.Flags))
		binary.LittleEndian.PutUint64(rec[16:], uint64(r.Responder))
		for j, c := range cols {
			binary.LittleEndian.PutUint64(rec[recordFixed+8*j:], uint64(r.T[c]))
		}
		crc.Write(rec)
		out.Write(rec)
	}
	foot.Records = uint64(len(recs))
	foot.CRC32C = crc.Sum32()
	fj, err := json.Marshal(foot)
	if err != nil {
		return err
	}
	out.Write(footerMagic[:])
	binary.LittleEndian.PutUint32(u[:4], uint32(len(fj)))
	out.Write(u[:4])
	out.Write(fj)
	binary.LittleEndian.PutUint32(u[:4], file.Sum32())
	bw.Write(u[:4])
	return bw.Flush()
}

func prepareHeader(h *Header) ([]Stamp, error) {
	h.Format = "rig-samples"
	h.FormatVersion = FormatVersion
	if len(h.Columns) == 0 {
		for _, s := range ColumnsFor(h.Role) {
			h.Columns = append(h.Columns, s.String())
		}
	}
	if len(h.Columns) == 0 {
		return nil, fmt.Errorf("samples: role %q has no columns; set Header.Columns", h.Role)
	}
	if err := h.check(); err != nil {
		return nil, fmt.Errorf("samples: %v", err)
	}
	cols := make([]Stamp, len(h.Columns))
	for i, n := range h.Columns {
		s, err := ParseStamp(n)
		if err != nil {
			return nil, fmt.Errorf("samples: %v", err)
		}
		cols[i] = s
	}
	return cols, nil
}

// check refuses a header no writer produces: an unknown role, no columns
// (records would carry no stamp), a column twice, or a negative count.
func (h *Header) check() error {
	if _, ok := roleColumns[h.Role]; !ok {
		return fmt.Errorf("role %q (want sender, responder or capture)", h.Role)
	}
	if len(h.Columns) == 0 {
		return errors.New("header lists no columns")
	}
	for i, n := range h.Columns {
		if slices.Contains(h.Columns[:i], n) {
			return fmt.Errorf("column %q listed twice", n)
		}
	}
	switch {
	case h.Responders < 0:
		return fmt.Errorf("responders %d is not a count", h.Responders)
	case h.Warmup < 0:
		return fmt.Errorf("warm-up %d is not a count", h.Warmup)
	case h.Count < 0:
		return fmt.Errorf("count %d is not a count", h.Count)
	case h.Round < 0 || h.ArmIndex < 0:
		return fmt.Errorf("arm %d round %d: indexes are ≥ 0", h.ArmIndex, h.Round)
	}
	return nil
}

// holds reports whether a record of responder id belongs in a file with
// header h: a responder's file holds its own replies, the sender's and the
// capture's one slot per responder.
func (h *Header) holds(id uint32) bool {
	if h.Role == RoleResponder {
		return id == h.ResponderID
	}
	return int64(id) < int64(h.ResponderCount())
}

func (h *Header) respondersText() string {
	if h.Role == RoleResponder {
		return fmt.Sprintf("responder %d", h.ResponderID)
	}
	return fmt.Sprintf("%d responders", h.ResponderCount())
}

// WriteFile writes a sample file atomically (rundir.WriteAtomic), so a
// reader never sees half a file.
func WriteFile(path string, h Header, recs []Record, foot Footer) error {
	return rundir.WriteAtomic(path, func(w io.Writer) error { return Write(w, h, recs, foot) })
}

// Read decodes a sample file. On a truncated file it returns the complete
// records read so far together with an error wrapping ErrTruncated; on a
// file that is not a sample file (or of an unknown version), or whose
// CRCs do not match, an error wrapping ErrCorrupt (with the records read,
// when the damage is past them; Footer is then nil).
func Read(r io.Reader) (*File, error) {
	rr, err := openRecords(r)
	if err != nil {
		if rr == nil {
			return nil, err
		}
		return rr.f, err
	}
	f := rr.f
	f.Records = make([]Record, 0, recordsCap(r, rr.count, len(rr.rec)))
	for {
		var rec Record
		ok, err := rr.next(&rec)
		if err != nil {
			return f, err
		}
		if !ok {
			break
		}
		f.Records = append(f.Records, rec)
	}
	if err := rr.finish(); err != nil {
		return f, err
	}
	return f, nil
}

// recordReader decodes a sample file in three steps: the header
// (openRecords), the records one at a time (next), then the footer and the
// CRCs (finish). Read is the three in a row; JoinDir merges the records of
// a round's files as they are read, without holding them.
type recordReader struct {
	br       *hashReader
	f        *File // header and columns; Footer once finish succeeded
	count, i uint64
	fixed    int // bytes before the columns: 16, or recordFixed with a responder id (version 3)
	rec      []byte
	crc      hash.Hash32 // of the records
}

// openRecords reads the header and the record count. Errors are Read's;
// with ErrTruncated (no record count) the reader is returned too, its
// File holding the header.
func openRecords(r io.Reader) (*recordReader, error) {
	br := &hashReader{r: bufio.NewReaderSize(r, 1<<16), h: crc32.New(castagnoli)}
	var m [8]byte
	if _, err := io.ReadFull(br, m[:]); err != nil {
		return nil, fmt.Errorf("%w: no magic: %v", ErrCorrupt, err)
	}
	if m != fileMagic {
		return nil, fmt.Errorf("%w: bad magic %q", ErrCorrupt, m[:])
	}
	hj, err := readBlob(br)
	if err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrCorrupt, err)
	}
	f := &File{}
	if err := json.Unmarshal(hj, &f.Header); err != nil {
		return nil, fmt.Errorf("%w: header JSON: %v", ErrCorrupt, err)
	}
	if v := f.Header.FormatVersion; f.Header.Format != "rig-samples" || v < minFormatVersion || v > FormatVersion {
		return nil, fmt.Errorf("%w: format %q version %d (this rig reads rig-samples versions %d to %d)",
			ErrCorrupt, f.Header.Format, v, minFormatVersion, FormatVersion)
	}
	if err := f.Header.check(); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrCorrupt, err)
	}
	upgradeColumns(&f.Header)
	for _, n := range f.Header.Columns {
		s, err := ParseStamp(n)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		f.cols = append(f.cols, s)
	}
	fixed := recordFixed
	if f.Header.FormatVersion < 3 {
		fixed = 16 // no responder id: every record is responder 0's
	}
	rr := &recordReader{br: br, f: f, fixed: fixed, rec: make([]byte, fixed+8*len(f.cols)), crc: crc32.New(castagnoli)}
	if _, err := io.ReadFull(br, m[:]); err != nil {
		return rr, fmt.Errorf("%w: no record count", ErrTruncated)
	}
	rr.count = binary.LittleEndian.Uint64(m[:])
	if rr.count > maxRecords {
		return nil, fmt.Errorf("%w: record count %d", ErrCorrupt, rr.count)
	}
	return rr, nil
}

// next decodes the next record into r (only the file's columns are set);
// false after the last one. A short read is ErrTruncated.
func (rr *recordReader) next(r *Record) (bool, error) {
	if rr.i == rr.count {
		return false, nil
	}
	if _, err := io.ReadFull(rr.br, rr.rec); err != nil {
		return false, fmt.Errorf("%w: %d of %d records", ErrTruncated, rr.i, rr.count)
	}
	rr.crc.Write(rr.rec)
	*r = Record{Seq: binary.LittleEndian.Uint64(rr.rec[0:]), Flags: Flags(binary.LittleEndian.Uint64(rr.rec[8:]))}
	if rr.fixed == recordFixed {
		id := binary.LittleEndian.Uint64(rr.rec[16:])
		if id > math.MaxUint32 {
			return false, fmt.Errorf("%w: record %d: responder id %d", ErrCorrupt, rr.i, id)
		}
		r.Responder = uint32(id)
		if h := &rr.f.Header; !h.holds(r.Responder) {
			return false, fmt.Errorf("%w: record %d: responder id %d in a %s file of %s", ErrCorrupt, rr.i, id, h.Role, h.respondersText())
		}
	}
	for j, c := range rr.f.cols {
		r.T[c] = int64(binary.LittleEndian.Uint64(rr.rec[rr.fixed+8*j:]))
	}
	rr.i++
	return true, nil
}

// finish reads the footer after the last record and checks the counts
// and CRCs; on success the File gets its Footer.
func (rr *recordReader) finish() error {
	br := rr.br
	var m [8]byte
	if _, err := io.ReadFull(br, m[:]); err != nil {
		return fmt.Errorf("%w: footer missing", ErrTruncated)
	}
	if m != footerMagic {
		return fmt.Errorf("%w: bad footer magic", ErrCorrupt)
	}
	fj, err := readBlob(br)
	if err != nil {
		return fmt.Errorf("%w: footer: %v", ErrTruncated, err)
	}
	var foot Footer
	if err := json.Unmarshal(fj, &foot); err != nil {
		return fmt.Errorf("%w: footer JSON: %v", ErrCorrupt, err)
	}
	if foot.Records != rr.count || foot.CRC32C != rr.crc.Sum32() {
		return fmt.Errorf("%w: footer says %d records crc %08x, file has %d crc %08x",
			ErrCorrupt, foot.Records, foot.CRC32C, rr.count, rr.crc.Sum32())
	}
	if rr.f.Header.FormatVersion >= 2 {
		want := br.h.Sum32() // every byte consumed so far
		var u [4]byte
		if _, err := io.ReadFull(br, u[:]); err != nil {
			return fmt.Errorf("%w: file CRC missing after the footer", ErrTruncated)
		}
		if got := binary.LittleEndian.Uint32(u[:]); got != want {
			return fmt.Errorf("%w: file CRC %08x, content has %08x (header or footer damaged)", ErrCorrupt, got, want)
		}
	}
	rr.f.Footer = &foot
	return nil
}

// recordsCap is the capacity to allocate for count records of recLen
// bytes: all of them when r is a file big enough to hold them (growing a
// slice of a million records by appending allocates five times its size),
// else at most 1<<20 so that a corrupt count cannot make the reader
// allocate wildly.
func recordsCap(r io.Reader, count uint64, recLen int) uint64 {
	if f, ok := r.(interface{ Stat() (os.FileInfo, error) }); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > 0 {
			return min(count, uint64(st.Size())/uint64(recLen))
		}
	}
	return min(count, 1<<20)
}

// hashReader hashes exactly the bytes it hands out.
type hashReader struct {
	r io.Reader
	h hash.Hash32
}

func (h *hashReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	h.h.Write(p[:n])
	return n, err
}

func readBlob(br io.Reader) ([]byte, error) {
	var u [4]byte
	if _, err := io.ReadFull(br, u[:]); err != nil {
		return nil, err
	}
	n := binary.LittleEndian.Uint32(u[:])
	if n > maxJSON {
		return nil, fmt.Errorf("block of %d bytes exceeds %d", n, maxJSON)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(br, b); err != nil {
		return nil, err
	}
	return b, nil
}

// ReadFile reads a sample file from disk; errors name the file. Anything
// but a regular file is refused (rundir.OpenRegular).
func ReadFile(path string) (*File, error) {
	fh, err := rundir.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	f, err := Read(fh)
	if err != nil {
		return f, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}
