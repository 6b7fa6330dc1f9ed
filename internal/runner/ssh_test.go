package runner

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/netlab"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/testbin"
)

// TestRunResponderOverSSH reaches the responder host through a real
// OpenSSH server: sshd runs in the responder namespace with a host key and
// an authorized key made by the test, and the scenario's via is
// `ip netns exec SND ssh … root@RSP` (ssh from the sender namespace, the
// only place that routes to the responder).
func TestRunResponderOverSSH(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	sshd, err1 := exec.LookPath("sshd")
	if err1 != nil {
		if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
			t.Skip("OpenSSH server not installed (make deps installs openssh-server)")
		}
		sshd = "/usr/sbin/sshd"
	}
	if _, err := exec.LookPath("ssh"); err != nil {
		t.Skip("ssh client not installed")
	}
	topo := netlabtest.New(t, netlab.Options{})
	rig := testbin.Rig(t)
	dir := t.TempDir()
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	hostKey := filepath.Join(dir, "host_ed25519")
	userKey := filepath.Join(dir, "user_ed25519")
	run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hostKey)
	run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", userKey)
	pub, _ := os.ReadFile(userKey + ".pub")
	auth := filepath.Join(dir, "authorized_keys")
	os.WriteFile(auth, pub, 0o600)
	os.MkdirAll("/run/sshd", 0o755) // privilege separation directory
	addr := topo.Responder.Addr.String()
	cfg := filepath.Join(dir, "sshd_config")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`ListenAddress %s
Port 22
HostKey %s
AuthorizedKeysFile %s
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
StrictModes no
UsePAM no
PidFile %s/sshd.pid
LogLevel ERROR
`, addr, hostKey, auth, dir)), 0o600)
	var sshdLog bytes.Buffer
	d := exec.Command("ip", "netns", "exec", topo.Responder.Netns, sshd, "-D", "-e", "-f", cfg)
	d.Stdout, d.Stderr = &sshdLog, &sshdLog
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Process.Kill(); d.Wait() })
	sshArgs := fmt.Sprintf("ip netns exec %s ssh -F none -i %s -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR root@%s",
		topo.Sender.Netns, userKey, addr)
	// Wait until sshd answers.
	deadline := time.Now().Add(10 * time.Second)
	for {
		probe := exec.Command("sh", "-c", sshArgs+" true")
		if out, err := probe.CombinedOutput(); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("sshd not reachable: %v\n%s\nsshd: %s", err, out, sshdLog.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	// ssh passes no environment: the remote agent gets the test's state
	// directory through env(1), so nothing lands in /var/lib/rig.
	state := filepath.Join(dir, "state")
	sshAgent := sshArgs + " env " + journal.EnvDir + "=" + state
	yaml := fmt.Sprintf(`name: ssh
hosts:
  snd: {via: ip netns exec %s, roles: [sender], iface: %s}
  rsp: {via: %s, roles: [responder], iface: %s}
  cap: {via: ip netns exec %s, roles: [capture], iface: %s}
traffic:
  group: 239.55.0.1:7500
  interval: 1ms
  count: 300
timestamps: software
rounds: 1
arms:
  - name: block
    responder: {cpu: 0, poll: block}
`, topo.Sender.Netns, topo.Sender.Interface, sshAgent, topo.Responder.Interface, topo.Capture.Netns, topo.Capture.Interface)
	var log bytes.Buffer
	o := runOptions(t, dir, loadYAML(t, dir, "ssh.yaml", yaml), &log)
	o.RemoteRig = rig
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("run over ssh: %v\n%s\nsshd: %s", err, log.String(), sshdLog.String())
	}
	j, err := samples.JoinDir(rundir.RoundDir(res.Dir, "block", 0), 0)
	if err != nil {
		t.Fatal(err)
	}
	if c := j.Counters[samples.RoleResponder]; c.Received != 300 {
		t.Errorf("responder over ssh answered %d of 300", c.Received)
	}
	if !bytes.Contains(log.Bytes(), []byte("host rsp: agent pid")) {
		t.Errorf("no agent on rsp in the log:\n%s", log.String())
	}
	env, err := os.ReadFile(filepath.Join(res.Dir, rundir.EnvDir, "rsp.json"))
	if err != nil || !bytes.Contains(env, []byte("kernel")) {
		t.Errorf("env of the ssh host: %v %.200s", err, env)
	}
}
