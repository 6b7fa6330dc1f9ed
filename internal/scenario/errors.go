package scenario

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/rig-project/rig/internal/cli"
)

// Error is one problem in a scenario file. Line and Col are 1-based and
// always set: a problem that has no node of its own points at the nearest
// enclosing one.
type Error struct {
	File      string
	Line, Col int
	Reason    string // one line: what is wrong
	Hint      string // the fix; may be ""
	Source    string // the offending source line, "" when unavailable
}

// Error renders "file:line:col: reason", the source line with a caret, and
// the hint.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d:%d: %s", e.File, e.Line, e.Col, e.Reason)
	if e.Source != "" {
		num := strconv.Itoa(e.Line)
		fmt.Fprintf(&b, "\n %s | %s\n %s | %s^", num, e.Source, strings.Repeat(" ", len(num)), caretPad(e.Source, e.Col))
	}
	if e.Hint != "" {
		fmt.Fprintf(&b, "\nhint: %s", e.Hint)
	}
	return b.String()
}

// caretPad keeps tabs so that the caret lines up under col (1-based, in
// characters as the YAML scanner counts them).
func caretPad(line string, col int) string {
	var b strings.Builder
	for i, r := range []rune(line) {
		if i >= col-1 {
			break
		}
		if r == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// ErrorList is every problem found, in file order. Load and Validate return
// one when the file is at fault; errors.As(err, &list) tells those apart from
// failures to read the file or the hosts.
type ErrorList []*Error

// Is makes a file at fault bad input (cli.ErrUsage).
func (l ErrorList) Is(target error) bool { return target == cli.ErrUsage }

func (l ErrorList) Error() string {
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = e.Error()
	}
	s := strings.Join(parts, "\n\n")
	if len(l) > 1 {
		s += fmt.Sprintf("\n\n%d problems in %s", len(l), l[0].File)
	}
	return s
}

func (l ErrorList) sorted() ErrorList {
	sort.SliceStable(l, func(i, j int) bool {
		if l[i].Line != l[j].Line {
			return l[i].Line < l[j].Line
		}
		return l[i].Col < l[j].Col
	})
	return l
}

// pos is a 1-based source position.
type pos struct{ line, col int }

// posEntry is where a path's key and value are in the source.
type posEntry struct {
	key, val pos
}

// posIndex maps paths such as "arms[2].responder.cpu" to source positions,
// so that checks done after decoding still point at the file.
type posIndex struct {
	file  string
	lines []string
	m     map[string]posEntry
}

func newPosIndex(file string, src []byte) *posIndex {
	return &posIndex{file: file, lines: strings.Split(string(src), "\n"), m: map[string]posEntry{}}
}

func tokPos(n ast.Node) pos {
	t := n.GetToken()
	if t == nil || t.Position == nil {
		return pos{1, 1}
	}
	return pos{t.Position.Line, t.Position.Column}
}

// nodePos is where a value starts: a block mapping's token is its first
// colon, so use the first key instead.
func nodePos(n ast.Node) pos {
	switch v := n.(type) {
	case *ast.MappingNode:
		if len(v.Values) > 0 && v.Values[0].Key != nil && v.Start != nil && v.Start.Value != "{" {
			return tokPos(v.Values[0].Key)
		}
	case *ast.MappingValueNode:
		if v.Key != nil {
			return tokPos(v.Key)
		}
	case *ast.AnchorNode:
		// "&a value": point at the anchor.
	}
	return tokPos(n)
}

// keyString is the text of a mapping key.
func keyString(k ast.MapKeyNode) string {
	if k == nil {
		return ""
	}
	if s, ok := k.(*ast.StringNode); ok {
		return s.Value
	}
	if t := k.GetToken(); t != nil {
		return t.Value
	}
	return k.String()
}

// walk indexes n at path and reports explicit nulls (a key with no value),
// which the decoder would silently treat as "not set".
func (x *posIndex) walk(n ast.Node, path string, nulls *[]string) {
	switch v := n.(type) {
	case nil:
	case *ast.DocumentNode:
		x.walk(v.Body, path, nulls)
	case *ast.AnchorNode:
		x.walk(v.Value, path, nulls)
	case *ast.TagNode:
		x.walk(v.Value, path, nulls)
	case *ast.MappingNode:
		x.setVal(path, nodePos(v))
		for _, mv := range v.Values {
			x.walk(mv, path, nulls)
		}
	case *ast.MappingValueNode:
		k := keyString(v.Key)
		if k == "<<" {
			return // merged keys keep the position of the enclosing mapping
		}
		p := joinPath(path, k)
		e := x.m[p]
		e.key = tokPos(v.Key)
		e.val = e.key
		x.m[p] = e
		if _, isNull := v.Value.(*ast.NullNode); isNull || v.Value == nil {
			*nulls = append(*nulls, p)
			return
		}
		x.walk(v.Value, p, nulls)
	case *ast.SequenceNode:
		x.setVal(path, nodePos(v))
		for i, e := range v.Values {
			p := fmt.Sprintf("%s[%d]", path, i)
			ep := nodePos(e)
			x.m[p] = posEntry{key: ep, val: ep}
			x.walk(e, p, nulls)
		}
	default:
		x.setVal(path, nodePos(v))
	}
}

func (x *posIndex) setVal(path string, p pos) {
	e, ok := x.m[path]
	if !ok {
		e.key = p
	}
	e.val = p
	x.m[path] = e
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// lookup finds the nearest indexed ancestor of path (a field the file leaves
// out, or one that came from a YAML merge, has no node of its own).
func (x *posIndex) lookup(path string) (posEntry, bool) {
	for p := path; ; {
		if e, ok := x.m[p]; ok {
			return e, p == path
		}
		i := strings.LastIndexAny(p, ".[")
		if i <= 0 {
			return posEntry{key: pos{1, 1}, val: pos{1, 1}}, false
		}
		p = p[:i]
	}
}

// pathAt is the path whose key (or else value) is at p, for messages about
// errors the decoder found. Of several matches the longest (innermost) wins.
func (x *posIndex) pathAt(p pos) (string, bool) {
	best, found := "", false
	for _, val := range []bool{false, true} {
		for path, e := range x.m {
			at := e.key
			if val {
				at = e.val
			}
			if at == p && (!found || len(path) > len(best)) {
				best, found = path, true
			}
		}
		if found {
			return best, true
		}
	}
	return "", false
}

func (x *posIndex) errAt(p pos, reason, hint string) *Error {
	e := &Error{File: x.file, Line: p.line, Col: p.col, Reason: reason, Hint: hint}
	if p.line >= 1 && p.line <= len(x.lines) {
		e.Source = strings.TrimRight(x.lines[p.line-1], "\r")
	}
	return e
}

// valErr points at the value of path; keyErr at its key.
func (x *posIndex) valErr(path, reason, hint string) *Error {
	e, _ := x.lookup(path)
	return x.errAt(e.val, reason, hint)
}

func (x *posIndex) keyErr(path, reason, hint string) *Error {
	e, _ := x.lookup(path)
	return x.errAt(e.key, reason, hint)
}

// has reports whether path is written in the file.
func (x *posIndex) has(path string) bool {
	_, ok := x.m[path]
	return ok
}
