package samples

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

func senderFile(n int) (Header, []Record) {
	h := Header{Role: RoleSender, RunID: "00000000000000aa", Arm: "base", Round: 1, Warmup: 2,
		Clocks: map[string]Clock{"tx_sw": {Source: "sw", Clock: "CLOCK_REALTIME"}, "rx_sw": {Source: "sw", Clock: "CLOCK_REALTIME"}}}
	var recs []Record
	for i := 0; i < n; i++ {
		var r Record
		r.Seq = uint64(i)
		r.T[Due] = int64(1000 + i)
		r.T[TxSW] = int64(1100 + i)
		if i != 3 {
			r.T[RxSW] = int64(1500 + i)
		}
		recs = append(recs, r)
	}
	return h, recs
}

func TestRoundTrip(t *testing.T) {
	h, recs := senderFile(10)
	var buf bytes.Buffer
	thread := &ThreadUsage{WallNS: 2e9, CPUNS: 1.5e9, Voluntary: 10, Involuntary: 400}
	if err := Write(&buf, h, recs, Footer{Counters: Counters{Sent: 10, Lost: 1}, Thread: thread}); err != nil {
		t.Fatal(err)
	}
	f, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if f.Footer.Thread == nil || *f.Footer.Thread != *thread {
		t.Errorf("footer thread usage %+v, want %+v", f.Footer.Thread, thread)
	}
	if got, want := f.Footer.Thread.String(), "on CPU 75.0 %, preempted 200/s, blocked 5/s over 2.0 s (getrusage RUSAGE_THREAD)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if (ThreadUsage{}).OnCPU() != 0 || (ThreadUsage{}).PerSecond(5) != 0 {
		t.Error("a usage without a span must give 0, not divide by zero")
	}
	if f.Header.FormatVersion != FormatVersion || f.Header.Role != RoleSender || len(f.Header.Columns) != 7 {
		t.Fatalf("header %+v", f.Header)
	}
	if len(f.Records) != 10 || f.Records[5] != recs[5] || f.Footer.Counters.Lost != 1 || f.Footer.Records != 10 {
		t.Fatalf("records/footer mismatch: %+v %+v", f.Records[5], f.Footer)
	}
	// A column the role does not record is not stored.
	recs[0].T[CapReqSW] = 99
	buf.Reset()
	Write(&buf, h, recs, Footer{})
	f, _ = Read(&buf)
	if f.Records[0].T[CapReqSW] != 0 {
		t.Fatal("capture column leaked into a sender file")
	}
}

func TestTruncatedAndCorrupt(t *testing.T) {
	h, recs := senderFile(10)
	var buf bytes.Buffer
	Write(&buf, h, recs, Footer{})
	full := buf.Bytes()
	recLen := recordFixed + 8*7
	// Cut in the middle of record 4: records 0..3 survive.
	hdrEnd := 8 + 4 + int(binary.LittleEndian.Uint32(full[8:12])) + 8
	cut := full[:hdrEnd+4*recLen+10]
	f, err := Read(bytes.NewReader(cut))
	if !errors.Is(err, ErrTruncated) || f == nil || len(f.Records) != 4 {
		t.Fatalf("truncated: err=%v records=%d", err, len(f.Records))
	}
	// Flip one record byte: the CRC catches it.
	bad := bytes.Clone(full)
	bad[hdrEnd+5] ^= 0xff
	if _, err := Read(bytes.NewReader(bad)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("crc: %v", err)
	}
	if _, err := Read(strings.NewReader("hello world, not samples")); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("magic: %v", err)
	}
	// Future format version is refused, with the version in the text.
	h2 := bytes.Replace(full, []byte(`"format_version":`+strconv.Itoa(FormatVersion)), []byte(`"format_version":9`), 1)
	if _, err := Read(bytes.NewReader(h2)); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "version 9") {
		t.Fatalf("version: %v", err)
	}
}

func TestJoinDirAndCSV(t *testing.T) {
	dir := t.TempDir()
	h, recs := senderFile(5)
	if err := WriteFile(filepath.Join(dir, FileName(RoleSender)), h, recs, Footer{}); err != nil {
		t.Fatal(err)
	}
	rh := Header{Role: RoleResponder, RunID: h.RunID, Round: 1,
		Clocks: map[string]Clock{"req_rx_sw": {Source: "sw", Clock: "CLOCK_REALTIME"}}}
	var rr []Record
	for i := 4; i >= 0; i-- { // out of order on purpose
		var r Record
		r.Seq = uint64(i)
		r.T[ReqRxSW] = int64(1200 + i)
		rr = append(rr, r)
	}
	WriteFile(filepath.Join(dir, FileName(RoleResponder)), rh, rr, Footer{Counters: Counters{Foreign: 2}})
	j, err := JoinDir(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(j.Records) != 5 || j.Records[2].T[ReqRxSW] != 1202 || j.Records[2].T[TxSW] != 1102 || j.Counters[RoleResponder].Foreign != 2 {
		t.Fatalf("join: %+v", j.Records[2])
	}
	var out bytes.Buffer
	if err := j.WriteCSV(&out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	head := strings.Split(lines[0], ",")
	if len(head) != 2+2*13 || head[0] != "seq" || head[2] != "due_ns" || head[3] != "due_src" {
		t.Fatalf("csv head %q", lines[0])
	}
	row := strings.Split(lines[4], ",") // seq 3: reply lost
	get := func(col string) string {
		for i, h := range head {
			if h == col {
				return row[i]
			}
		}
		t.Fatalf("no column %s", col)
		return ""
	}
	if get("seq") != "3" || get("tx_sw_ns") != "1103" || get("tx_sw_src") != "sw" || get("req_rx_sw_ns") != "1203" ||
		get("rx_sw_ns") != "" || get("rx_sw_src") != "" || get("tx_hw_ns") != "" {
		t.Fatalf("csv row for lost seq 3: %q", lines[4])
	}
	// Mismatched runs refuse to join.
	rh.RunID = "00000000000000bb"
	WriteFile(filepath.Join(dir, FileName(RoleResponder)), rh, rr, Footer{})
	if _, err := JoinDir(dir, 0); err == nil || !strings.Contains(err.Error(), "run") {
		t.Fatalf("mismatch: %v", err)
	}
	if _, err := JoinDir(filepath.Join(dir, "nope"), 0); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
}

func FuzzRead(f *testing.F) {
	h, recs := senderFile(3)
	var buf bytes.Buffer
	Write(&buf, h, recs, Footer{})
	f.Add(buf.Bytes())
	f.Add(buf.Bytes()[:40])
	f.Add([]byte("RIGSMPL\n\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Read(bytes.NewReader(b))
		if err == nil && file.Footer == nil {
			t.Fatal("nil error without footer")
		}
		if err != nil && !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("unclassified error %v", err)
		}
	})
}

func TestTxColumns(t *testing.T) {
	recs := make([]Record, 3)
	recs[0].T[RepTxUser] = 10 // sent, no stamp yet
	recs[1].T[RepTxUser] = 20 // sent, sw stamp only
	recs[1].T[RepTxSW] = 21
	// recs[2]: never sent: awaits nothing
	c := ResponderTx
	if n := c.Awaiting(recs, WantSW); n != 1 {
		t.Fatalf("software only: %d awaiting, want 1", n)
	}
	if n := c.Awaiting(recs, WantSW|WantHW); n != 2 {
		t.Fatalf("with hardware: %d awaiting, want 2", n)
	}
	if !c.File(recs, 0, 11, 0) || !c.File(recs, 1, 0, 99) || c.File(recs, 3, 1, 1) {
		t.Fatal("File: key range")
	}
	if recs[0].T[RepTxSW] != 11 || recs[1].T[RepTxSW] != 21 || recs[1].T[RepTxHW] != 99 {
		t.Fatalf("filed stamps %v %v", recs[0].T, recs[1].T)
	}
	if n := c.Awaiting(recs, WantSW|WantHW); n != 1 { // recs[0] still lacks hw
		t.Fatalf("after filing: %d awaiting, want 1", n)
	}
	if SenderTx.Awaiting(recs, WantSW|WantHW) != 0 {
		t.Fatal("sender columns confused with the responder's")
	}
	if n := c.Awaiting(recs, TxWanted(false, false)); n != 0 {
		t.Fatalf("timestamps off: %d awaiting, want 0", n)
	}
	if TxWanted(true, false) != WantSW || TxWanted(false, true) != WantHW {
		t.Fatal("TxWanted")
	}
}

// TestLegacyCaptureColumns: files written before the capture kept both of
// its clocks had one cap_req/cap_rep pair whose header clock said hw or
// sw; they read into the matching column.
func TestLegacyCaptureColumns(t *testing.T) {
	for _, src := range []string{"sw", "hw"} {
		ck := Clock{Source: src, Clock: "CLOCK_REALTIME"}
		if src == "hw" {
			ck = Clock{Source: "hw", Clock: "phc", Iface: "cap0", PHCIndex: 1}
		}
		var b bytes.Buffer
		h := Header{Role: RoleCapture, RunID: "00000000000000aa", Columns: []string{"cap_req_" + src, "cap_rep_" + src},
			Clocks: map[string]Clock{"cap_req_" + src: ck, "cap_rep_" + src: ck}}
		var r Record
		r.Seq, r.T[CapReqSW], r.T[CapRepSW], r.T[CapReqHW], r.T[CapRepHW] = 4, 10, 20, 10, 20
		if err := Write(&b, h, []Record{r}, Footer{}); err != nil {
			t.Fatal(err)
		}
		// Rewrite the header as an older rig wrote it (CRCs recomputed).
		old := rebuild(t, b.Bytes(), FormatVersion, func(h string) string {
			h = strings.ReplaceAll(h, `"cap_req_`+src+`"`, `"cap_req"`)
			return strings.ReplaceAll(h, `"cap_rep_`+src+`"`, `"cap_rep"`)
		}, nil)
		f, err := Read(bytes.NewReader(old))
		if err != nil {
			t.Fatal(err)
		}
		req, rep := CapReqSW, CapRepSW
		if src == "hw" {
			req, rep = CapReqHW, CapRepHW
		}
		if got := f.Records[0]; got.T[req] != 10 || got.T[rep] != 20 || got.T[CapReqSW]+got.T[CapReqHW] != 10 {
			t.Fatalf("%s: %+v", src, got)
		}
		if c := f.Header.Clocks[req.String()]; c.Source != src || f.Header.Columns[0] != req.String() {
			t.Fatalf("%s: header %+v", src, f.Header)
		}
	}
}

// rebuild re-encodes a file written by Write with its header and footer
// JSON edited and every CRC recomputed: damage a CRC cannot catch, which
// the reader must refuse on its own. version 1 leaves out the trailing CRC;
// versions 1 and 2 the records' responder ids.
func rebuild(t *testing.T, full []byte, version int, editHeader, editFooter func(string) string) []byte {
	t.Helper()
	hl := int(binary.LittleEndian.Uint32(full[8:12]))
	hj := string(full[12 : 12+hl])
	rest := full[12+hl:]
	count := binary.LittleEndian.Uint64(rest[:8])
	fm := bytes.Index(rest, []byte("RIGFOOT\n"))
	recs := rest[8:fm]
	fl := int(binary.LittleEndian.Uint32(rest[fm+8 : fm+12]))
	fj := string(rest[fm+12 : fm+12+fl])
	hj = strings.Replace(hj, `"format_version":`+strconv.Itoa(FormatVersion), `"format_version":`+strconv.Itoa(version), 1)
	if version < 3 && count > 0 {
		n := len(recs) / int(count)
		var old []byte
		for i := 0; i < len(recs); i += n {
			old = append(old, recs[i:i+16]...)
			old = append(old, recs[i+recordFixed:i+n]...)
		}
		recs = old
		fj = regexp.MustCompile(`"crc32c":\d+`).ReplaceAllString(fj,
			`"crc32c":`+strconv.FormatUint(uint64(crc32.Checksum(recs, crc32.MakeTable(crc32.Castagnoli))), 10))
	}
	if editHeader != nil {
		hj = editHeader(hj)
	}
	if editFooter != nil {
		fj = editFooter(fj)
	}
	var b bytes.Buffer
	b.WriteString("RIGSMPL\n")
	binary.Write(&b, binary.LittleEndian, uint32(len(hj)))
	b.WriteString(hj)
	binary.Write(&b, binary.LittleEndian, count)
	b.Write(recs)
	b.WriteString("RIGFOOT\n")
	binary.Write(&b, binary.LittleEndian, uint32(len(fj)))
	b.WriteString(fj)
	if version >= 2 {
		binary.Write(&b, binary.LittleEndian, crc32.Checksum(b.Bytes(), crc32.MakeTable(crc32.Castagnoli)))
	}
	return b.Bytes()
}

// TestFileCRC: the trailing CRC covers the header and the footer (their
// counters and the stop reason were outside every CRC in version 1), and
// version-1 files are still read.
func TestFileCRC(t *testing.T) {
	h, recs := senderFile(10)
	var buf bytes.Buffer
	if err := Write(&buf, h, recs, Footer{Counters: Counters{Sent: 10, Lost: 1, KernelDrops: 7}, Stopped: "interrupted: x"}); err != nil {
		t.Fatal(err)
	}
	full := buf.Bytes()
	f, err := Read(bytes.NewReader(full))
	if err != nil || f.Footer.Counters.KernelDrops != 7 || f.Header.FormatVersion != FormatVersion {
		t.Fatalf("round trip: %v %+v", err, f)
	}
	for what, edit := range map[string][2]string{
		"footer counters":    {`"lost":1`, `"lost":9`},
		"footer stop reason": {`"stopped":"interrupted: x"`, `"stopped":"xxxxxxxxxxx: x"`},
		"header round":       {`"round":1`, `"round":9`},
	} {
		from, to := edit[0], edit[1]
		bad := bytes.Replace(full, []byte(from), []byte(to), 1)
		if bytes.Equal(bad, full) {
			t.Fatalf("%s: %q not in the file", what, from)
		}
		if _, err := Read(bytes.NewReader(bad)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s changed: err %v, want ErrCorrupt", what, err)
		}
	}
	// A version-2 file cut after its footer lacks the CRC: truncated.
	if _, err := Read(bytes.NewReader(full[:len(full)-4])); !errors.Is(err, ErrTruncated) {
		t.Errorf("no trailing CRC: %v", err)
	}
	// Versions 1 (no trailing CRC) and 2 (no responder ids) are still
	// read, their records as responder 0's.
	for _, v := range []int{1, 2} {
		old := rebuild(t, full, v, nil, nil)
		f, err = Read(bytes.NewReader(old))
		if err != nil || f.Footer == nil || f.Footer.Counters.Lost != 1 || len(f.Records) != 10 || !slices.Equal(f.Records, recs) {
			t.Fatalf("version %d: %v %+v", v, err, f)
		}
	}
}

// TestHeaderDamage: headers no writer produces are refused even when every
// CRC matches.
func TestHeaderDamage(t *testing.T) {
	h, recs := senderFile(4)
	var buf bytes.Buffer
	if err := Write(&buf, h, recs, Footer{}); err != nil {
		t.Fatal(err)
	}
	cols := `"columns":["due","tx_user","tx_sw","tx_hw","rx_hw","rx_sw","rx_user"]`
	if !bytes.Contains(buf.Bytes(), []byte(cols)) {
		t.Fatalf("header lacks %s", cols)
	}
	for what, edit := range map[string]func(string) string{
		"no columns":     func(s string) string { return strings.Replace(s, cols, `"columns":[]`, 1) },
		"a column twice": func(s string) string { return strings.Replace(s, `"tx_user","tx_sw"`, `"tx_user","tx_user"`, 1) },
		"warm-up -5":     func(s string) string { return strings.Replace(s, `"warmup":2`, `"warmup":-5`, 1) },
		"unknown role":   func(s string) string { return strings.Replace(s, `"role":"sender"`, `"role":"sendr"`, 1) },
	} {
		for _, v := range []int{1, 2} {
			bad := rebuild(t, buf.Bytes(), v, edit, nil)
			if _, err := Read(bytes.NewReader(bad)); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s (version %d): err %v, want ErrCorrupt", what, v, err)
			}
		}
	}
	if err := Write(io.Discard, Header{Role: RoleSender, Warmup: -1}, nil, Footer{}); err == nil {
		t.Error("Write accepted warm-up -1")
	}
}

// TestDuplicateRecords: a file with every record twice does not join.
func TestDuplicateRecords(t *testing.T) {
	h, recs := senderFile(5)
	twice := append(slices.Clone(recs), recs...)
	var buf bytes.Buffer
	if err := Write(&buf, h, twice, Footer{}); err != nil {
		t.Fatal(err)
	}
	f, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := JoinResponder(0, f); err == nil || !strings.Contains(err.Error(), "sequence 0 twice") {
		t.Fatalf("join of a file with every record twice: %v", err)
	}
	// The same sequence in two roles' files is the join's purpose.
	rh := Header{Role: RoleResponder, RunID: h.RunID, Round: h.Round}
	if _, err := JoinResponder(0, &File{Header: h, Records: recs}, &File{Header: rh, Records: recs}); err != nil {
		t.Fatal(err)
	}
}

// TestNotRegular: a FIFO (or a directory) named like a sample file is
// refused at once instead of blocking the reader.
func TestNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, FileName(RoleSender))
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := JoinDir(dir, 0)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") || !strings.Contains(err.Error(), fifo) {
			t.Fatalf("FIFO: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO named sender.samples blocked")
	}
	if _, err := ReadFile(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("directory: %v", err)
	}
}

// TestReplyLate: late is judged from the send to the wire arrival, not from
// the due time and not from when a stalled program read the reply.
func TestReplyLate(t *testing.T) {
	const ms = int64(time.Millisecond)
	var r Record
	r.T[Due] = 0
	r.T[TxUser], r.T[TxSW] = 800*ms, 800*ms+5000 // sent 800 ms late (a stall)
	r.T[RxSW], r.T[RxUser] = 803*ms, 803*ms+4000
	if ReplyLate(&r, 500*ms) {
		t.Error("a reply 3 ms after a late send was judged late (from due)")
	}
	r.T[TxUser], r.T[TxSW] = 1*ms, 1*ms+5000 // sent on time
	r.T[RxSW], r.T[RxUser] = 4*ms, 804*ms    // arrived at 4 ms, read after a stall
	if ReplyLate(&r, 500*ms) {
		t.Error("a reply that arrived 3 ms after its send was judged late (from the read)")
	}
	r.T[RxSW] = 0 // no kernel stamp: the user stamp decides
	if !ReplyLate(&r, 500*ms) {
		t.Error("without rx_sw, rx_user 803 ms after the send must be late")
	}
	r.T[RxSW], r.T[TxSW] = 600*ms, 0 // tx_user 1 ms → rx_sw 600 ms
	if !ReplyLate(&r, 500*ms) {
		t.Error("a reply 599 ms after the send must be late")
	}
	if ReplyLate(&Record{}, 0) {
		t.Error("no stamps: not late")
	}
}

// TestJoinMerge: files in sequence order (every writer's) are merged by
// sequence; a sequence only one file has still gets its record, the
// caller's files are left as they were, and a file out of order is sorted
// first, with the same result.
func TestJoinMerge(t *testing.T) {
	h, recs := senderFile(6)
	recs = slices.Delete(recs, 4, 5) // the sender file lacks 4 (truncated, damaged)
	rh := Header{Role: RoleResponder, RunID: h.RunID, Round: h.Round}
	var rr []Record
	for _, s := range []uint64{1, 2, 4, 5, 9} { // 9: beyond the sender's records
		var r Record
		r.Seq = s
		r.Flags = FlagDuplicate
		r.T[ReqRxSW] = int64(1200 + s)
		rr = append(rr, r)
	}
	snd, rsp := slices.Clone(recs), slices.Clone(rr)
	check := func(name string, j *Joined, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var seqs []uint64
		for _, r := range j.Records {
			seqs = append(seqs, r.Seq)
		}
		if !slices.Equal(seqs, []uint64{0, 1, 2, 3, 4, 5, 9}) {
			t.Fatalf("%s: sequences %v", name, seqs)
		}
		r4, r5, r0 := j.Records[4], j.Records[5], j.Records[0]
		if r4.T[ReqRxSW] != 1204 || r4.T[TxSW] != 0 || r5.T[TxSW] != 1105 || r5.T[ReqRxSW] != 1205 || r5.Flags != FlagDuplicate ||
			r0.Flags != 0 || r0.T[ReqRxSW] != 0 || j.Records[6].T[ReqRxSW] != 1209 {
			t.Fatalf("%s: records %+v", name, j.Records)
		}
	}
	j, err := JoinResponder(0, &File{Header: h, Records: recs}, &File{Header: rh, Records: rr})
	check("sorted", j, err)
	if !slices.Equal(recs, snd) || !slices.Equal(rr, rsp) {
		t.Fatal("Join changed its input files")
	}
	slices.Reverse(rr)
	j, err = JoinResponder(0, &File{Header: h, Records: recs}, &File{Header: rh, Records: rr})
	check("out of order", j, err)
	// Twice in a file, in order: damage, whatever the path.
	dup := append(slices.Clone(recs[:2]), recs[1:]...)
	if _, err := JoinResponder(0, &File{Header: h, Records: dup}); err == nil || !strings.Contains(err.Error(), "sequence 1 twice") {
		t.Fatalf("sequence twice in order: %v", err)
	}

	// JoinDir merges the files as it reads them: the same records, in
	// order or not, and a capture that also saw 9.
	dir := t.TempDir()
	write := func(hd Header, rs []Record) {
		t.Helper()
		if err := WriteFile(filepath.Join(dir, FileName(hd.Role)), hd, rs, Footer{}); err != nil {
			t.Fatal(err)
		}
	}
	write(h, recs)
	for _, order := range []string{"in order", "reversed"} {
		rs := slices.Clone(rsp)
		if order == "reversed" {
			slices.Reverse(rs)
		}
		write(rh, rs)
		j, err := JoinDir(dir, 0)
		check("JoinDir "+order, j, err)
	}
	ch := Header{Role: RoleCapture, RunID: h.RunID, Round: h.Round}
	var cr Record
	cr.Seq, cr.T[CapReqSW] = 9, 1309
	write(ch, []Record{cr})
	j, err = JoinDir(dir, 0)
	check("JoinDir with a capture", j, err)
	if last := j.Records[len(j.Records)-1]; last.T[CapReqSW] != 1309 || last.T[ReqRxSW] != 1209 {
		t.Fatalf("sequence 9 from two files the sender lacks: %+v", last)
	}
	os.Remove(filepath.Join(dir, FileName(RoleCapture)))
	for name, rs := range map[string][]Record{
		"in order":       {rsp[0], rsp[1], rsp[1], rsp[2]},
		"out of order":   {rsp[1], rsp[0], rsp[1]},
		"not in sender":  {rsp[4], rsp[4]},
		"first unsorted": nil,
	} {
		if rs == nil { // the first file out of order: it is read whole and sorted
			write(h, append(slices.Clone(recs[2:]), recs[:2]...))
			write(rh, rsp)
			j, err := JoinDir(dir, 0)
			check("JoinDir, first file "+name, j, err)
			write(h, recs)
			continue
		}
		write(rh, rs)
		if _, err := JoinDir(dir, 0); err == nil || !strings.Contains(err.Error(), "twice") || !strings.Contains(err.Error(), "responder") {
			t.Errorf("JoinDir, a responder sequence twice %s: %v", name, err)
		}
	}
}

// TestJoinDirMemory: joining a round read from disk costs the joined
// records and nothing else: every file is merged in as it is read (a
// 1 M-request round: 160 MB held, where reading the files and appending
// to a new slice through a map allocated 1.27 GB).
func TestJoinDirMemory(t *testing.T) {
	const n = 50_000
	dir := t.TempDir()
	h, recs := senderFile(n)
	if err := WriteFile(filepath.Join(dir, FileName(RoleSender)), h, recs, Footer{}); err != nil {
		t.Fatal(err)
	}
	rh := Header{Role: RoleResponder, RunID: h.RunID, Round: h.Round,
		Clocks: map[string]Clock{"req_rx_sw": {Source: "sw", Clock: "CLOCK_REALTIME"}}}
	var rr []Record
	for i := 0; i < n; i += 2 { // every other request reached it
		var r Record
		r.Seq = uint64(i)
		r.T[ReqRxSW] = int64(1200 + i)
		rr = append(rr, r)
	}
	if err := WriteFile(filepath.Join(dir, FileName(RoleResponder)), rh, rr, Footer{}); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	j, err := JoinDir(dir, 0)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(j.Records) != n || j.Records[4].T[ReqRxSW] != 1204 || j.Records[4].T[TxSW] != 1104 || j.Records[5].T[ReqRxSW] != 0 {
		t.Fatalf("joined %d records, record 4 %+v 5 %+v", len(j.Records), j.Records[4], j.Records[5])
	}
	// The joined records, and a byte each of slack; the files' records
	// are merged as they are read, never held.
	want := uint64(n) * uint64(unsafe.Sizeof(Record{})+1)
	if got := after.TotalAlloc - before.TotalAlloc; got > want+want/10 {
		t.Errorf("JoinDir allocated %d bytes, want about the joined records (%d): no copy, nothing else held", got, want)
	}
}

// TestJoinResponders: a round with two responders joins into one Joined
// per responder, each with every request and that responder's reply and
// file, its own counters, and a missing responder file shows as a join
// without that role.
func TestJoinResponders(t *testing.T) {
	dir := t.TempDir()
	h, _ := senderFile(0)
	h.Responders = 2
	var snd []Record
	for seq := range 5 {
		for id := range 2 {
			r := Record{Seq: uint64(seq), Responder: uint32(id)}
			r.T[TxSW] = int64(1000 * (seq + 1))
			if !(id == 1 && seq == 3) { // responder 1 lost seq 3
				r.T[RxSW] = r.T[TxSW] + int64(100*(id+1))
			}
			snd = append(snd, r)
		}
	}
	foot := Footer{Counters: Counters{Sent: 5, Received: 9, Lost: 1},
		PerResponder: []Counters{{Sent: 5, Received: 5}, {Sent: 5, Received: 4, Lost: 1}}}
	if err := WriteFile(filepath.Join(dir, FileName(RoleSender)), h, snd, foot); err != nil {
		t.Fatal(err)
	}
	for id := range uint32(2) {
		rh := Header{Role: RoleResponder, RunID: h.RunID, Round: h.Round, ResponderID: id, Host: "r" + strconv.Itoa(int(id))}
		var recs []Record
		for seq := range 5 {
			r := Record{Seq: uint64(seq), Responder: id}
			r.T[ReqRxSW] = int64(7 + id)
			recs = append(recs, r)
		}
		if err := WriteFile(filepath.Join(dir, ResponderFileName(id)), rh, recs, Footer{Counters: Counters{Sent: 5}}); err != nil {
			t.Fatal(err)
		}
	}
	// A record of another responder in a responder's file is refused.
	bad := Header{Role: RoleResponder, RunID: h.RunID, ResponderID: 1}
	if err := Write(io.Discard, bad, []Record{{Responder: 0}}, Footer{}); err == nil {
		t.Error("responder 1's file took responder 0's record")
	}
	if err := Write(io.Discard, h, []Record{{Responder: 2}}, Footer{}); err == nil {
		t.Error("a sender file of 2 responders took responder 2's record")
	}
	js, err := joinEvery(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(js) != 2 {
		t.Fatalf("%d joins, want 2", len(js))
	}
	for id, j := range js {
		if j.Responder != uint32(id) || j.Responders != 2 || len(j.Records) != 5 || j.Headers[RoleResponder].Host != "r"+strconv.Itoa(id) {
			t.Fatalf("join %d: responder %d of %d, %d records, host %q", id, j.Responder, j.Responders, len(j.Records), j.Headers[RoleResponder].Host)
		}
		for _, r := range j.Records {
			if r.Responder != uint32(id) || r.T[ReqRxSW] != int64(7+id) || (r.T[RxSW] != 0 && r.T[RxSW]-r.T[TxSW] != int64(100*(id+1))) {
				t.Fatalf("join %d: %+v", id, r)
			}
		}
		if c := j.Counters[RoleSender]; c != foot.PerResponder[id] {
			t.Errorf("join %d: sender counters %+v, want %+v", id, c, foot.PerResponder[id])
		}
	}
	os.Remove(filepath.Join(dir, ResponderFileName(1)))
	js, err = joinEvery(dir)
	if err != nil || len(js) != 2 || slices.Contains(js[1].Roles, RoleResponder) || !slices.Contains(js[0].Roles, RoleResponder) {
		t.Fatalf("responder 1's file missing: %v, %d joins", err, len(js))
	}
	if j, err := JoinDir(dir, 0); err != nil || j.Responder != 0 {
		t.Fatalf("JoinDir: %v", err)
	}
}

// joinEvery joins every responder of the round in dir, in id order.
func joinEvery(dir string) ([]*Joined, error) {
	var js []*Joined
	for id := 0; id == 0 || id < js[0].Responders; id++ {
		j, err := JoinDir(dir, uint32(id))
		if err != nil {
			return nil, err
		}
		js = append(js, j)
	}
	return js, nil
}

// TestJoinDirTruncated: a truncated file gives the join its records before
// the damage and one problem naming it, whether it ends in its records or
// before their count; the other files are joined whole.
func TestJoinDirTruncated(t *testing.T) {
	dir := t.TempDir()
	h, recs := senderFile(10)
	if err := WriteFile(filepath.Join(dir, FileName(RoleSender)), h, recs, Footer{}); err != nil {
		t.Fatal(err)
	}
	rh := Header{Role: RoleResponder, RunID: h.RunID, Round: h.Round}
	var rr []Record
	for i := range 10 {
		r := Record{Seq: uint64(i)}
		r.T[ReqRxSW] = int64(1200 + i)
		rr = append(rr, r)
	}
	var buf bytes.Buffer
	if err := Write(&buf, rh, rr, Footer{}); err != nil {
		t.Fatal(err)
	}
	full := buf.Bytes()
	hdrEnd := 8 + 4 + int(binary.LittleEndian.Uint32(full[8:12]))
	recLen := recordFixed + 8*len(ColumnsFor(RoleResponder))
	path := filepath.Join(dir, FileName(RoleResponder))
	for name, c := range map[string]struct{ cut, stamped int }{"in its records": {hdrEnd + 8 + 4*recLen + 10, 4}, "before the count": {hdrEnd + 3, 0}} {
		if err := os.WriteFile(path, full[:c.cut], 0o644); err != nil {
			t.Fatal(err)
		}
		j, err := JoinDir(dir, 0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		stamped := 0
		for _, r := range j.Records {
			if r.T[ReqRxSW] != 0 {
				stamped++
			}
		}
		if len(j.Records) != 10 || j.Records[9].T[TxSW] != 1109 || stamped != c.stamped || len(j.Problems) != 1 ||
			!strings.Contains(j.Problems[0], path) || !strings.Contains(j.Problems[0], "truncated") || !slices.Contains(j.Roles, RoleResponder) {
			t.Errorf("%s: %d records, %d stamped, problems %q, roles %v", name, len(j.Records), stamped, j.Problems, j.Roles)
		}
	}
}

// TestSetResponders: one responder is left out of the header (older
// readers, and ResponderCount, read 0 as 1); several are written.
func TestSetResponders(t *testing.T) {
	for n, want := range map[int]int{1: 0, 2: 2, 8: 8} {
		var h Header
		h.SetResponders(n)
		if h.Responders != want || h.ResponderCount() != n {
			t.Errorf("SetResponders(%d): Responders %d, ResponderCount %d; want %d, %d", n, h.Responders, h.ResponderCount(), want, n)
		}
	}
}

// TestTime: a sample file's times are UTC with nanoseconds, whatever zone
// the probe's host is in.
func TestTime(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("UTC+1", 3600))
	if got, want := Time(at), "2026-01-02T02:04:05.000000006Z"; got != want {
		t.Errorf("Time = %q, want %q", got, want)
	}
}

// TestRolesListed: Roles, which the round reader and the accounting walk,
// names every role that has columns, once.
func TestRolesListed(t *testing.T) {
	if len(Roles) != len(roleColumns) {
		t.Fatalf("Roles %v, roles with columns %d", Roles, len(roleColumns))
	}
	for _, r := range Roles {
		if ColumnsFor(r) == nil {
			t.Errorf("role %s has no columns", r)
		}
	}
}
