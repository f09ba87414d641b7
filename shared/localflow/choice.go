package localflow

import (
	"encoding/json"
	"fmt"
	"math/big"
)

// Supported Choice comparators.
const (
	cmpStringEquals        = "StringEquals"
	cmpNumericLessThan     = "NumericLessThan"
	cmpNumericLessThanPath = "NumericLessThanPath"
	cmpBooleanEquals       = "BooleanEquals"
	cmpIsPresent           = "IsPresent"
)

// rule is a compiled Choice rule: a comparison on Variable, or And/Or/Not of
// nested rules. Top-level rules carry Next.
type rule struct {
	and, or []*rule
	not     *rule

	variable  path
	op        string
	value     any
	valuePath path

	next string
}

// compileRule compiles a Choice rule found at field (e.g. "Choices[1]").
func compileRule(v any, field string, top bool) (*rule, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, &fieldError{field: field, reason: "must be a JSON object"}
	}
	keys := sortedKeys(obj)
	r := &rule{}
	var ops []string
	for _, k := range keys {
		switch k {
		case "Comment":
		case "Next":
			if !top {
				return nil, &fieldError{field: field + ".Next", reason: "is only allowed on a top-level rule"}
			}
			s, ok := obj[k].(string)
			if !ok || s == "" {
				return nil, &fieldError{field: field + ".Next", reason: "must be a state name"}
			}
			r.next = s
		case "Variable":
			s, ok := obj[k].(string)
			if !ok {
				return nil, &fieldError{field: field + ".Variable", reason: "must be a JSONPath string"}
			}
			p, err := parsePath(s)
			if err != nil {
				return nil, &fieldError{field: field + ".Variable", reason: err.Error()}
			}
			r.variable = p
		case "And", "Or":
			list, ok := obj[k].([]any)
			if !ok || len(list) == 0 {
				return nil, &fieldError{field: field + "." + k, reason: "must be a non-empty array of rules"}
			}
			for i, sub := range list {
				sr, err := compileRule(sub, fmt.Sprintf("%s.%s[%d]", field, k, i), false)
				if err != nil {
					return nil, err
				}
				if k == "And" {
					r.and = append(r.and, sr)
				} else {
					r.or = append(r.or, sr)
				}
			}
			ops = append(ops, k)
		case "Not":
			sr, err := compileRule(obj[k], field+".Not", false)
			if err != nil {
				return nil, err
			}
			r.not = sr
			ops = append(ops, k)
		case cmpStringEquals:
			if _, ok := obj[k].(string); !ok {
				return nil, &fieldError{field: field + "." + k, reason: "must be a string"}
			}
			r.op, r.value = k, obj[k]
			ops = append(ops, k)
		case cmpNumericLessThan:
			if _, ok := obj[k].(json.Number); !ok {
				return nil, &fieldError{field: field + "." + k, reason: "must be a number"}
			}
			r.op, r.value = k, obj[k]
			ops = append(ops, k)
		case cmpBooleanEquals, cmpIsPresent:
			if _, ok := obj[k].(bool); !ok {
				return nil, &fieldError{field: field + "." + k, reason: "must be true or false"}
			}
			r.op, r.value = k, obj[k]
			ops = append(ops, k)
		case cmpNumericLessThanPath:
			s, ok := obj[k].(string)
			if !ok {
				return nil, &fieldError{field: field + "." + k, reason: "must be a JSONPath string"}
			}
			p, err := parsePath(s)
			if err != nil {
				return nil, &fieldError{field: field + "." + k, reason: err.Error()}
			}
			r.op, r.valuePath = k, p
			ops = append(ops, k)
		default:
			return nil, &fieldError{field: field + "." + k, reason: "is not supported"}
		}
	}
	switch {
	case len(ops) != 1:
		return nil, &fieldError{field: field, reason: fmt.Sprintf("needs exactly one comparator or And/Or/Not, has %d", len(ops))}
	case r.op != "" && r.variable.src == "":
		return nil, &fieldError{field: field + ".Variable", reason: "is required with " + r.op}
	case r.op == "" && r.variable.src != "":
		return nil, &fieldError{field: field + ".Variable", reason: "is not allowed with And/Or/Not"}
	case top && r.next == "":
		return nil, &fieldError{field: field + ".Next", reason: "is required"}
	}
	return r, nil
}

// match evaluates the rule against the Choice state's effective input.
// A Variable that selects nothing is a States.Runtime error, except for
// IsPresent; a value of the wrong type does not match.
func (r *rule) match(env *evalEnv) (bool, error) {
	switch {
	case r.and != nil:
		for _, s := range r.and {
			ok, err := s.match(env)
			if err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	case r.or != nil:
		for _, s := range r.or {
			ok, err := s.match(env)
			if err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	case r.not != nil:
		ok, err := r.not.match(env)
		return !ok && err == nil, err
	}
	v, err := pathExpr{r.variable}.eval(env)
	if r.op == cmpIsPresent {
		return (err == nil) == r.value.(bool), nil
	}
	if err != nil {
		return false, err
	}
	switch r.op {
	case cmpStringEquals:
		s, ok := v.(string)
		return ok && s == r.value.(string), nil
	case cmpBooleanEquals:
		b, ok := v.(bool)
		return ok && b == r.value.(bool), nil
	case cmpNumericLessThan:
		return numericLess(v, r.value), nil
	case cmpNumericLessThanPath:
		w, err := pathExpr{r.valuePath}.eval(env)
		if err != nil {
			return false, err
		}
		return numericLess(v, w), nil
	}
	return false, runtimeErrorf("unsupported comparator %s", r.op)
}

// numericLess reports a < b when both are JSON numbers.
func numericLess(a, b any) bool {
	x, ok1 := toRat(a)
	y, ok2 := toRat(b)
	return ok1 && ok2 && x.Cmp(y) < 0
}

func toRat(v any) (*big.Rat, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return nil, false
	}
	return new(big.Rat).SetString(n.String())
}
