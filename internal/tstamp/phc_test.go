package tstamp

import (
	"errors"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

type fakePHC struct {
	cross        bool
	capsErr      error
	dev, sys     int64
	preciseErr   error
	ext          [][3]int64
	extErr       error
	alt          []int64
	basicErr     error
	extN, basicN int
}

func (f *fakePHC) CrossTimestamping() (bool, error) { return f.cross, f.capsErr }
func (f *fakePHC) Precise() (int64, int64, error)   { return f.dev, f.sys, f.preciseErr }
func (f *fakePHC) Extended(n int, out *[unix.PTP_MAX_SAMPLES][3]int64) error {
	f.extN = n
	if f.extErr != nil {
		return f.extErr
	}
	copy(out[:], f.ext)
	return nil
}
func (f *fakePHC) Basic(n int, out *[2*unix.PTP_MAX_SAMPLES + 1]int64) error {
	f.basicN = n
	if f.basicErr != nil {
		return f.basicErr
	}
	copy(out[:], f.alt)
	return nil
}

func TestPHCOffsetExtendedShortestWindow(t *testing.T) {
	f := &fakePHC{ext: [][3]int64{
		{1000, 5600, 1200}, // window 200
		{2000, 6540, 2080}, // window 80: the one to use; mid 2040 → offset 4500
		{3000, 7000, 2990}, // negative window: clock stepped, ignored
		{4000, 8600, 4100}, // window 100
	}}
	o, err := offset(f, 4)
	if err != nil {
		t.Fatal(err)
	}
	if o.Method != MethodExtended || o.Offset != 4500 || o.Window != 80 || o.At != 2040 || f.extN != 4 {
		t.Fatalf("offset %+v", o)
	}
	if !strings.Contains(o.Fallback, "no cross-timestamping") {
		t.Fatalf("fallback %q", o.Fallback)
	}
}

func TestPHCOffsetPrecise(t *testing.T) {
	f := &fakePHC{cross: true, dev: 10_000, sys: 7_000}
	o, err := offset(f, 5)
	if err != nil || o.Method != MethodPrecise || o.Offset != 3000 || o.Window != 0 || f.extN != 0 {
		t.Fatalf("offset %+v, %v", o, err)
	}
	// Cross-timestamping advertised but refused: fall to EXTENDED.
	f = &fakePHC{cross: true, preciseErr: unix.EOPNOTSUPP, ext: [][3]int64{{0, 50, 10}}}
	o, err = offset(f, 1)
	if err != nil || o.Method != MethodExtended || o.Offset != 45 || !strings.Contains(o.Fallback, "EOPNOTSUPP") {
		t.Fatalf("offset %+v, %v", o, err)
	}
	// Other errors are not papered over.
	f = &fakePHC{cross: true, preciseErr: unix.EIO}
	if _, err := offset(f, 1); !errors.Is(err, unix.EIO) {
		t.Fatalf("EIO: %v", err)
	}
}

func TestPHCOffsetBasic(t *testing.T) {
	// sys0 phc0 sys1 phc1 sys2: windows 30 (sys0..sys1) and 10 (sys1..sys2).
	f := &fakePHC{extErr: unix.ENOTTY, alt: []int64{100, 1115, 130, 1139, 140}}
	o, err := offset(f, 2)
	if err != nil {
		t.Fatal(err)
	}
	if o.Method != MethodBasic || o.Window != 10 || o.Offset != 1139-135 || f.basicN != 2 {
		t.Fatalf("offset %+v", o)
	}
	if !strings.Contains(o.Fallback, MethodExtended+": ENOTTY") {
		t.Fatalf("fallback %q", o.Fallback)
	}
	f = &fakePHC{extErr: unix.EOPNOTSUPP, basicErr: unix.EOPNOTSUPP}
	if _, err := offset(f, 2); !errors.Is(err, unix.EOPNOTSUPP) {
		t.Fatalf("all unsupported: %v", err)
	}
	f = &fakePHC{extErr: unix.EBUSY}
	if _, err := offset(f, 2); !errors.Is(err, unix.EBUSY) || f.basicN != 0 {
		t.Fatalf("EBUSY must not fall back: %v", err)
	}
}

func TestPHCOffsetBadInput(t *testing.T) {
	if _, err := offset(&fakePHC{}, 0); err == nil {
		t.Fatal("0 samples accepted")
	}
	if _, err := offset(&fakePHC{}, 26); err == nil {
		t.Fatal("26 samples accepted")
	}
	// A failed GETCAPS skips PRECISE and falls through to EXTENDED,
	// saying why (old code aborted the whole offset).
	o, err := offset(&fakePHC{capsErr: unix.EIO, cross: true, preciseErr: unix.EIO, ext: [][3]int64{{100, 600, 300}}}, 1)
	if err != nil || o.Method != MethodExtended || !strings.Contains(o.Fallback, "PTP_CLOCK_GETCAPS: EIO") || o.Offset != 400 {
		t.Fatalf("GETCAPS failure: %+v, %v", o, err)
	}
	f := &fakePHC{ext: [][3]int64{{10, 0, 5}, {10, 0, 9}}}
	if _, err := offset(f, 2); err == nil {
		t.Fatal("all-negative windows accepted")
	}
}

func TestOpenPHCMissing(t *testing.T) {
	_, err := OpenPHC(97)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("OpenPHC(97) = %v, want os.ErrNotExist", err)
	}
	if _, err := OpenPHC(-1); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "no PHC") {
		t.Fatalf("OpenPHC(-1) = %v", err)
	}
}
