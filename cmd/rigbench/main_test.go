package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/native"
)

// rigbench runs rigbench ARGS in this process as main does.
func rigbench(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

// exe writes an executable file at dir/name and returns its path.
func exe(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFindRig: --rig names the binary (a path, or a name on PATH);
// without it, rig beside rigbench, else bin/rig, else rig on PATH; the
// path is absolute (the bench runs it from other directories). Not found:
// bad input naming --rig.
func TestFindRig(t *testing.T) {
	root := t.TempDir()
	self := filepath.Join(root, "tools", "rigbench")
	beside, work, path := filepath.Join(root, "tools"), filepath.Join(root, "work"), filepath.Join(root, "path")
	for _, d := range []string{beside, work, path} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(work)
	t.Setenv("PATH", path)
	find := func(given, want string) {
		t.Helper()
		if got, err := findRig(given, self); err != nil || got != want {
			t.Errorf("findRig(%q): %q, %v; want %q", given, got, err, want)
		}
	}
	refused := func(given, want string) {
		t.Helper()
		_, err := findRig(given, self)
		if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), want) {
			t.Errorf("findRig(%q): %v; want a usage error with %q", given, err, want)
		}
	}
	refused("", "build it (make build) or name it with --rig PATH")
	onPath := exe(t, path, "rig")
	find("", onPath)
	inBin := exe(t, filepath.Join(work, "bin"), "rig")
	find("", inBin)
	find("bin/rig", inBin)
	find(filepath.Join(work, "bin", "rig"), inBin)
	find(exe(t, beside, "rig"), filepath.Join(beside, "rig"))
	find("", filepath.Join(beside, "rig"))
	find("rig", onPath)
	refused(filepath.Join(root, "nonexistent"), "--rig "+filepath.Join(root, "nonexistent")+": ")
	refused(work, "--rig "+work+": ")
	if err := os.WriteFile(filepath.Join(work, "plain"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	refused(filepath.Join(work, "plain"), "permission denied")
}

// TestGrammar: the assertions rig's grammar tests made of `rig bench`,
// kept for rigbench: help after an argument, a stray argument refused, its
// one --format, bad values and a missing rig binary are bad input (exit
// 2) found before anything runs.
func TestGrammar(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("PATH", t.TempDir())
	t.Setenv(native.EnvDir, "")
	fake := exe(t, t.TempDir(), "rig")
	for _, c := range []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{args: []string{"x", "-h"}, stdout: "usage: rigbench [--rig PATH]"},
		{args: []string{"stray", "--help"}, stdout: "--rig PATH"},
		{args: []string{"stray"}, code: 2, stderr: `rigbench: unexpected arguments ["stray"]: it takes none`},
		{args: []string{"--", "-h"}, code: 2, stderr: `unexpected arguments ["-h"]`},
		{args: []string{"--format", "json"}, code: 2, stderr: `invalid value "json" for flag --format: want md`},
		{args: []string{"--format", "md", "--rounds", "x"}, code: 2, stderr: "--rounds"},
		{args: []string{"--bogus"}, code: 2, stderr: "not defined: --bogus ('rigbench -h' lists the flags)"},
		{args: []string{"--smoke"}, code: 2, stderr: "rigbench: no rig binary beside rigbench"},
		{args: []string{"--rig", "nonexistent", "--smoke"}, code: 2, stderr: "rigbench: --rig nonexistent: "},
		{args: []string{"--rig", fake, "--format", "md", "--parts", "pacing"}, code: 2, stderr: `"pacing"`},
		{args: []string{"--rig", fake, "--analysis-sizes", "lots"}, code: 2, stderr: "lots"},
		{args: []string{"--rig", fake, "--engines", "xdp"}, code: 2, stderr: "want go or native"},
		{args: []string{"--rig", fake, "--engines", "native"}, code: 2, stderr: "want go among them"},
		// No rig-respond-native beside the rig binary: the native rounds
		// are refused before anything runs, with the way out.
		{args: []string{"--rig", fake, "--parts", "cost"}, code: 2, stderr: "rig-respond-native is missing"},
		{args: []string{"--rig", fake, "--parts", "rtt", "--engines", "go,native"}, code: 2, stderr: "or run without them: --engines go"},
	} {
		code, stdout, stderr := rigbench(c.args...)
		if code != c.code || !strings.Contains(stdout, c.stdout) || !strings.Contains(stderr, c.stderr) {
			t.Errorf("rigbench %q: exit %d, want %d; stdout %q, want %q in it; stderr %q, want %q in it",
				c.args, code, c.code, stdout, c.stdout, stderr, c.stderr)
		}
	}
}
