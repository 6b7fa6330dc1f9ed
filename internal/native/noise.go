package native

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"

	"github.com/rig-project/rig/internal/samples"
)

// The native engine's programs, which rig finds beside itself (Find).
const (
	SendProgram    = "rig-send-native"    // rig send's loop (native/send.c)
	RespondProgram = "rig-respond-native" // rig respond's loop (native/respond.c)
	NoiseProgram   = "rig-noise-native"   // the platform-noise probe's loop (native/noise.c)
)

// NoiseHandoffVersion is the noise handoff version read (native/noise.c writes it).
const NoiseHandoffVersion = 1

var noiseMagic = [8]byte{'R', 'I', 'G', 'N', 'O', 'I', 'S', '\n'}

// The noise handoff header's fields, in file order (native/rig.h's N_*).
const (
	nCPU = iota
	nFIFO
	nCounter
	nNominalHz
	nRateTicks
	nRateNS
	nCheckTicks
	nCheckNS
	nStartMono
	nEndMono
	nStartReal
	nEndReal
	nReads
	nTickPS
	nMinReadPS
	nTypicalReadPS
	nThresh0
	_
	_
	_
	nCount0
	_
	_
	_
	nGapTotalNS
	nLongestNS
	nHistBaseNS
	nHistBins
	nKeep
	nGaps
	nThreadOK
	nThreadWall
	nThreadCPU
	nThreadVol
	nThreadInvol
	nStopSignal
	nFields // version 1's count; a later version may add fields after them
)

// NoiseThresholds is how many gap thresholds the handoff counts above.
const NoiseThresholds = 4

// maxHistBins and maxKeep bound a damaged handoff's allocations.
const (
	maxHistBins = 64
	maxKeep     = 1 << 16
)

// Counters the loop reads (native/noise.c's COUNTER_*).
var noiseCounters = map[uint64]string{1: "TSC", 2: "CNTVCT_EL0"}

// NoiseGap is one of the longest gaps the loop saw.
type NoiseGap struct {
	StartMono int64  // CLOCK_MONOTONIC ns
	StartReal int64  // CLOCK_REALTIME ns
	NS        uint64 // its length
}

// Noise is what the noise probe's loop hands back (docs/formats.md#the-noise-handoff).
type Noise struct {
	CPU, FIFO int
	Counter   string // "TSC" or "CNTVCT_EL0"
	NominalHz uint64 // CNTFRQ_EL0; 0 for the TSC, which has none a program can read
	// RateTicks over RateNS of CLOCK_MONOTONIC_RAW is the calibration
	// every conversion used (before the loop); CheckTicks over CheckNS
	// is the same over the loop, a check of it.
	RateTicks, RateNS, CheckTicks, CheckNS uint64
	// The loop's first and last read.
	StartMono, EndMono, StartReal, EndReal int64
	// Reads is the number of intervals between two reads; MinReadPS and
	// TypicalReadPS the shortest and the mean of those not above the
	// smallest threshold (the detection floor); TickPS one counter tick.
	Reads, MinReadPS, TypicalReadPS, TickPS uint64
	// Counts[i] is the number of gaps above Thresholds[i] ns.
	Thresholds, Counts [NoiseThresholds]uint64
	GapTotalNS         uint64 // the gaps above the smallest threshold, summed
	LongestNS          uint64
	// Hist[k] counts the gaps with HistBaseNS·2^k < gap ≤ HistBaseNS·2^(k+1);
	// the last bin has no upper bound.
	HistBaseNS uint64
	Hist       []uint64
	Keep       uint64     // the loop kept the Keep longest gaps
	Gaps       []NoiseGap // by start
	Thread     *samples.ThreadUsage
	StopSignal int
}

// ReadNoise reads a noise handoff. It refuses a newer version than it
// knows, a header shorter than version 1's, and contents that break the
// format's promises: counts that grow with the threshold, a histogram that
// does not sum to the gaps above the smallest threshold, kept gaps out of
// order, outside the loop or shorter than that threshold.
func ReadNoise(r io.Reader) (*Noise, error) {
	br := bufio.NewReader(r)
	f, err := readHeader(br, noiseMagic, NoiseHandoffVersion, nFields, "noise handoff")
	if err != nil {
		return nil, err
	}
	n := &Noise{CPU: int(f[nCPU]), FIFO: int(f[nFIFO]), Counter: noiseCounters[f[nCounter]], NominalHz: f[nNominalHz],
		RateTicks: f[nRateTicks], RateNS: f[nRateNS], CheckTicks: f[nCheckTicks], CheckNS: f[nCheckNS],
		StartMono: int64(f[nStartMono]), EndMono: int64(f[nEndMono]), StartReal: int64(f[nStartReal]), EndReal: int64(f[nEndReal]),
		Reads: f[nReads], TickPS: f[nTickPS], MinReadPS: f[nMinReadPS], TypicalReadPS: f[nTypicalReadPS],
		GapTotalNS: f[nGapTotalNS], LongestNS: f[nLongestNS], HistBaseNS: f[nHistBaseNS], Keep: f[nKeep], StopSignal: int(f[nStopSignal])}
	copy(n.Thresholds[:], f[nThresh0:])
	copy(n.Counts[:], f[nCount0:])
	bad := func(format string, a ...any) (*Noise, error) {
		return nil, fmt.Errorf("noise handoff: "+format, a...)
	}
	switch {
	case n.Counter == "":
		return bad("counter %d unknown", f[nCounter])
	case f[nCPU] > 1<<20 || f[nFIFO] > 99 || f[nStopSignal] > 64 || f[nThreadOK] > 1:
		return bad("cpu %d, fifo %d, stop signal %d, thread figures %d: out of range", f[nCPU], f[nFIFO], f[nStopSignal], f[nThreadOK])
	case n.RateTicks == 0 || n.RateNS == 0 || n.TickPS == 0:
		return bad("no calibration (%d ticks in %d ns, one tick %d ps)", n.RateTicks, n.RateNS, n.TickPS)
	case n.EndMono < n.StartMono || n.EndReal < n.StartReal:
		return bad("the loop ends before it starts")
	case f[nHistBins] == 0 || f[nHistBins] > maxHistBins || n.HistBaseNS != n.Thresholds[0]:
		return bad("%d histogram bins from %d ns, want 1..%d from the smallest threshold (%d ns)", f[nHistBins], n.HistBaseNS, maxHistBins, n.Thresholds[0])
	case n.Keep == 0 || n.Keep > maxKeep || f[nGaps] > n.Keep || f[nGaps] > n.Counts[0]:
		return bad("%d gaps kept of %d, at most %d: out of range", f[nGaps], n.Counts[0], n.Keep)
	case (n.LongestNS == 0) != (n.Counts[0] == 0) || n.Counts[0] > 0 && n.LongestNS < n.Thresholds[0]:
		return bad("longest gap %d ns with %d gaps above %d ns", n.LongestNS, n.Counts[0], n.Thresholds[0])
	}
	for i := 1; i < NoiseThresholds; i++ {
		if n.Thresholds[i] <= n.Thresholds[i-1] || n.Counts[i] > n.Counts[i-1] {
			return bad("%d gaps above %d ns, %d above %d ns: thresholds must grow and counts shrink", n.Counts[i-1], n.Thresholds[i-1], n.Counts[i], n.Thresholds[i])
		}
	}
	if f[nThreadOK] == 1 {
		n.Thread = &samples.ThreadUsage{WallNS: int64(f[nThreadWall]), CPUNS: int64(f[nThreadCPU]),
			Voluntary: int64(f[nThreadVol]), Involuntary: int64(f[nThreadInvol])}
	}
	var sum uint64
	n.Hist = make([]uint64, f[nHistBins])
	if err := binary.Read(br, binary.LittleEndian, n.Hist); err != nil {
		return nil, fmt.Errorf("noise handoff: histogram: %w", short(err))
	}
	for _, v := range n.Hist {
		sum += v
	}
	if sum != n.Counts[0] {
		return bad("the histogram holds %d gaps, the count above %d ns is %d", sum, n.Thresholds[0], n.Counts[0])
	}
	var raw [24]byte
	for i := uint64(0); i < f[nGaps]; i++ {
		if _, err := io.ReadFull(br, raw[:]); err != nil {
			return nil, fmt.Errorf("noise handoff: gap %d of %d: %w", i, f[nGaps], short(err))
		}
		g := NoiseGap{StartMono: int64(binary.LittleEndian.Uint64(raw[0:])), StartReal: int64(binary.LittleEndian.Uint64(raw[8:])),
			NS: binary.LittleEndian.Uint64(raw[16:])}
		switch {
		case g.NS < n.Thresholds[0] || g.NS > n.LongestNS:
			return bad("gap %d: %d ns, outside %d..%d", i, g.NS, n.Thresholds[0], n.LongestNS)
		case g.StartMono < n.StartMono || g.StartMono > n.EndMono:
			return bad("gap %d starts at %d, outside the loop (%d..%d)", i, g.StartMono, n.StartMono, n.EndMono)
		case i > 0 && g.StartMono < n.Gaps[i-1].StartMono:
			return bad("gap %d starts before gap %d", i, i-1)
		}
		n.Gaps = append(n.Gaps, g)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return nil, errors.New("noise handoff: bytes after the last gap")
	}
	return n, nil
}

// readHeader reads a handoff's magic, version and header fields (at least
// min of them), refusing a newer version than version.
func readHeader(br *bufio.Reader, magic [8]byte, version uint32, min int, what string) ([]uint64, error) {
	var pre [16]byte
	if _, err := io.ReadFull(br, pre[:]); err != nil {
		return nil, fmt.Errorf("native %s: header: %w", what, short(err))
	}
	if [8]byte(pre[:8]) != magic {
		return nil, fmt.Errorf("native %s: bad magic: not a rig native %s", what, what)
	}
	v, n := binary.LittleEndian.Uint32(pre[8:]), binary.LittleEndian.Uint32(pre[12:])
	switch {
	case v > version:
		return nil, fmt.Errorf("native %s: version %d is newer than this rig reads (%d): use the rig built with the native program", what, v, version)
	case v < 1:
		return nil, fmt.Errorf("native %s: version %d", what, v)
	case n < uint32(min) || n > maxFields:
		return nil, fmt.Errorf("native %s: %d header fields, want %d..%d", what, n, min, maxFields)
	}
	f := make([]uint64, n)
	if err := binary.Read(br, binary.LittleEndian, f); err != nil {
		return nil, fmt.Errorf("native %s: header fields: %w", what, short(err))
	}
	return f, nil
}

// NoiseReady is the noise loop's ready line.
type NoiseReady struct {
	TID      int
	MlockAll syscall.Errno // 0: the program's memory is locked
	Counter  string
}

// ParseNoiseReady parses "ready tid=N mlockall=E counter=NAME"; fields it
// does not know are ignored.
func ParseNoiseReady(line string) (NoiseReady, error) {
	fields := strings.Fields(line)
	if len(fields) == 0 || fields[0] != "ready" {
		return NoiseReady{}, fmt.Errorf("native: %q is not a ready line", line)
	}
	var r NoiseReady
	seen := map[string]bool{}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		if seen[k] {
			return NoiseReady{}, fmt.Errorf("native: ready line gives %s twice", k)
		}
		seen[k] = true
		switch k {
		case "tid", "mlockall":
			n, err := strconv.ParseUint(v, 0, 31)
			if err != nil {
				return NoiseReady{}, fmt.Errorf("native: ready line %s=%q: want a number up to 2^31-1", k, v)
			}
			if k == "tid" {
				r.TID = int(n)
			} else {
				r.MlockAll = syscall.Errno(n)
			}
		case "counter":
			r.Counter = v
		}
	}
	if !seen["tid"] || !seen["mlockall"] || r.Counter == "" {
		return NoiseReady{}, fmt.Errorf("native: ready line lacks tid, mlockall or counter: %q", line)
	}
	return r, nil
}
