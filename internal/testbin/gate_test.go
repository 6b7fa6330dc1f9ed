package testbin

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// creators are the calls by which a test builds a network namespace, starts
// stress-ng or checks for root itself.
var creators = []string{
	"netns.NewNamed(", "netlab.Up(", "load.Start(", `Command("stress-ng"`, `, "stress-ng", "--`, `"netns", "add"`, "unshare(", "os.Geteuid() != 0",
}

// gates are the calls that gate a test with Integration.
var gates = []string{"testbin.Integration(", "testbin.StressNG(", "netlabtest.New("}

// notGated are test files that may hold a creator without a gate, and why.
var notGated = map[string]string{
	"internal/testbin/need.go":       "the gate itself",
	"internal/chaos/chaos_test.go":   "runs only with RIG_CHAOS=1 (make chaos) and fails, not skips, without root",
	"internal/chaos/harness_test.go": "helpers of chaos_test.go",
}

// TestGate: every test function (and every helper) that builds a
// namespace, starts stress-ng or asks for root also calls the one gate
// (Integration, directly or through StressNG or netlabtest.New), so
// `go test -short ./...` starts none of them. .ci/unit-starts-nothing.sh
// runs the short suite and watches the host as well.
func TestGate(t *testing.T) {
	root := filepath.Join("..", "..")
	checked := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") || notGated[rel] != "" || rel == "internal/testbin/gate_test.go" {
			return nil
		}
		for name, src := range declarations(t, p) {
			for _, c := range creators {
				if !strings.Contains(src, c) {
					continue
				}
				checked++
				if !gated(src) {
					t.Errorf("%s: %s has %s but no gate: call testbin.Integration(t) (or testbin.StressNG, netlabtest.New) in it", rel, name, c)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no test file builds a namespace or starts stress-ng: the walk read nothing")
	}
}

func gated(src string) bool {
	return slices.ContainsFunc(gates, func(g string) bool { return strings.Contains(src, g) })
}

// declarations are the source texts of the top-level declarations of the
// Go file at path, by name.
func declarations(t *testing.T, path string) map[string]string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, b, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i, d := range f.Decls {
		name := fmt.Sprintf("declaration %d", i)
		if fd, ok := d.(*ast.FuncDecl); ok {
			name = fd.Name.Name
		}
		out[name] = string(b[fset.Position(d.Pos()).Offset:fset.Position(d.End()).Offset])
	}
	return out
}

// TestGateSeesOneTest: the gate check is per function: a file whose one
// test is gated and whose other builds a namespace unguarded is caught.
func TestGateSeesOneTest(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x_test.go")
	src := "package x\n\nfunc TestA(t *testing.T) { testbin.Integration(t) }\n\nfunc TestB(t *testing.T) { netlab.Up(ctx, \"b\", o) }\n"
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	d := declarations(t, p)
	if !gated(d["TestA"]) || gated(d["TestB"]) || !strings.Contains(d["TestB"], "netlab.Up(") {
		t.Errorf("declarations %q: want TestA gated, TestB not", d)
	}
}
