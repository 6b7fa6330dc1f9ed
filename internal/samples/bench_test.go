package samples

import (
	"path/filepath"
	"testing"
)

// writeBenchRound writes a round of n requests as the probes do: the
// sender's, the responder's and the capture's files, each in sequence
// order, every tenth reply lost.
func writeBenchRound(b *testing.B, dir string, n int) {
	b.Helper()
	h := Header{RunID: "00000000000000aa", Round: 1, Warmup: 2}
	roles := []Role{RoleSender, RoleResponder, RoleCapture}
	for _, role := range roles {
		h.Role = role
		recs := make([]Record, 0, n)
		for i := range n {
			if role != RoleSender && i%10 == 9 {
				continue
			}
			r := Record{Seq: uint64(i)}
			for _, c := range ColumnsFor(role) {
				r.T[c] = int64(1_000_000*i + int(c))
			}
			recs = append(recs, r)
		}
		if err := WriteFile(filepath.Join(dir, FileName(role)), h, recs, Footer{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJoinDir joins a round of a million requests read from disk
// (sender, responder and capture files): the join every round of a report
// goes through.
func BenchmarkJoinDir(b *testing.B) {
	const n = 1_000_000
	dir := b.TempDir()
	writeBenchRound(b, dir, n)
	b.ReportAllocs()
	for b.Loop() {
		j, err := JoinDir(dir, 0)
		if err != nil || len(j.Records) != n {
			b.Fatalf("%v, %d records", err, len(j.Records))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/request")
}
