//go:build linux

package tstamp

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// PHC offset methods, best first (linuxptp sysoff.c).
const (
	MethodPrecise  = "PTP_SYS_OFFSET_PRECISE"
	MethodExtended = "PTP_SYS_OFFSET_EXTENDED"
	MethodBasic    = "PTP_SYS_OFFSET"
)

// PHCOffset relates a PHC to CLOCK_REALTIME at one instant.
type PHCOffset struct {
	// Offset = PHC time − CLOCK_REALTIME, in ns: realtime = hw − Offset.
	Offset int64 `json:"offset_ns"`
	// Window is the uncertainty in ns: the width of the system-clock
	// bracket around the PHC read used (0 for a hardware cross-timestamp).
	Window int64 `json:"window_ns"`
	// At is the CLOCK_REALTIME instant of the estimate, in ns.
	At int64 `json:"at_ns"`
	// Method names the ioctl used (MethodPrecise, MethodExtended, MethodBasic).
	Method string `json:"method"`
	// Fallback says why better methods were not used ("" when none failed).
	Fallback string `json:"fallback,omitempty"`
}

// PHCDevice is the PTP clock ioctl surface of one /dev/ptpN: the seam
// between rig and a PHC driver. The real one issues the ioctls; tests use
// driver profiles (ENA: no cross-timestamp, EXTENDED only). Errors are raw
// errno values.
type PHCDevice interface {
	// CrossTimestamping is PTP_CLOCK_GETCAPS2's cross_timestamping.
	CrossTimestamping() (bool, error)
	// Precise is PTP_SYS_OFFSET_PRECISE2: (device, CLOCK_REALTIME) ns.
	Precise() (dev, sys int64, err error)
	// Extended is PTP_SYS_OFFSET_EXTENDED2: n (before, phc, after) triplets.
	Extended(n int, out *[unix.PTP_MAX_SAMPLES][3]int64) error
	// Basic is PTP_SYS_OFFSET2: 2n+1 alternating sys, phc, sys, …, sys.
	Basic(n int, out *[2*unix.PTP_MAX_SAMPLES + 1]int64) error
}

// PHC is an open PTP hardware clock (/dev/ptpN), read-only.
type PHC struct {
	f   *os.File
	dev PHCDevice
	// Samples is how many reads EXTENDED/basic take per Offset call
	// (1..25, default 5). Each is a device access: ENA allows 125 per
	// second in total, so sample at 1-2 Hz there.
	Samples int
}

// OpenPHC opens /dev/ptp<index> read-only. A missing device wraps
// os.ErrNotExist; a device the process may not open wraps os.ErrPermission.
func OpenPHC(index int) (*PHC, error) {
	if index < 0 {
		return nil, fmt.Errorf("tstamp: PHC index %d: the interface has no PHC: %w", index, os.ErrNotExist)
	}
	return OpenPHCPath("/dev/ptp" + strconv.Itoa(index))
}

// OpenPHCPath opens a PHC character device by path (e.g. /dev/ptp0).
func OpenPHCPath(path string) (*PHC, error) {
	f, err := os.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("tstamp: open PHC: %w", err)
	}
	return &PHC{f: f, dev: phcIoctl{int(f.Fd())}, Samples: 5}, nil
}

// Close closes the device.
func (p *PHC) Close() error {
	if p.f == nil {
		return nil
	}
	return p.f.Close()
}

// Offset measures PHC − CLOCK_REALTIME with the best method the device
// has: PRECISE when its caps report cross-timestamping, else EXTENDED
// (the sample with the shortest bracket, midpoint estimate, window =
// bracket), else basic PTP_SYS_OFFSET (same rule over alternating reads).
// A method that fails with EOPNOTSUPP, EINVAL or ENOTTY falls through to the
// next, and PHCOffset.Fallback records why; other errors are returned. A
// failed PTP_CLOCK_GETCAPS skips PRECISE (its answer is what PRECISE needs)
// and goes on to EXTENDED.
func (p *PHC) Offset() (PHCOffset, error) { return offset(p.dev, p.Samples) }

func offset(dev PHCDevice, samples int) (PHCOffset, error) {
	if samples < 1 || samples > unix.PTP_MAX_SAMPLES {
		return PHCOffset{}, fmt.Errorf("tstamp: PHC samples %d out of range 1..%d", samples, unix.PTP_MAX_SAMPLES)
	}
	var why []string
	cross, err := dev.CrossTimestamping()
	switch {
	case err != nil:
		why = append(why, "PTP_CLOCK_GETCAPS: "+errName(err)+": "+MethodPrecise+" not tried")
	case cross:
		d, s, err := dev.Precise()
		if err == nil {
			return PHCOffset{Offset: d - s, At: s, Method: MethodPrecise}, nil
		}
		if !fallThrough(err) {
			return PHCOffset{}, fmt.Errorf("tstamp: %s: %w", MethodPrecise, err)
		}
		why = append(why, MethodPrecise+": "+errName(err))
	default:
		why = append(why, MethodPrecise+": no cross-timestamping")
	}
	var ext [unix.PTP_MAX_SAMPLES][3]int64
	err = dev.Extended(samples, &ext)
	if err == nil {
		o, err := bestTriplet(ext[:samples])
		if err != nil {
			return PHCOffset{}, err
		}
		o.Method, o.Fallback = MethodExtended, strings.Join(why, "; ")
		return o, nil
	}
	if !fallThrough(err) {
		return PHCOffset{}, fmt.Errorf("tstamp: %s: %w", MethodExtended, err)
	}
	why = append(why, MethodExtended+": "+errName(err))
	var alt [2*unix.PTP_MAX_SAMPLES + 1]int64
	if err := dev.Basic(samples, &alt); err != nil {
		return PHCOffset{}, fmt.Errorf("tstamp: %s (after %s): %w", MethodBasic, strings.Join(why, "; "), err)
	}
	var tri [unix.PTP_MAX_SAMPLES][3]int64
	for i := 0; i < samples; i++ {
		tri[i] = [3]int64{alt[2*i], alt[2*i+1], alt[2*i+2]}
	}
	o, err := bestTriplet(tri[:samples])
	if err != nil {
		return PHCOffset{}, err
	}
	o.Method, o.Fallback = MethodBasic, strings.Join(why, "; ")
	return o, nil
}

func fallThrough(err error) bool {
	return errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTTY)
}

// bestTriplet picks the (before, phc, after) sample with the shortest
// non-negative window; the estimate is phc − midpoint(before, after).
func bestTriplet(ts [][3]int64) (PHCOffset, error) {
	best := -1
	var bestW int64
	for i, t := range ts {
		w := t[2] - t[0]
		if w < 0 {
			continue // the system clock stepped backwards during the read
		}
		if best < 0 || w < bestW {
			best, bestW = i, w
		}
	}
	if best < 0 {
		return PHCOffset{}, errors.New("tstamp: PHC offset: every sample has a negative window (system clock stepped)")
	}
	t := ts[best]
	mid := t[0] + bestW/2
	return PHCOffset{Offset: t[1] - mid, Window: bestW, At: mid}, nil
}

type phcIoctl struct{ fd int }

func ptpNano(t unix.PtpClockTime) int64 { return t.Sec*1e9 + int64(t.Nsec) }

func (d phcIoctl) CrossTimestamping() (bool, error) {
	c, err := unix.IoctlPtpClockGetcaps(d.fd)
	if err != nil {
		return false, err
	}
	return c.Cross_timestamping != 0, nil
}

func (d phcIoctl) Precise() (int64, int64, error) {
	v, err := unix.IoctlPtpSysOffsetPrecise(d.fd)
	if err != nil {
		return 0, 0, err
	}
	return ptpNano(v.Device), ptpNano(v.Realtime), nil
}

func (d phcIoctl) Extended(n int, out *[unix.PTP_MAX_SAMPLES][3]int64) error {
	v, err := unix.IoctlPtpSysOffsetExtended(d.fd, uint(n))
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		for j := 0; j < 3; j++ {
			out[i][j] = ptpNano(v.Ts[i][j])
		}
	}
	return nil
}

func (d phcIoctl) Basic(n int, out *[2*unix.PTP_MAX_SAMPLES + 1]int64) error {
	// x/sys has no wrapper for the basic ioctl.
	v := unix.PtpSysOffset{Samples: uint32(n)}
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(d.fd), uintptr(unix.PTP_SYS_OFFSET2), uintptr(unsafe.Pointer(&v)))
	if e != 0 {
		return e
	}
	for i := 0; i < 2*n+1; i++ {
		out[i] = ptpNano(v.Ts[i])
	}
	return nil
}

// PHCRecord is the PHC↔CLOCK_REALTIME relation a role records with its
// samples at the start and end of a round, so that hardware stamps (raw PHC
// time) can be converted to wall time offline and the NIC→kernel stage be
// computed. Error says why it could not be taken.
type PHCRecord struct {
	Index int        `json:"phc_index"`
	Start *PHCOffset `json:"start,omitempty"`
	End   *PHCOffset `json:"end,omitempty"`
	Error string     `json:"error,omitempty"`
}

// MeasurePHC opens /dev/ptpINDEX, takes one offset and closes it. It is
// cheap enough for the start and end of a round (ENA allows 125 reads/s;
// this is Samples reads).
func MeasurePHC(index int) (PHCOffset, error) {
	p, err := OpenPHC(index)
	if err != nil {
		return PHCOffset{}, err
	}
	defer p.Close()
	return p.Offset()
}

// Take fills Start (first call) or End (later calls); an error is kept in
// Error, never returned: a missing offset must not stop a measurement.
func (r *PHCRecord) Take() {
	o, err := MeasurePHC(r.Index)
	if err != nil {
		r.Error = err.Error()
		return
	}
	if r.Start == nil {
		r.Start = &o
	} else {
		r.End = &o
	}
}

// PHC returns an empty PHCRecord for the NIC clock of a grant with
// hardware stamps, or nil when the grant has none (software stamps need no
// PHC relation).
func (g Granted) PHC() *PHCRecord {
	if (g.HardwareRX() || g.HardwareTX()) && g.NIC.Caps.PHCIndex >= 0 {
		return &PHCRecord{Index: g.NIC.Caps.PHCIndex}
	}
	return nil
}
