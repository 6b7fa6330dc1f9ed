package hostinfo

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/rundir"
)

// x86 registers of the effective-frequency counters and the time stamp
// counter. MPERF and APERF count only while the CPU is in C0: MPERF at the
// TSC's rate, APERF at the actual frequency, so ΔAPERF/ΔMPERF × ΔTSC/Δt is
// the average frequency while the CPU ran (turbostat's Bzy_MHz).
const (
	MSRTSC   = 0x10 // IA32_TIME_STAMP_COUNTER
	MSRMPERF = 0xE7
	MSRAPERF = 0xE8
)

// MSRPath is the msr driver's device of one CPU.
func MSRPath(cpu int) string { return fmt.Sprintf("/dev/cpu/%d/msr", cpu) }

// MSR reads model-specific registers of one CPU through the msr driver,
// read-only: a pread of 8 bytes at the register number. The kernel runs
// each read on that CPU (an IPI to it), so callers read rarely. Opening
// needs CAP_SYS_RAWIO; a host without the driver (not loaded, a VM
// without it) gives an error wrapping os.ErrNotExist.
type MSR struct {
	f   *File
	buf [8]byte
}

// OpenMSR opens /dev/cpu/N/msr below fs's root (a fixture file in tests).
func OpenMSR(fs hostfs.FS, cpu int) (*MSR, error) {
	f, err := Open(fs, MSRPath(cpu))
	if err != nil {
		return nil, err
	}
	return &MSR{f: f}, nil
}

// Read returns register reg. It does not allocate.
func (m *MSR) Read(reg int64) (uint64, error) {
	k, err := m.f.f.ReadAt(m.buf[:], reg)
	if k != len(m.buf) && err == io.EOF {
		return 0, fmt.Errorf("read MSR %#x from %s: %d of 8 bytes", reg, m.f.Path, k)
	}
	if err != nil {
		// EIO: the CPU has no such register (a VM that hides it).
		return 0, fmt.Errorf("read MSR %#x from %s: %w", reg, m.f.Path, errno(err))
	}
	return binary.LittleEndian.Uint64(m.buf[:]), nil
}

// Close closes the device.
func (m *MSR) Close() error { return m.f.Close() }

// Registers of the C-state settings the BIOS leaves (Intel, since
// Nehalem; the layout is the SDM's, as intel_idle and turbostat read it).
const (
	MSRPkgCStConfig = 0xE2  // MSR_PKG_CST_CONFIG_CONTROL
	MSRPowerCtl     = 0x1FC // MSR_POWER_CTL
)

// ReadCStateMSRs reads MSR_PKG_CST_CONFIG_CONTROL and MSR_POWER_CTL on
// cpu and decodes them. Intel only: the caller checks the vendor (AMD
// has neither register).
func ReadCStateMSRs(fs hostfs.FS, cpu int) (rundir.CStateMSRs, error) {
	c := rundir.CStateMSRs{CPU: cpu}
	m, err := OpenMSR(fs, cpu)
	if err != nil {
		return c, err
	}
	defer m.Close()
	if c.PkgCStConfig, err = m.Read(MSRPkgCStConfig); err != nil {
		return c, err
	}
	if c.PowerCtl, err = m.Read(MSRPowerCtl); err != nil {
		return c, err
	}
	v := c.PkgCStConfig
	// Bits 3:0 are the limit on Haswell and later, 2:0 (bit 3 reserved,
	// zero) before; what each code means is model-specific.
	c.PkgCStateLimit = int(v & 0xF)
	c.CFGLock = v&(1<<15) != 0
	c.C3AutoDemote = v&(1<<25) != 0
	c.C1AutoDemote = v&(1<<26) != 0
	// The SDM's order: bit 27 C3, bit 28 C1 (older turbostat printed them
	// the other way round).
	c.C3Undemote = v&(1<<27) != 0
	c.C1Undemote = v&(1<<28) != 0
	c.C1E = c.PowerCtl&(1<<1) != 0
	return c, nil
}
