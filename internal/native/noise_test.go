package native

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rig-project/rig/internal/testbin"
)

// encodeNoise writes a noise handoff as native/noise.c does.
func encodeNoise(fields []uint64, hist []uint64, gaps [][3]uint64) []byte {
	var b bytes.Buffer
	b.Write(noiseMagic[:])
	binary.Write(&b, binary.LittleEndian, [2]uint32{NoiseHandoffVersion, uint32(len(fields))})
	binary.Write(&b, binary.LittleEndian, fields)
	binary.Write(&b, binary.LittleEndian, hist)
	for _, g := range gaps {
		binary.Write(&b, binary.LittleEndian, g)
	}
	return b.Bytes()
}

// validNoise is a 1 s window with 10 gaps above 1 µs, 4 above 5, 2 above
// 20, 1 above 100 µs, three of them kept.
func validNoise() ([]uint64, []uint64, [][3]uint64) {
	f := make([]uint64, nFields)
	f[nCPU], f[nCounter], f[nRateTicks], f[nRateNS], f[nCheckTicks], f[nCheckNS] = 3, 1, 150e6, 50e6, 3e9, 1e9
	f[nStartMono], f[nEndMono], f[nStartReal], f[nEndReal] = 1e9, 2e9, 5e18, 5e18+1e9
	f[nReads], f[nTickPS], f[nMinReadPS], f[nTypicalReadPS] = 5e7, 333, 9000, 19800
	copy(f[nThresh0:], []uint64{1000, 5000, 20000, 100000})
	copy(f[nCount0:], []uint64{10, 4, 2, 1})
	f[nGapTotalNS], f[nLongestNS], f[nHistBaseNS], f[nHistBins], f[nKeep], f[nGaps] = 200000, 150000, 1000, 24, 3, 3
	f[nThreadOK], f[nThreadWall], f[nThreadCPU], f[nThreadInvol] = 1, 1e9, 99e7, 2
	hist := make([]uint64, 24)
	hist[0], hist[2], hist[4], hist[7] = 6, 2, 1, 1 // (1,2] (4,8] (16,32] (128,256] µs
	return f, hist, [][3]uint64{{1.1e9, 5e18 + 1e8, 30000}, {1.5e9, 5e18 + 5e8, 150000}, {1.9e9, 5e18 + 9e8, 8000}}
}

func TestReadNoise(t *testing.T) {
	n, err := ReadNoise(bytes.NewReader(encodeNoise(validNoise())))
	if err != nil {
		t.Fatal(err)
	}
	if n.CPU != 3 || n.Counter != "TSC" || n.Counts != [4]uint64{10, 4, 2, 1} || n.Thresholds[3] != 100000 || len(n.Hist) != 24 ||
		n.LongestNS != 150000 || n.Thread == nil || n.Thread.Involuntary != 2 || n.TypicalReadPS != 19800 {
		t.Errorf("read as %+v", n)
	}
	if len(n.Gaps) != 3 || n.Gaps[1] != (NoiseGap{StartMono: 1.5e9, StartReal: 5e18 + 5e8, NS: 150000}) {
		t.Errorf("gaps %+v", n.Gaps)
	}
	f, h, g := validNoise()
	if _, err := ReadNoise(bytes.NewReader(encodeNoise(append(f, 7, 8), h, g))); err != nil {
		t.Errorf("a later version's extra fields: %v", err)
	}
}

// TestReadNoiseFromProgram reads a handoff rig-noise-native wrote (200 ms
// on CPU 0 of a loaded VM): the file the program writes is the one the
// reader reads.
func TestReadNoiseFromProgram(t *testing.T) {
	b, err := os.ReadFile("testdata/noise-v1.bin")
	if err != nil {
		t.Fatal(err)
	}
	n, err := ReadNoise(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if n.Counter != "TSC" || n.Keep != 16 || n.Reads == 0 || n.TypicalReadPS == 0 || n.Thread == nil ||
		n.EndMono-n.StartMono < 200e6 || n.EndMono-n.StartMono > 300e6 {
		t.Fatalf("%+v", n)
	}
}

func TestReadNoiseRefuses(t *testing.T) {
	good := encodeNoise(validNoise())
	with := func(i int, v uint64) []byte { f, h, g := validNoise(); f[i] = v; return encodeNoise(f, h, g) }
	gaps := func(g ...[3]uint64) []byte {
		f, h, _ := validNoise()
		f[nGaps] = uint64(len(g))
		return encodeNoise(f, h, g)
	}
	for name, c := range map[string]struct {
		b    []byte
		want string
	}{
		"empty":      {nil, "unexpected EOF"},
		"magic":      {append([]byte("RIGNATV\n"), good[8:]...), "bad magic"},
		"newer":      {append(append(append([]byte{}, good[:8]...), 2, 0, 0, 0), good[12:]...), "version 2 is newer"},
		"few fields": {func() []byte { f, h, g := validNoise(); return encodeNoise(f[:nFields-1], h, g) }(), "header fields"},
		"truncated":  {good[:len(good)-1], "gap 2 of 3: unexpected EOF"},
		"trailing":   {append(append([]byte{}, good...), 0), "bytes after the last gap"},
		"counter":    {with(nCounter, 3), "counter 3 unknown"},
		"rate":       {with(nRateNS, 0), "no calibration"},
		"counts":     {with(nCount0+2, 5), "counts shrink"},
		"thresholds": {with(nThresh0+1, 1000), "thresholds must grow"},
		"histogram":  {with(nCount0, 11), "the histogram holds 10 gaps"},
		"bins":       {with(nHistBins, 65), "histogram bins"},
		"kept":       {with(nKeep, 2), "3 gaps kept"},
		"longest":    {with(nLongestNS, 0), "longest gap 0 ns"},
		"backwards":  {with(nEndMono, 5e8), "ends before it starts"},
		"short gap":  {gaps([3]uint64{1.1e9, 0, 999}), "outside 1000..150000"},
		"long gap":   {gaps([3]uint64{1.1e9, 0, 150001}), "outside 1000..150000"},
		"outside":    {gaps([3]uint64{2.1e9, 0, 5000}), "outside the loop"},
		"order":      {gaps([3]uint64{1.5e9, 0, 5000}, [3]uint64{1.2e9, 0, 5000}), "starts before gap 0"},
	} {
		if _, err := ReadNoise(bytes.NewReader(c.b)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// FuzzReadNoise: any input gives a handoff or an error, and a handoff
// holds what the format promises.
func FuzzReadNoise(f *testing.F) {
	f.Add(encodeNoise(validNoise()))
	if b, err := os.ReadFile("testdata/noise-v1.bin"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := ReadNoise(bytes.NewReader(b))
		if err != nil {
			return
		}
		var sum uint64
		for _, v := range n.Hist {
			sum += v
		}
		if sum != n.Counts[0] || uint64(len(n.Gaps)) > n.Keep || n.EndMono < n.StartMono {
			t.Fatalf("%+v", n)
		}
		for i := 1; i < NoiseThresholds; i++ {
			if n.Counts[i] > n.Counts[i-1] {
				t.Fatalf("counts %v", n.Counts)
			}
		}
		for i, g := range n.Gaps {
			if g.NS < n.Thresholds[0] || g.NS > n.LongestNS || g.StartMono < n.StartMono || g.StartMono > n.EndMono || i > 0 && g.StartMono < n.Gaps[i-1].StartMono {
				t.Fatalf("gap %d: %+v", i, g)
			}
		}
	})
}

func TestParseNoiseReady(t *testing.T) {
	r, err := ParseNoiseReady("ready tid=77 mlockall=12 counter=CNTVCT_EL0 later=1")
	if err != nil || r != (NoiseReady{TID: 77, MlockAll: syscall.ENOMEM, Counter: "CNTVCT_EL0"}) {
		t.Fatalf("%+v, %v", r, err)
	}
	for _, bad := range []string{"", "ready", "ready tid=1 mlockall=0", "ready tid=x mlockall=0 counter=TSC", "ready tid=1 tid=2 mlockall=0 counter=TSC",
		"refused no", "ready tid=1 mlockall=-1 counter=TSC"} {
		if _, err := ParseNoiseReady(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzParseNoiseReady: a line parses or is refused; a parsed one named
// every field.
func FuzzParseNoiseReady(f *testing.F) {
	f.Add("ready tid=77 mlockall=0 counter=TSC")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseNoiseReady(s)
		if err != nil {
			return
		}
		if r.Counter == "" || !strings.Contains(s, "tid=") || !strings.Contains(s, "mlockall=") {
			t.Fatalf("%q parsed as %+v", s, r)
		}
	})
}

// TestNoiseProgram runs rig-noise-native, as built under ASan and UBSan
// or as $RIG_NOISE_PROG says (a command line: the arm64 build under
// qemu-user, in .ci/test-arm64.sh), for 200 ms on this process's last CPU,
// and reads its handoff: the counter calibrated, a floor, the window's
// length, and what the format promises.
func TestNoiseProgram(t *testing.T) {
	testbin.Integration(t) // it spins a CPU
	argv := strings.Fields(os.Getenv("RIG_NOISE_PROG"))
	if len(argv) == 0 {
		argv = []string{filepath.Join(testbin.Native(t), "san", NoiseProgram)}
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	cpu := 0
	for c := range 1024 {
		if set.IsSet(c) {
			cpu = c
		}
	}
	r, w, _ := os.Pipe()
	out, err := os.CreateTemp(t.TempDir(), "noise")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(argv[0], append(argv[1:], "--ready-fd", "3", "--out-fd", "4", "--cpu", strconv.Itoa(cpu), "--duration-ns", "200000000", "--keep", "8")...)
	cmd.ExtraFiles = []*os.File{w, out}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v: %v\n%s", argv, err, &stderr)
	}
	w.Close()
	line, _ := bufio.NewReader(r).ReadString('\n')
	rd, err := ParseNoiseReady(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	out.Seek(0, 0)
	n, err := ReadNoise(out)
	if err != nil {
		t.Fatal(err)
	}
	hz := float64(n.RateTicks) / float64(n.RateNS) * 1e9
	if n.Counter != rd.Counter || n.CPU != cpu || n.Keep != 8 || n.TickPS == 0 || n.TypicalReadPS == 0 || n.Reads == 0 ||
		n.EndMono-n.StartMono < 199e6 || n.EndReal-n.StartReal < 199e6 || n.Thread == nil || n.StopSignal != 0 {
		t.Fatalf("ready %+v, handoff %+v", rd, n)
	}
	// CNTVCT_EL0 runs at CNTFRQ_EL0; the TSC has no rate to read.
	if n.Counter == "CNTVCT_EL0" && (n.NominalHz == 0 || hz/float64(n.NominalHz) < 0.99 || hz/float64(n.NominalHz) > 1.01) {
		t.Errorf("calibrated %.0f Hz, CNTFRQ_EL0 %d Hz", hz, n.NominalHz)
	}
	if n.Counter == "TSC" && n.NominalHz != 0 {
		t.Errorf("the TSC given a nominal rate %d", n.NominalHz)
	}
}
