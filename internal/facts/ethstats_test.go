package facts

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rig-project/rig/internal/nicfake"

	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
)

// TestNICStatsVeth reads veth's ethtool -S counters in a lab namespace:
// names once, values without allocating.
func TestNICStatsVeth(t *testing.T) {
	topo := netlabtest.New(t, netlab.Options{})
	err := topo.Do(netlab.Responder, func() error {
		s, err := NewNICStats(topo.Responder.Interface)
		if err != nil {
			return err
		}
		defer s.Close()
		names := s.Names()
		if len(names) == 0 || !strings.Contains(strings.Join(names, " "), "drops") {
			t.Errorf("drop counters of veth: %v (all: %v)", names, s.names)
		}
		dst := make([]uint64, len(names))
		if err := s.Read(dst); err != nil {
			return err
		}
		if n := testing.AllocsPerRun(100, func() { _ = s.Read(dst) }); n != 0 {
			t.Errorf("Read allocated %v times", n)
		}
		if _, err := NewNICStats("nosuch0"); !errors.Is(err, os.ErrNotExist) && !strings.Contains(err.Error(), "nosuch0") {
			t.Errorf("unknown interface: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestDropCounterNames(t *testing.T) {
	for _, n := range []string{"rx_queue_0_drops", "rx_missed_errors", "rx_fifo_errors", "rx_no_buffer_count", "rx_over_runs", "tx_timeout_count", "rx_discards_phy", "rx_out_of_buffer"} {
		if !dropCounter.MatchString(n) {
			t.Errorf("%s not picked", n)
		}
	}
	for _, n := range []string{"rx_packets", "tx_bytes", "rx_queue_0_xdp_packets"} {
		if dropCounter.MatchString(n) {
			t.Errorf("%s picked", n)
		}
	}
}

// TestStampCounterNames: the drivers' TX/RX stamp-loss and PHC counters,
// in their own spelling, are reported; their neighbours are not.
func TestStampCounterNames(t *testing.T) {
	for _, n := range []string{"tx_hwtstamp_skipped", "tx_hwtstamp_timeouts", "tx_hwtstamp_flushed", "tx_hwtstamp_discarded",
		"rx_hwtstamp_cleared", "ptp_cq0_late_cqe", "ptp_cq3_lost_cqe", "ptp_cq0_err_cqe", "ptp_cq1_abort",
		"phc_cnt", "phc_exp", "phc_skp", "phc_err_dv", "phc_err_ts", "phc_err_eb"} {
		if !watched(n) {
			t.Errorf("%s not picked", n)
		}
	}
	// ENA's gauge of tracked connections left is no count of drops.
	for _, n := range []string{"ptp_cq0_abort_abs_diff_ns", "late_cached_phc_updates", "ptp_cq0_cqe", "tx_hwtstamp_total", "conntrack_allowance_available", "ena_srd_mode"} {
		if watched(n) {
			t.Errorf("%s picked", n)
		}
	}
}

// TestNICStatsProfiles reads the drivers' counters byte for byte through
// their profiles: the stamp-loss counters are there and move, a driver
// without statistics is unsupported, and Read does not allocate.
func TestNICStatsProfiles(t *testing.T) {
	for _, tt := range []struct {
		p    *nicfake.Profile
		want []string
	}{
		{nicfake.IGB82576(), []string{"tx_hwtstamp_timeouts", "tx_hwtstamp_skipped", "rx_hwtstamp_cleared", "rx_queue_1_drops"}},
		{nicfake.ICE(), []string{"tx_hwtstamp_skipped", "tx_hwtstamp_timeouts", "tx_hwtstamp_flushed", "tx_hwtstamp_discarded"}},
		{nicfake.MLX5(), []string{"ptp_cq0_err_cqe", "ptp_cq0_abort", "ptp_cq0_late_cqe", "ptp_cq0_lost_cqe", "rx_out_of_buffer"}},
		{nicfake.ENA(), []string{"phc_cnt", "phc_exp", "phc_skp", "phc_err_dv", "phc_err_ts", "phc_err_eb", "tx_timeout",
			"bw_in_allowance_exceeded", "bw_out_allowance_exceeded", "pps_allowance_exceeded", "conntrack_allowance_exceeded",
			"linklocal_allowance_exceeded", "total_resets", "reset_fail", "interface_down", "interface_up"}},
	} {
		n := nicfake.New(tt.p, "eth9")
		s, err := NewNICStatsWith("eth9", n)
		if err != nil {
			t.Fatalf("%s: %v", tt.p.Name, err)
		}
		names := s.Names()
		for _, w := range tt.want {
			if !slices.Contains(names, w) {
				t.Errorf("%s: %s not reported (names %v)", tt.p.Name, w, names)
			}
		}
		n.AddCounter(tt.want[0], 7)
		dst := make([]uint64, len(names))
		if err := s.Read(dst); err != nil {
			t.Fatal(err)
		}
		if v := dst[slices.Index(names, tt.want[0])]; v != 7 {
			t.Errorf("%s: %s = %d, want 7", tt.p.Name, tt.want[0], v)
		}
		if a := testing.AllocsPerRun(100, func() { _ = s.Read(dst) }); a != 0 {
			t.Errorf("%s: Read allocated %v times", tt.p.Name, a)
		}
		s.Close()
	}
	if _, err := NewNICStatsWith("eth9", nicfake.New(nicfake.ExaNIC(), "eth9")); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("exanic has no ethtool statistics: %v", err)
	}
}

// growOn changes a profile NIC's queue count just before it answers cmd:
// the driver's counter set grows between two of NICStats's ioctls.
type growOn struct {
	*nicfake.NIC
	cmd    uint32
	queues int
}

func (g *growOn) Ethtool(iface string, data []byte) error {
	if g.queues > 0 && binary.NativeEndian.Uint32(data) == g.cmd {
		g.SetQueues(g.queues)
		g.queues = 0
	}
	return g.NIC.Ethtool(iface, data)
}

// TestNICStatsCountGrows plays the counter set growing (channels or XDP
// changed mid-round): Read refuses instead of reading values under the
// wrong names, and when the growth lands between its GSSET_INFO and
// GSTATS the kernel's copy stops at the guard page (EFAULT) instead of
// writing past the buffer.
func TestNICStatsCountGrows(t *testing.T) {
	n := nicfake.New(nicfake.IGB82576(), "eth9")
	s, err := NewNICStatsWith("eth9", n)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dst := make([]uint64, len(s.Names()))
	n.SetQueues(8)
	if err := s.Read(dst); !errors.Is(err, ErrStatsChanged) || !strings.Contains(err.Error(), "22 counters now, 10 when opened") {
		t.Fatalf("grown before the read: %v", err)
	}
	n.SetQueues(2)
	if err := s.Read(dst); err != nil {
		t.Fatalf("back to the count it was opened with: %v", err)
	}
	g := &growOn{NIC: n, cmd: unix.ETHTOOL_GSTATS, queues: 64}
	s2, err := NewNICStatsWith("eth9", g)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	err = s2.Read(dst)
	if !errors.Is(err, unix.EFAULT) || !errors.Is(err, ErrStatsChanged) {
		t.Fatalf("grown between GSSET_INFO and GSTATS: %v", err)
	}
	if len(s2.buf) != 8+8*10 || cap(s2.buf) != len(s2.buf) {
		t.Fatalf("buffer %d bytes (cap %d)", len(s2.buf), cap(s2.buf))
	}
	// A kernel with the count check returns nothing instead.
	n2 := nicfake.New(nicfake.IGB82576(), "eth9")
	n2.CountCheck = true
	s3, err := NewNICStatsWith("eth9", &growOn{NIC: n2, cmd: unix.ETHTOOL_GSTATS, queues: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	if err := s3.Read(dst); !errors.Is(err, ErrStatsChanged) || !strings.Contains(err.Error(), "returned no counters") {
		t.Fatalf("count check: %v", err)
	}
}

// TestNICStatsGuardVeth changes a real veth's channel count under an
// open NICStats: the kernel writes its new, larger count; Read refuses,
// and a GSTATS issued with the old buffer ends in EFAULT at the guard
// page, not past the buffer.
func TestNICStatsGuardVeth(t *testing.T) {
	if _, err := exec.LookPath("ethtool"); err != nil {
		t.Skip("needs the ethtool command to change a veth's channels")
	}
	topo := netlabtest.New(t, netlab.Options{})
	ns := topo.Netns(netlab.Responder)
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	run("ip", "link", "add", "rgs0", "numrxqueues", "2", "numtxqueues", "2", "type", "veth", "peer", "name", "rgs1", "numrxqueues", "2", "numtxqueues", "2")
	run("ethtool", "-L", "rgs0", "rx", "1", "tx", "1")
	var s *NICStats
	err := topo.Do(netlab.Responder, func() (err error) {
		s, err = NewNICStats("rgs0")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := len(s.names)
	run("ethtool", "-L", "rgs0", "rx", "2", "tx", "2")
	err = topo.Do(netlab.Responder, func() error {
		dst := make([]uint64, len(s.Names()))
		if err := s.Read(dst); !errors.Is(err, ErrStatsChanged) {
			return fmt.Errorf("Read after the channels grew: %v", err)
		}
		// GSTATS into the old buffer: a kernel with the count check
		// returns nothing; one without it, or any kernel asked with
		// n_stats 0 (the check skips it), writes its 19 counters and
		// must stop at the guard page.
		if err := s.gstats(); !errors.Is(err, ErrStatsChanged) {
			return fmt.Errorf("GSTATS into the old buffer: %v", err)
		}
		binary.NativeEndian.PutUint32(s.buf[0:], unix.ETHTOOL_GSTATS)
		binary.NativeEndian.PutUint32(s.buf[4:], 0)
		if err := s.ioctl("ETHTOOL_GSTATS", s.buf); !errors.Is(err, unix.EFAULT) {
			return fmt.Errorf("GSTATS writing 19 counters into a buffer for 10: %v, want EFAULT at the guard page", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if before != 10 {
		t.Errorf("veth had %d counters with one queue, want 10", before)
	}
}

// TestNICStatsI40E: i40e spells its stamp-loss counters with a port.
// prefix; they are watched like everyone else's.
func TestNICStatsI40E(t *testing.T) {
	s, err := NewNICStatsWith("eth9", nicfake.New(nicfake.I40E(), "eth9"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, w := range []string{"port.tx_hwtstamp_skipped", "port.tx_hwtstamp_timeouts", "port.rx_hwtstamp_cleared"} {
		if !slices.Contains(s.Names(), w) {
			t.Errorf("%s not reported (names %v)", w, s.Names())
		}
	}
}
