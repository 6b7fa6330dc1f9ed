package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
)

// On a single-ENI Graviton host (fake c8g tree: ens5 carries the default
// route) `rig run --dry-run` refuses an IRQ arm up front, and allow-mgmt
// lets it through.
func TestDryRunSingleENI(t *testing.T) {
	c8g := hostfs.FS{Root: "../../internal/hostinfo/testdata/c8g"}
	src := `name: c8g-single-eni
hosts:
  h: {via: local, roles: [sender, responder], iface: ens5%s}
traffic:
  group: 239.1.1.1:5000
arms:
  - name: base
    responder: {cpu: 3}
  - name: irq-local
    responder: {cpu: 3}
    irq: {cpus: [3]}
`
	dir := t.TempDir()
	write := func(extra string) string {
		p := filepath.Join(dir, "s.yaml")
		if err := os.WriteFile(p, []byte(strings.Replace(src, "%s", extra, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var out bytes.Buffer
	err := dryRun(context.Background(), &out, write(""), c8g)
	if err == nil || !strings.Contains(err.Error(), "ens5 on host h carries the default route") || !strings.Contains(err.Error(), "allow-mgmt: true") {
		t.Fatalf("dry run on a single ENI: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := dryRun(context.Background(), &out, write(", allow-mgmt: true"), c8g); err != nil {
		t.Fatalf("allow-mgmt: %v", err)
	}
	if !strings.Contains(out.String(), "IRQs of ens5 queues → CPUs 3") {
		t.Fatalf("plan:\n%s", out.String())
	}
}

// On a two-node host (fake tree: ens1 on node 1) `rig run --dry-run`
// goes ahead and prints the warning for the arm whose responder CPU is
// on node 0, at its place in the file.
func TestDryRunNUMAWarning(t *testing.T) {
	numa2 := hostfs.FS{Root: "../../internal/hostinfo/testdata/numa2"}
	var out bytes.Buffer
	f := "../../internal/scenario/testdata/numa/warn-cpu-off-node.yaml"
	if err := dryRun(context.Background(), &out, f, numa2); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "warning: "+f+":14:22: arm far: responder CPU 1 on host rsp is on NUMA node 0") {
		t.Fatalf("dry run:\n%s", out.String())
	}
}
