// Package hostfstest builds host roots for tests of the code that changes
// a host (hostfs.EnvRoot): the live machine everywhere, except where the
// test needs a knob the machine lacks.
package hostfstest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/hostfs"
)

// IdleStates is what IdleRoot gives every CPU: POLL, C1 and C6.
var IdleStates = []string{"POLL", "C1", "C6"}

// IdleRoot returns a host root that is the live machine — /proc and every
// part of /sys are symlinks to the real ones, so a process in a network
// namespace still sees its namespace's interfaces — except for
// /sys/devices/system/cpu: a copy of the real CPU files (online, topology,
// isolated, …) in which every CPU has the cpuidle states IdleStates, with
// writable "disable" files. A cpuidle knob journaled and undone below it
// is a real journaled change to files the test can read, on a machine
// whose cpuidle driver is "none". The tree is removed after the test.
// Code that resolves /sys links inside the root (nicctl's NIC and IRQ
// discovery) cannot follow the links out of it: use the live root for NIC
// knobs.
func IdleRoot(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	// Every process of the test (agents, probes) reads it.
	os.Chmod(root, 0o755)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("hostfstest: %v", err)
		}
	}
	must(os.Symlink("/proc", filepath.Join(root, "proc")))
	must(mirror("/sys", filepath.Join(root, "sys"), "devices"))
	must(mirror("/sys/devices", filepath.Join(root, "sys/devices"), "system"))
	must(mirror("/sys/devices/system", filepath.Join(root, "sys/devices/system"), "cpu"))
	cpu := filepath.Join(root, "sys/devices/system/cpu")
	ents, err := os.ReadDir("/sys/devices/system/cpu")
	must(err)
	for _, e := range ents {
		src, dst := filepath.Join("/sys/devices/system/cpu", e.Name()), filepath.Join(cpu, e.Name())
		switch {
		case e.Type().IsRegular():
			must(copyFile(src, dst))
		case isCPU(e.Name()):
			must(copyCPU(src, dst))
		case e.Name() == "cpuidle":
			must(os.MkdirAll(dst, 0o755))
			must(os.WriteFile(filepath.Join(dst, "current_driver"), []byte("hostfstest\n"), 0o644))
			must(os.WriteFile(filepath.Join(dst, "current_governor"), []byte("menu\n"), 0o644))
		default:
			must(os.Symlink(src, dst))
		}
	}
	return root
}

// mirror makes dst a directory of symlinks to every entry of src except
// skip, which is left for the caller to fill.
func mirror(src, dst, skip string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Name() == skip {
			continue
		}
		if err := os.Symlink(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return os.MkdirAll(filepath.Join(dst, skip), 0o755)
}

func isCPU(name string) bool {
	n := strings.TrimPrefix(name, "cpu")
	if n == name || n == "" {
		return false
	}
	for _, c := range n {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// copyCPU copies a cpuN directory's topology and plain files, links the
// rest, and adds the fake cpuidle states.
func copyCPU(src, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		s, d := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		switch {
		case e.Name() == "cpuidle":
		case e.Name() == "topology":
			err = filepath.WalkDir(s, func(p string, de fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				out := filepath.Join(d, strings.TrimPrefix(p, s))
				if de.IsDir() {
					return os.MkdirAll(out, 0o755)
				}
				return copyFile(p, out)
			})
		case e.Type().IsRegular():
			err = copyFile(s, d)
		default:
			err = os.Symlink(s, d)
		}
		if err != nil {
			return err
		}
	}
	for i, name := range IdleStates {
		d := filepath.Join(dst, "cpuidle", fmt.Sprintf("state%d", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		for f, v := range map[string]string{"name": name, "desc": name + " (hostfstest)", "latency": fmt.Sprint(i * i * 10),
			"residency": fmt.Sprint(i * i * 20), "usage": "0", "time": "0", "above": "0", "below": "0", "disable": "0"} {
			if err := os.WriteFile(filepath.Join(d, f), []byte(v+"\n"), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// copyFile copies a sysfs file's content; one the kernel does not let us
// read (write-only, root-only) becomes an empty file.
func copyFile(src, dst string) error {
	b, _ := os.ReadFile(src)
	return os.WriteFile(dst, b, 0o644)
}

// Disabled returns the content of cpu's idle state k "disable" file below
// root ("0\n" until something disables it).
func Disabled(t testing.TB, root string, cpu, k int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, fmt.Sprintf("sys/devices/system/cpu/cpu%d/cpuidle/state%d/disable", cpu, k)))
	if err != nil {
		t.Fatalf("hostfstest: %v", err)
	}
	return string(b)
}

// Fixture is the fixture host tree name of internal/hostinfo/testdata
// (trees built from real hosts' files), read in place, for a test of a
// package beside internal/hostinfo; CopyTree makes a copy to change.
func Fixture(name string) hostfs.FS { return hostfs.FS{Root: "../hostinfo/testdata/" + name} }

// CopyTree copies the fixture host tree src (symlinks kept as links, files
// writable) to a temporary directory removed after the test, so a test can
// change the copy's files; it returns the copy's root.
func CopyTree(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}
