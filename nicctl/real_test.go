package nicctl

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/testbin"
)

func ethtoolOut(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("ethtool", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("ethtool %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// field returns the value after "name:" in the section that follows
// header (or the whole text when header is "").
func field(t *testing.T, text, header, name string) string {
	t.Helper()
	if header != "" {
		i := strings.Index(text, header)
		if i < 0 {
			t.Fatalf("no %q in\n%s", header, text)
		}
		text = text[i:]
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `:\s*(\S+)`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no %q in\n%s", name, text)
	}
	return m[1]
}

// TestRealShowEth0 reads eth0 (read only) and compares with ethtool(8).
func TestRealShowEth0(t *testing.T) {
	testbin.Integration(t)
	if _, err := exec.LookPath("ethtool"); err != nil {
		t.Skip("ethtool(8) not installed (apt-get install -y ethtool): cannot compare")
	}
	if _, err := os.Stat("/sys/class/net/eth0"); err != nil {
		t.Skip("no eth0 on this machine")
	}
	env := &Env{NIC: facts.NIC{FS: hostfs.FS{Root: "/"}}, IRQBalance: HostIRQBalance{FS: hostfs.FS{Root: "/"}}}
	defer env.Close()
	in, err := facts.Show(context.Background(), &env.NIC, "eth0")
	if err != nil {
		t.Fatal(err)
	}
	str := func(p *uint32) string {
		if p == nil {
			return "n/a"
		}
		return fmt.Sprint(*p)
	}
	c := ethtoolOut(t, "-c", "eth0")
	if in.Coalesce == nil {
		t.Fatalf("coalesce missing: %v", in.Errors)
	}
	for name, got := range map[string]string{"rx-usecs": str(in.Coalesce.RxUsecs), "rx-frames": str(in.Coalesce.RxFrames), "tx-usecs": str(in.Coalesce.TxUsecs), "tx-frames": str(in.Coalesce.TxFrames)} {
		if want := field(t, c, "", name); got != want {
			t.Errorf("%s: nicctl %s, ethtool %s", name, got, want)
		}
	}
	if want := field(t, c, "", "Adaptive RX"); in.Coalesce.AdaptiveRx == nil || map[bool]string{true: "on", false: "off"}[*in.Coalesce.AdaptiveRx] != want {
		t.Errorf("adaptive-rx: nicctl %v, ethtool %s", in.Coalesce.AdaptiveRx, want)
	}
	g := ethtoolOut(t, "-g", "eth0")
	for _, x := range []struct{ got, hdr, name string }{
		{str(in.Rings.RxMax), "Pre-set maximums", "RX"}, {str(in.Rings.TxMax), "Pre-set maximums", "TX"},
		{str(in.Rings.Rx), "Current hardware settings", "RX"}, {str(in.Rings.Tx), "Current hardware settings", "TX"},
	} {
		if want := field(t, g, x.hdr, x.name); x.got != want {
			t.Errorf("rings %s %s: nicctl %s, ethtool %s", x.hdr, x.name, x.got, want)
		}
	}
	l := ethtoolOut(t, "-l", "eth0")
	for _, x := range []struct{ got, hdr, name string }{
		{str(in.Channels.CombinedMax), "Pre-set maximums", "Combined"}, {str(in.Channels.Combined), "Current hardware settings", "Combined"},
		{str(in.Channels.RxMax), "Pre-set maximums", "RX"}, {str(in.Channels.Rx), "Current hardware settings", "RX"},
	} {
		if want := field(t, l, x.hdr, x.name); x.got != want {
			t.Errorf("channels %s %s: nicctl %s, ethtool %s", x.hdr, x.name, x.got, want)
		}
	}
	ts := ethtoolOut(t, "-T", "eth0")
	caps := ts[strings.Index(ts, "Capabilities:"):strings.Index(ts, "PTP Hardware Clock")]
	var want []string
	for _, f := range strings.Fields(caps)[1:] {
		want = append(want, strings.Trim(f, "()"))
	}
	if in.Timestamping == nil {
		t.Fatalf("no timestamping section: %v", in.Errors)
	}
	if got := in.Timestamping.Caps.SOF.EthtoolNames(); got != strings.Join(want, " ") {
		t.Errorf("timestamping: nicctl %v, ethtool %v", got, want)
	}
	phc := field(t, ts, "", "PTP Hardware Clock")
	if (phc == "none") != (in.Timestamping.Caps.PHCIndex < 0) {
		t.Errorf("PHC: nicctl %d, ethtool %s", in.Timestamping.Caps.PHCIndex, phc)
	}
	i := ethtoolOut(t, "-i", "eth0")
	if in.DrvInfo == nil || in.DrvInfo.Driver != field(t, i, "", "driver") || in.DrvInfo.BusInfo != field(t, i, "", "bus-info") {
		t.Errorf("drvinfo %+v vs\n%s", in.DrvInfo, i)
	}
	if fw := regexp.MustCompile(`(?m)^firmware-version: ?(.*)$`).FindStringSubmatch(i); fw == nil || in.DrvInfo.Firmware != strings.TrimSpace(fw[1]) {
		t.Errorf("firmware %q vs\n%s", in.DrvInfo.Firmware, i)
	}
	e := ethtoolOut(t, "eth0")
	if in.Link == nil || (field(t, e, "", "\tLink detected") == "yes") != in.Link.Up {
		t.Errorf("link %+v vs\n%s", in.Link, e)
	}
	// IRQs: every queue IRQ nicctl found is in /proc/interrupts under a name
	// of this device, and the management guard knows eth0 carries the route.
	if len(in.IRQs) == 0 {
		t.Error("no IRQs found for eth0")
	}
	if in.Mgmt == "" {
		t.Fatal("eth0 not recognised as the management interface")
	}
	// The guard: refused before anything changes. The request is eth0's
	// current value anyway (1 combined channel), so even a broken guard
	// would change nothing.
	if in.Channels == nil || in.Channels.Combined == nil || *in.Channels.Combined != 1 {
		t.Skip("eth0 has more than one channel: not running the guard check")
	}
	bin := buildRig(t)
	cmd := exec.Command(bin, "nicctl", "set", "eth0", "--channels", "1", "--for", "1ms")
	cmd.Env = append(os.Environ(), "RIG_STATE_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "carries the default route") {
		t.Fatalf("guard: %v\n%s", err, out)
	}
}

// TestRealVethChannels creates a 4-queue veth in its own netns, changes its
// channels with the rig binary there, and restores them with `rig restore`.
func TestRealVethChannels(t *testing.T) {
	testbin.Integration(t)
	bin := buildRig(t)
	ns := fmt.Sprintf("rignic%d", os.Getpid())
	rigIn := inNetns(t, ns, bin, []string{"ip", "-n", ns, "link", "add", "va", "numtxqueues", "4", "numrxqueues", "4", "type", "veth",
		"peer", "name", "vb", "numtxqueues", "4", "numrxqueues", "4"})
	rig := func(args ...string) (string, error) { return combined(rigIn(args...)) }
	channels := func() (rx, tx uint32) {
		out, err := rig("nicctl", "show", "va", "--json")
		if err != nil {
			t.Fatalf("show: %v\n%s", err, out)
		}
		var in facts.Info
		if err := json.Unmarshal([]byte(out), &in); err != nil || in.Channels == nil || in.Channels.Rx == nil {
			t.Fatalf("show json: %v\n%s", err, out)
		}
		return *in.Channels.Rx, *in.Channels.Tx
	}
	if rx, tx := channels(); rx != 4 || tx != 4 {
		t.Fatalf("start: rx %d tx %d", rx, tx)
	}
	if out, err := rig("nicctl", "set", "va", "--channels", "2", "--keep"); err != nil {
		t.Fatalf("set: %v\n%s", err, out)
	}
	if rx, tx := channels(); rx != 2 || tx != 2 {
		t.Fatalf("after set: rx %d tx %d", rx, tx)
	}
	out, err := rig("restore")
	if err != nil || !strings.Contains(out, "restored ethtool-channels va") {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	if rx, tx := channels(); rx != 4 || tx != 4 {
		t.Fatalf("after restore: rx %d tx %d", rx, tx)
	}
	// Exit 1: the driver could not do it; exit 2: hardware stamps
	// demanded of a NIC that has none is bad input (docs/cli.md#exit-status).
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--rx-usecs", "0"}, 1, "not supported by this driver"},
		{[]string{"--rx-ring", "128"}, 1, "not supported by this driver"},
		{[]string{"--hwtstamp", "all"}, 2, "va cannot give rig's probes RX ALL + TX ON in hardware"},
		{[]string{"--hwtstamp", "ptp"}, 1, "va cannot report its timestamping config (SIOCGHWTSTAMP: EOPNOTSUPP), so it could not be put back"},
	} {
		out, err := rig(append([]string{"nicctl", "set", "va", "--keep"}, c.args...)...)
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != c.code || !strings.Contains(out, c.want) {
			t.Errorf("set %v on veth: %v, want exit %d\n%s", c.args, err, c.code, out)
		}
	}
	if out, err := rig("nicctl", "set", "va", "--channels", "9", "--keep"); err == nil || !strings.Contains(out, "rx/tx channels 1..4") {
		t.Errorf("channels 9: %v\n%s", err, out)
	}
	if out, err := rig("restore"); err != nil || !strings.Contains(out, "nothing to restore") {
		t.Errorf("refusals left a journal: %v\n%s", err, out)
	}
}

// TestRealVethProbe runs the hardware self-test on a veth in its own netns
// while its peer sends traffic: it must report "software only" (what veth
// gives), refuse --timestamps hardware naming what is missing, and leave
// nothing journaled. The hand-run probes refuse hardware the same way.
func TestRealVethProbe(t *testing.T) {
	testbin.Integration(t)
	bin := buildRig(t)
	ns := fmt.Sprintf("rigprb%d", os.Getpid())
	rigIn := inNetns(t, ns, bin,
		[]string{"ip", "-n", ns, "link", "add", "pa", "type", "veth", "peer", "name", "pb"},
		[]string{"ip", "-n", ns, "addr", "add", "10.99.0.1/24", "dev", "pa"},
		[]string{"ip", "-n", ns, "link", "set", "pa", "up"},
		[]string{"ip", "-n", ns, "link", "set", "pb", "up"})
	// Frames arriving on pa while the probe listens: pings from pb's side.
	pinger := exec.Command("ip", "netns", "exec", ns, "ping", "-q", "-I", "pb", "-i", "0.05", "-w", "10", "10.99.0.1")
	if err := pinger.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pinger.Process.Kill(); pinger.Wait() })
	rig := func(args ...string) (string, int) {
		out, err := combined(rigIn(args...))
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out, code
	}
	out, code := rig("nicctl", "probe", "pa", "--listen", "1s")
	if code != 0 || !strings.Contains(out, "verdict: software only on pa") || !strings.Contains(out, "kernel stamps 8/8, NIC stamps 0/8") ||
		!regexp.MustCompile(`RX: [1-9]\d* frames`).MatchString(out) {
		t.Fatalf("probe: exit %d\n%s", code, out)
	}
	out, code = rig("nicctl", "probe", "pa", "--listen", "300ms", "--timestamps", "hardware")
	if code != 2 || !strings.Contains(out, "need hardware RX and TX stamps") {
		t.Fatalf("probe --timestamps hardware: exit %d\n%s", code, out)
	}
	for _, probe := range [][]string{
		{"send", "--iface", "pa", "--timestamps", "hardware", "--count", "5"},
		{"respond", "--iface", "pa", "--timestamps", "hardware", "--run-id", "1"},
		{"capture", "--iface", "pa", "--timestamps", "hardware", "--run-id", "1"},
	} {
		out, code = rig(probe...)
		if code != 2 || !strings.Contains(out, "pa cannot give rig's probes") || !strings.Contains(out, "RX: no hardware RX stamps") {
			t.Errorf("%v: exit %d\n%s", probe, code, out)
		}
	}
	if out, code := rig("restore"); code != 0 || !strings.Contains(out, "nothing to restore") {
		t.Errorf("the probes left a journal: exit %d\n%s", code, out)
	}
}

// TestRealVethNAPI sets the NAPI knobs of a veth with GRO on (which gives
// it a NAPI instance) in its own netns with the rig binary: the sysfs
// files and the kernel's per-instance irq_suspend_timeout (netdev netlink)
// change, `rig restore` puts them back byte for byte, and so it does after
// a kill -9 of the holder. Without GRO the veth has no NAPI instance and
// --irq-suspend-timeout is refused, saying so.
func TestRealVethNAPI(t *testing.T) {
	testbin.Integration(t)
	bin := buildRig(t)
	ns := fmt.Sprintf("rignapi%d", os.Getpid())
	rigIn := inNetns(t, ns, bin,
		[]string{"ip", "-n", ns, "link", "add", "na", "type", "veth", "peer", "name", "nb"},
		[]string{"ip", "-n", ns, "link", "set", "na", "up"},
		[]string{"ip", "-n", ns, "link", "set", "nb", "up"},
		[]string{"ip", "netns", "exec", ns, "ethtool", "-K", "na", "gro", "on"})
	rig := func(args ...string) (string, error) { return combined(rigIn(args...)) }
	// What the kernel holds: both files byte for byte, and each instance.
	read := func() string {
		out, err := combined(exec.Command("ip", "netns", "exec", ns, "cat", "/sys/class/net/na/napi_defer_hard_irqs", "/sys/class/net/na/gro_flush_timeout"))
		if err != nil {
			t.Fatalf("cat: %v\n%s", err, out)
		}
		js, err := rig("nicctl", "show", "na", "--json")
		var in facts.Info
		if err != nil || json.Unmarshal([]byte(js), &in) != nil || len(in.NAPIs) == 0 {
			t.Fatalf("show: %v\n%s", err, js)
		}
		for _, n := range in.NAPIs {
			if n.IRQSuspendTimeout == nil {
				t.Fatalf("napi-get reports no irq-suspend-timeout on this kernel:\n%s", js)
			}
			out += fmt.Sprintf("napi %d suspend %d\n", n.ID, *n.IRQSuspendTimeout)
		}
		return out
	}
	before := read()
	set := []string{"nicctl", "set", "na", "--napi-defer-hard-irqs", "2", "--gro-flush-timeout", "200000", "--irq-suspend-timeout", "20000000"}
	if out, err := rig(append(set, "--keep")...); err != nil {
		t.Fatalf("set: %v\n%s", err, out)
	}
	changed := read()
	if !strings.HasPrefix(changed, "2\n200000\n") || !strings.Contains(changed, "suspend 20000000\n") {
		t.Fatalf("after set:\n%s", changed)
	}
	out, err := rig("restore")
	if err != nil || !strings.Contains(out, "restored napi-irq-suspend-timeout na") {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	if got := read(); got != before {
		t.Fatalf("after restore:\n%s\nbefore:\n%s", got, before)
	}

	// kill -9 once all three are applied and the last not yet recorded.
	cmd := rigIn(set...)
	cmd.Env = append(cmd.Env, "RIG_TEST_PAUSE_AFTER_APPLY=3")
	// ip netns exec execs rig: the process killed is rig itself.
	killAtPause(t, cmd)
	if got := read(); got != changed {
		t.Fatalf("at the kill:\n%s\nwant:\n%s", got, changed)
	}
	if out, err := rig("restore"); err != nil || strings.Count(out, "restored ") != 3 {
		t.Fatalf("restore after kill -9: %v\n%s", err, out)
	}
	if got := read(); got != before {
		t.Fatalf("after kill -9 and restore:\n%s\nbefore:\n%s", got, before)
	}

	if out, err := combined(exec.Command("ip", "netns", "exec", ns, "ethtool", "-K", "na", "gro", "off")); err != nil {
		t.Fatalf("gro off: %v\n%s", err, out)
	}
	out, err = rig("nicctl", "set", "na", "--irq-suspend-timeout", "1", "--keep")
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(out, "na has no NAPI instance (netdev netlink napi-get lists none)") {
		t.Fatalf("irq-suspend-timeout without NAPI: %v\n%s", err, out)
	}
	if out, err := rig("restore"); err != nil || !strings.Contains(out, "nothing to restore") {
		t.Fatalf("the refusal left a journal: %v\n%s", err, out)
	}
}

// combined runs c and returns its combined output.
func combined(c *exec.Cmd) (string, error) {
	out, err := c.CombinedOutput()
	return string(out), err
}

// inNetns makes the network namespace ns, removed when the test ends, and
// runs the setup command lines; it returns the command running the rig
// binary bin in ns with args and the test's own state directory.
func inNetns(t *testing.T, ns, bin string, setup ...[]string) func(args ...string) *exec.Cmd {
	t.Helper()
	testbin.Integration(t)
	if out, err := combined(exec.Command("ip", "netns", "add", ns)); err != nil {
		t.Fatalf("ip netns add: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	for _, c := range setup {
		if out, err := combined(exec.Command(c[0], c[1:]...)); err != nil {
			t.Fatalf("%v: %v\n%s", c, err, out)
		}
	}
	state := t.TempDir()
	return func(args ...string) *exec.Cmd {
		c := exec.Command("ip", append([]string{"netns", "exec", ns, bin}, args...)...)
		c.Env = append(os.Environ(), "RIG_STATE_DIR="+state)
		return c
	}
}
