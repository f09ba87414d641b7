package localflow

import (
	"fmt"
	"strings"
)

// template is a compiled payload template (Parameters, ResultSelector): a
// JSON object whose fields named `….$` are evaluated (a path, a context path
// or an intrinsic) and whose nested objects are templates too. Arrays and
// other values are copied as they are.
type template struct {
	fields []templateField
}

type templateField struct {
	key string
	lit any
	sub *template
	dyn expr
}

// compileTemplate compiles v, found at field (for errors).
func compileTemplate(v any, field string) (*template, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, &fieldError{field: field, reason: "must be a JSON object"}
	}
	keys := sortedKeys(obj)
	t := &template{}
	seen := map[string]bool{}
	for _, k := range keys {
		val := obj[k]
		f := templateField{key: k}
		if name, ok := strings.CutSuffix(k, ".$"); ok {
			f.key = name
			s, isString := val.(string)
			if !isString {
				return nil, &fieldError{field: field + "." + k, reason: "must be a string (a JSONPath or an intrinsic function)"}
			}
			e, err := parseDynamic(s)
			if err != nil {
				return nil, &fieldError{field: field + "." + k, reason: err.Error()}
			}
			f.dyn = e
		} else if sub, isObj := val.(map[string]any); isObj {
			st, err := compileTemplate(sub, field+"."+k)
			if err != nil {
				return nil, err
			}
			f.sub = st
		} else {
			f.lit = val
		}
		if seen[f.key] {
			return nil, &fieldError{field: field + "." + k, reason: fmt.Sprintf("%q is given twice (with and without .$)", f.key)}
		}
		seen[f.key] = true
		t.fields = append(t.fields, f)
	}
	return t, nil
}

// fieldError is a definition error in a nested field, turned into a
// DefinitionError by Load.
type fieldError struct{ field, reason string }

func (e *fieldError) Error() string { return fmt.Sprintf("field %q: %s", e.field, e.reason) }

// eval builds the template's object from env.
func (t *template) eval(env *evalEnv) (map[string]any, error) {
	out := make(map[string]any, len(t.fields))
	for _, f := range t.fields {
		switch {
		case f.dyn != nil:
			v, err := f.dyn.eval(env)
			if err != nil {
				return nil, err
			}
			out[f.key] = v
		case f.sub != nil:
			v, err := f.sub.eval(env)
			if err != nil {
				return nil, err
			}
			out[f.key] = v
		default:
			out[f.key] = f.lit
		}
	}
	return out, nil
}

// contextPaths lists the context-object paths a template uses, for Load's
// checks.
func (t *template) contextPaths() []path {
	var ps []path
	for _, f := range t.fields {
		switch {
		case f.dyn != nil:
			ps = append(ps, exprContextPaths(f.dyn)...)
		case f.sub != nil:
			ps = append(ps, f.sub.contextPaths()...)
		}
	}
	return ps
}

func exprContextPaths(e expr) []path {
	switch x := e.(type) {
	case pathExpr:
		if x.p.context {
			return []path{x.p}
		}
	case *callExpr:
		var ps []path
		for _, a := range x.args {
			ps = append(ps, exprContextPaths(a)...)
		}
		return ps
	}
	return nil
}
