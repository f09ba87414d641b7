package localflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// path is a parsed reference path: `$` (the state's data) or `$$` (the
// context object) followed by field names (`.name`, `['name']`) and array
// indexes (`[0]`). Wildcards, filters, slices and recursive descent are not
// supported.
type path struct {
	src     string
	context bool
	steps   []pathStep
}

// pathStep is one field name, or one array index when index >= 0.
type pathStep struct {
	name  string
	index int
}

// errPathNotFound reports a path that selects nothing in a document.
var errPathNotFound = errors.New("path not found")

// parsePath parses a reference path.
func parsePath(s string) (path, error) {
	p := path{src: s}
	rest, ok := strings.CutPrefix(s, "$$")
	if ok {
		p.context = true
	} else if rest, ok = strings.CutPrefix(s, "$"); !ok {
		return path{}, fmt.Errorf("invalid JSONPath %q: must start with $", s)
	}
	for rest != "" {
		switch rest[0] {
		case '.':
			rest = rest[1:]
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			name := rest[:end]
			if name == "" {
				return path{}, fmt.Errorf("invalid JSONPath %q: empty field name (recursive descent is not supported)", s)
			}
			if strings.ContainsAny(name, "*?@()'\",:] \t\n$") {
				return path{}, fmt.Errorf("invalid JSONPath %q: unsupported character in field name %q", s, name)
			}
			p.steps = append(p.steps, pathStep{name: name, index: -1})
			rest = rest[end:]
		case '[':
			step, n, err := parseBracket(rest)
			if err != nil {
				return path{}, fmt.Errorf("invalid JSONPath %q: %w", s, err)
			}
			p.steps = append(p.steps, step)
			rest = rest[n:]
		default:
			return path{}, fmt.Errorf("invalid JSONPath %q: unexpected %q", s, rest[0])
		}
	}
	return p, nil
}

// parseBracket parses `['name']`, `["name"]` or `[n]` at the start of s and
// returns the step and the number of bytes it took.
func parseBracket(s string) (pathStep, int, error) {
	if len(s) >= 2 && (s[1] == '\'' || s[1] == '"') {
		q := s[1]
		end := strings.IndexByte(s[2:], q)
		if end < 0 || 2+end+1 >= len(s) || s[2+end+1] != ']' {
			return pathStep{}, 0, errors.New("unterminated quoted field name")
		}
		name := s[2 : 2+end]
		if name == "" {
			return pathStep{}, 0, errors.New("empty field name")
		}
		return pathStep{name: name, index: -1}, 2 + end + 2, nil
	}
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return pathStep{}, 0, errors.New("unterminated [")
	}
	inner := s[1:end]
	i, err := strconv.Atoi(inner)
	if err != nil || i < 0 || inner != strconv.Itoa(i) {
		return pathStep{}, 0, fmt.Errorf("unsupported selector [%s] (only field names and non-negative indexes)", inner)
	}
	return pathStep{index: i}, end + 1, nil
}

// isFieldsOnly reports whether the path is `$` followed by field names only
// (what ResultPath may be).
func (p path) isFieldsOnly() bool {
	if p.context {
		return false
	}
	for _, s := range p.steps {
		if s.index >= 0 {
			return false
		}
	}
	return true
}

// get selects the path's value in doc.
func (p path) get(doc any) (any, error) {
	v := doc
	for _, s := range p.steps {
		if s.index >= 0 {
			a, ok := v.([]any)
			if !ok || s.index >= len(a) {
				return nil, errPathNotFound
			}
			v = a[s.index]
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, errPathNotFound
		}
		if v, ok = m[s.name]; !ok {
			return nil, errPathNotFound
		}
	}
	return v, nil
}

// set returns doc with the value at the path (field names only) replaced by
// val, creating missing objects on the way. Objects along the path are
// copied, so doc itself is never modified.
func (p path) set(doc any, val any) (any, error) {
	return setSteps(doc, p.steps, val, p.src)
}

func setSteps(doc any, steps []pathStep, val any, src string) (any, error) {
	if len(steps) == 0 {
		return val, nil
	}
	var m map[string]any
	switch d := doc.(type) {
	case map[string]any:
		m = make(map[string]any, len(d)+1)
		for k, v := range d {
			m[k] = v
		}
	case nil:
		m = map[string]any{}
	default:
		return nil, fmt.Errorf("cannot apply ResultPath %q: the value before field %q is not an object", src, steps[0].name)
	}
	child, ok := m[steps[0].name]
	if !ok {
		child = nil
	}
	v, err := setSteps(child, steps[1:], val, src)
	if err != nil {
		return nil, err
	}
	m[steps[0].name] = v
	return m, nil
}

// decodeJSON decodes one JSON value, numbers as json.Number.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after JSON value")
	}
	return v, nil
}

// encodeJSON encodes a value decoded by decodeJSON (or built from such
// values). Object keys come out sorted.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// canonicalJSON re-encodes a JSON document with sorted keys and no
// insignificant whitespace, so that equal documents compare equal.
func canonicalJSON(b []byte) ([]byte, error) {
	v, err := decodeJSON(b)
	if err != nil {
		return nil, err
	}
	return encodeJSON(v)
}
