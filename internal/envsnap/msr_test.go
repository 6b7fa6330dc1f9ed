package envsnap

import (
	"context"
	"encoding/binary"
	"os"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostfs/hostfstest"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/power/powertest"
	"github.com/rig-project/rig/internal/rundir"
)

// TestCStateMSRs decodes the BIOS's C-state registers from a file
// standing in for /dev/cpu/0/msr on the Xeon fixture: package C-state
// limit code 3, CFG lock, C3 auto-demotion and C3 undemotion on (bit 10,
// I/O MWAIT redirection, is set and ignored), C1E on.
func TestCStateMSRs(t *testing.T) {
	h := hostfs.FS{Root: hostfstest.CopyTree(t, "../hostinfo/testdata/isolated")}
	le := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	powertest.MSRFixture(t, h, 0, map[int64][]byte{hostinfo.MSRPkgCStConfig: le(0x0A008403), hostinfo.MSRPowerCtl: le(0x2400005F)})
	s := Take(context.Background(), h, Options{Getenv: noenv})
	want := rundir.CStateMSRs{CPU: 0, PkgCStConfig: 0x0A008403, PowerCtl: 0x2400005F, PkgCStateLimit: 3, CFGLock: true,
		C3AutoDemote: true, C3Undemote: true, C1E: true}
	if s.Power.CStateMSRsNotRead != "" || len(s.Power.CStateMSRs) != 1 || s.Power.CStateMSRs[0] != want {
		t.Fatalf("%+v, not read %q; want %+v", s.Power.CStateMSRs, s.Power.CStateMSRsNotRead, want)
	}
	var txt strings.Builder
	s.WriteText(&txt)
	if w := "cpu0 msr:        PKG_CST_CONFIG_CONTROL 0xa008403 (package C-state limit code 3, locked, C1 auto-demotion off, C3 auto-demotion on, C1 undemotion off, C3 undemotion on); POWER_CTL 0x2400005f (C1E on)"; !strings.Contains(txt.String(), w) {
		t.Fatalf("rig env lacks %q:\n%s", w, txt.String())
	}

	// The same host without the msr driver, then an AMD host: not read,
	// with the reason.
	if err := os.RemoveAll(h.Path("/dev/cpu")); err != nil {
		t.Fatal(err)
	}
	s = Take(context.Background(), h, Options{Getenv: noenv})
	if len(s.Power.CStateMSRs) != 0 || s.Power.CStateMSRsNotRead != "no /dev/cpu/0/msr (the msr driver is not loaded: modprobe msr)" {
		t.Fatalf("no msr driver: %+v %q", s.Power.CStateMSRs, s.Power.CStateMSRsNotRead)
	}
	s = Take(context.Background(), fx("vm"), Options{Getenv: noenv})
	if len(s.Power.CStateMSRs) != 0 || !strings.Contains(s.Power.CStateMSRsNotRead, `not an Intel CPU (vendor "AuthenticAMD")`) {
		t.Fatalf("AMD: %+v %q", s.Power.CStateMSRs, s.Power.CStateMSRsNotRead)
	}
}
