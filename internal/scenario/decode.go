package scenario

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// docPos is where a document starts: its "---" when it has one.
func docPos(d *ast.DocumentNode) pos {
	if d.Start != nil && d.Start.Position != nil {
		return pos{d.Start.Position.Line, d.Start.Position.Column}
	}
	return nodePos(d.Body)
}

func stripComments(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") && t != "---" {
			b.WriteString(l)
		}
	}
	return b.String()
}

// yamlErr turns a goccy error into an *Error with a position and a hint.
func (x *posIndex) yamlErr(err error) *Error {
	var (
		syn *yaml.SyntaxError
		typ *yaml.TypeError
		ovf *yaml.OverflowError
		dup *yaml.DuplicateKeyError
		unk *yaml.UnknownFieldError
		unx *yaml.UnexpectedNodeTypeError
	)
	at := func(t *token.Token) pos {
		if t == nil || t.Position == nil {
			return pos{1, 1}
		}
		return pos{t.Position.Line, t.Position.Column}
	}
	switch {
	case errors.As(err, &unk):
		p := at(unk.Token)
		path, _ := x.pathAt(p)
		name := path
		if i := strings.LastIndexAny(path, ".]"); i >= 0 {
			name = path[i+1:]
		}
		if name == "" {
			name = unk.Token.Value
		}
		parent := parentPath(path)
		known := knownKeys(parent)
		where := "at the top level"
		if parent != "" {
			where = "in " + parent
		}
		hint := "known fields " + where + ": " + strings.Join(known, ", ")
		if d := closest(name, known); d != "" {
			hint = fmt.Sprintf("did you mean %q? %s", d, hint)
		}
		return x.errAt(p, fmt.Sprintf("unknown field %q %s", name, where), hint)
	case errors.As(err, &dup):
		return x.errAt(at(dup.Token), dup.Message, "a key may appear once in a mapping: delete or merge the repeated one")
	case errors.As(err, &typ):
		p := at(typ.Token)
		path, _ := x.pathAt(p)
		want := kindName(typ.DstType)
		got := "a " + strings.TrimPrefix(fmt.Sprint(typ.SrcType), "[]interface {}")
		if typ.SrcType != nil {
			got = kindName(typ.SrcType)
		}
		reason := fmt.Sprintf("want %s, got %s", want, got)
		if path != "" {
			reason = path + ": " + reason
		}
		return x.errAt(p, reason, "docs/scenarios.md gives the type of each field")
	case errors.As(err, &ovf):
		p := at(ovf.Token)
		return x.errAt(p, fmt.Sprintf("number %s is out of range", ovf.SrcNum), "use a value docs/scenarios.md allows for this field")
	case errors.As(err, &unx):
		p := at(unx.Token)
		path, _ := x.pathAt(p)
		reason := fmt.Sprintf("want %s, got %s", nodeKindName(unx.Expected), nodeKindName(unx.Actual))
		if path != "" {
			reason = path + ": " + reason
		}
		return x.errAt(p, reason, "check the indentation: nested fields go on their own lines, indented under their parent")
	case errors.As(err, &syn) && strings.Contains(syn.Message, "already defined"):
		// The parser reports duplicate keys as syntax errors.
		return x.errAt(at(syn.Token), syn.Message, "a key may appear once in a mapping: delete or merge the repeated one")
	case errors.As(err, &syn):
		return x.errAt(at(syn.Token), "YAML syntax: "+syn.Message, "check indentation (spaces, not tabs), colons after keys, and quotes around values with ':' or '#'")
	}
	var ye yaml.Error
	if errors.As(err, &ye) {
		return x.errAt(at(ye.GetToken()), ye.GetMessage(), "")
	}
	// Errors without a token (should not happen with the options used):
	// still point at the file.
	return x.errAt(pos{1, 1}, err.Error(), "")
}

func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}

func kindName(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64, reflect.Uint32:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping (key: value lines)"
	}
	return "a " + t.String()
}

func nodeKindName(t ast.NodeType) string {
	switch t {
	case ast.MappingType, ast.MappingValueType:
		return "a mapping (key: value lines)"
	case ast.SequenceType:
		return "a list"
	case ast.StringType:
		return "a string"
	case ast.IntegerType:
		return "a whole number"
	case ast.BoolType:
		return "true or false"
	case ast.NullType:
		return "nothing"
	}
	return strings.ToLower(t.String())
}

// knownKeys lists the fields allowed under path, from the raw types.
func knownKeys(path string) []string {
	t := reflect.TypeOf(rawScenario{})
	if path != "" {
		for _, seg := range splitPath(path) {
			for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
				if t.Kind() == reflect.Slice && !strings.HasPrefix(seg, "[") {
					return nil
				}
				if t.Kind() == reflect.Slice {
					t = t.Elem()
					seg = ""
					break
				}
				t = t.Elem()
			}
			if seg == "" {
				continue
			}
			switch t.Kind() {
			case reflect.Map:
				t = t.Elem()
			case reflect.Struct:
				f, ok := fieldByTag(t, seg)
				if !ok {
					return nil
				}
				t = f
			default:
				return nil
			}
		}
	}
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	var collect func(reflect.Type)
	collect = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("yaml")
			if tag == ",inline" {
				collect(f.Type)
				continue
			}
			out = append(out, tag)
		}
	}
	collect(t)
	return out
}

func fieldByTag(t reflect.Type, tag string) (reflect.Type, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		ft := f.Tag.Get("yaml")
		if ft == ",inline" {
			if r, ok := fieldByTag(f.Type, tag); ok {
				return r, true
			}
			continue
		}
		if ft == tag {
			return f.Type, true
		}
	}
	return nil, false
}

// splitPath splits "arms[2].nic.ring" into "arms", "[2]", "nic", "ring".
func splitPath(p string) []string {
	var out []string
	for _, part := range strings.Split(p, ".") {
		for {
			i := strings.IndexByte(part, '[')
			if i < 0 {
				break
			}
			if i > 0 {
				out = append(out, part[:i])
			}
			j := strings.IndexByte(part, ']')
			if j < i {
				break
			}
			out = append(out, part[i:j+1])
			part = part[j+1:]
		}
		if part != "" {
			out = append(out, part)
		}
	}
	return out
}

// closest returns the candidate within edit distance 2 of s, if any.
func closest(s string, cands []string) string {
	best, bestD := "", 3
	for _, c := range cands {
		if d := editDistance(strings.ToLower(s), c); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" {
		// "rx_usecs" for "rx-usecs": the other spelling of a separator.
		alt := strings.ReplaceAll(s, "_", "-")
		if slices.Contains(cands, alt) {
			return alt
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
