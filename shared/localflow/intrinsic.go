package localflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// expr is a dynamic value in a payload template (a field whose name ends in
// `.$`), in a Fail state's ErrorPath/CausePath or an intrinsic's argument: a
// reference path, a context path, a literal or an intrinsic function call.
type expr interface {
	eval(env *evalEnv) (any, error)
}

// evalEnv is what expressions read: the data a template applies to and the
// context object (built on first use).
type evalEnv struct {
	data    any
	context func() any
}

// pathExpr reads a reference path from the data, or from the context object
// when it starts with `$$`.
type pathExpr struct{ p path }

func (e pathExpr) eval(env *evalEnv) (any, error) {
	doc := env.data
	if e.p.context {
		doc = env.context()
	}
	v, err := e.p.get(doc)
	if err != nil {
		where := "the state's data"
		if e.p.context {
			where = "the context object"
		}
		return nil, runtimeErrorf("the JSONPath %q could not be found in %s", e.p.src, where)
	}
	return v, nil
}

// literalExpr is a constant intrinsic argument.
type literalExpr struct {
	v any
	// raw is a string literal's text with its escapes, for States.Format
	// templates (an escaped brace is not a placeholder).
	raw string
}

func (e literalExpr) eval(*evalEnv) (any, error) { return e.v, nil }

// callExpr is an intrinsic function call.
type callExpr struct {
	src  string
	name string
	args []expr
}

// intrinsics are the supported intrinsic functions with their arity checks.
var intrinsics = map[string]func(c *callExpr) error{
	"States.MathAdd": func(c *callExpr) error {
		if len(c.args) != 2 {
			return fmt.Errorf("States.MathAdd takes 2 arguments, got %d", len(c.args))
		}
		return nil
	},
	"States.Format": func(c *callExpr) error {
		if len(c.args) == 0 {
			return errors.New("States.Format needs a template argument")
		}
		tpl, ok := c.args[0].(literalExpr)
		if _, isString := tpl.v.(string); !ok || !isString {
			return errors.New("States.Format's first argument must be a string literal")
		}
		if n := len(formatPieces(tpl.raw)) - 1; n != len(c.args)-1 {
			return fmt.Errorf("States.Format template has %d placeholders but %d values", n, len(c.args)-1)
		}
		return nil
	},
}

func (c *callExpr) eval(env *evalEnv) (any, error) {
	vals := make([]any, len(c.args))
	for i, a := range c.args {
		v, err := a.eval(env)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	switch c.name {
	case "States.MathAdd":
		var sum int64
		for i, v := range vals {
			n, ok := v.(json.Number)
			if !ok {
				return nil, runtimeErrorf("%s: argument %d is not a number", c.src, i+1)
			}
			x, err := n.Int64()
			if err != nil {
				return nil, runtimeErrorf("%s: argument %d (%s) is not an integer", c.src, i+1, n)
			}
			if (x > 0 && sum > math.MaxInt64-x) || (x < 0 && sum < math.MinInt64-x) {
				return nil, runtimeErrorf("%s: integer overflow", c.src)
			}
			sum += x
		}
		return json.Number(strconv.FormatInt(sum, 10)), nil
	case "States.Format":
		pieces := formatPieces(c.args[0].(literalExpr).raw)
		var b strings.Builder
		for i, piece := range pieces {
			b.WriteString(piece)
			if i == len(pieces)-1 {
				break
			}
			switch v := vals[i+1].(type) {
			case string:
				b.WriteString(v)
			case json.Number:
				b.WriteString(v.String())
			case bool:
				b.WriteString(strconv.FormatBool(v))
			case nil:
				b.WriteString("null")
			default:
				return nil, runtimeErrorf("%s: argument %d is not a string, number, boolean or null", c.src, i+2)
			}
		}
		return b.String(), nil
	}
	return nil, runtimeErrorf("%s: unsupported intrinsic", c.src)
}

// formatPieces splits a States.Format template (its raw text, escapes
// included) at its `{}` placeholders and resolves the escapes in the pieces.
func formatPieces(raw string) []string {
	var pieces []string
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		switch {
		case raw[i] == '\\' && i+1 < len(raw):
			i++
			b.WriteByte(raw[i])
		case raw[i] == '{' && i+1 < len(raw) && raw[i+1] == '}':
			pieces = append(pieces, b.String())
			b.Reset()
			i++
		default:
			b.WriteByte(raw[i])
		}
	}
	return append(pieces, b.String())
}

// parseDynamic parses the value of a `.$` field: a reference path, a
// context path or an intrinsic function call.
func parseDynamic(s string) (expr, error) {
	s = strings.TrimSpace(s)
	switch {
	case strings.HasPrefix(s, "$"):
		p, err := parsePath(s)
		if err != nil {
			return nil, err
		}
		return pathExpr{p}, nil
	case strings.HasPrefix(s, "States."):
		ip := &intrinsicParser{src: s}
		c, err := ip.call()
		if err != nil {
			return nil, fmt.Errorf("invalid intrinsic %q: %w", s, err)
		}
		ip.space()
		if ip.pos != len(s) {
			return nil, fmt.Errorf("invalid intrinsic %q: unexpected %q after the call", s, s[ip.pos:])
		}
		return c, nil
	}
	return nil, fmt.Errorf("%q is neither a JSONPath nor an intrinsic function", s)
}

// intrinsicParser parses intrinsic function calls.
type intrinsicParser struct {
	src string
	pos int
}

func (p *intrinsicParser) space() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t' || p.src[p.pos] == '\n') {
		p.pos++
	}
}

func (p *intrinsicParser) call() (*callExpr, error) {
	start := p.pos
	open := strings.IndexByte(p.src[p.pos:], '(')
	if open < 0 {
		return nil, errors.New("missing (")
	}
	name := strings.TrimSpace(p.src[p.pos : p.pos+open])
	check, ok := intrinsics[name]
	if !ok {
		return nil, &unsupportedIntrinsicError{name: name}
	}
	p.pos += open + 1
	c := &callExpr{name: name}
	p.space()
	if p.pos < len(p.src) && p.src[p.pos] == ')' {
		p.pos++
	} else {
		for {
			a, err := p.arg()
			if err != nil {
				return nil, err
			}
			c.args = append(c.args, a)
			p.space()
			if p.pos >= len(p.src) {
				return nil, errors.New("missing )")
			}
			if p.src[p.pos] == ')' {
				p.pos++
				break
			}
			if p.src[p.pos] != ',' {
				return nil, fmt.Errorf("expected , or ) at %q", p.src[p.pos:])
			}
			p.pos++
		}
	}
	c.src = p.src[start:p.pos]
	if err := check(c); err != nil {
		return nil, err
	}
	return c, nil
}

func (p *intrinsicParser) arg() (expr, error) {
	p.space()
	if p.pos >= len(p.src) {
		return nil, errors.New("missing argument")
	}
	rest := p.src[p.pos:]
	switch {
	case rest[0] == '\'':
		return p.stringLiteral()
	case strings.HasPrefix(rest, "States."):
		return p.call()
	case rest[0] == '$':
		end := p.pos
		inQuote := byte(0)
		for ; end < len(p.src); end++ {
			ch := p.src[end]
			if inQuote != 0 {
				if ch == inQuote {
					inQuote = 0
				}
				continue
			}
			if ch == '\'' || ch == '"' {
				inQuote = ch
				continue
			}
			if ch == ',' || ch == ')' || ch == ' ' || ch == '\t' || ch == '\n' {
				break
			}
		}
		pth, err := parsePath(p.src[p.pos:end])
		if err != nil {
			return nil, err
		}
		p.pos = end
		return pathExpr{pth}, nil
	}
	end := p.pos
	for end < len(p.src) && !strings.ContainsRune(",) \t\n", rune(p.src[end])) {
		end++
	}
	tok := p.src[p.pos:end]
	p.pos = end
	switch tok {
	case "true":
		return literalExpr{v: true}, nil
	case "false":
		return literalExpr{v: false}, nil
	case "null":
		return literalExpr{v: nil}, nil
	}
	if v, err := decodeJSON([]byte(tok)); err == nil {
		if n, ok := v.(json.Number); ok {
			return literalExpr{v: n}, nil
		}
	}
	return nil, fmt.Errorf("unsupported argument %q", tok)
}

// stringLiteral parses '…' with the escapes \' \{ \} \\.
func (p *intrinsicParser) stringLiteral() (expr, error) {
	p.pos++ // opening quote
	start := p.pos
	var b strings.Builder
	for p.pos < len(p.src) {
		ch := p.src[p.pos]
		switch {
		case ch == '\\' && p.pos+1 < len(p.src):
			b.WriteByte(p.src[p.pos+1])
			p.pos += 2
		case ch == '\'':
			raw := p.src[start:p.pos]
			p.pos++
			return literalExpr{v: b.String(), raw: raw}, nil
		default:
			b.WriteByte(ch)
			p.pos++
		}
	}
	return nil, errors.New("unterminated string literal")
}

// unsupportedIntrinsicError names an intrinsic function outside the subset.
type unsupportedIntrinsicError struct{ name string }

func (e *unsupportedIntrinsicError) Error() string {
	return fmt.Sprintf("intrinsic function %q is not supported (supported: States.Format, States.MathAdd)", e.name)
}
