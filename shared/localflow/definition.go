package localflow

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Resources a Task state may name.
const (
	resourceInvoke         = "arn:aws:states:::lambda:invoke"
	resourceInvokeCallback = "arn:aws:states:::lambda:invoke.waitForTaskToken"
)

// Machine is a loaded and validated state machine definition. It is
// immutable and safe for concurrent use.
type Machine struct {
	startAt    string
	states     map[string]*state
	definition []byte
	hash       string
}

// state is one compiled state. Which fields are set depends on typ.
type state struct {
	name string
	typ  string

	next string
	end  bool

	inputPath, outputPath, resultPath optPath
	parameters, resultSelector        *template
	result                            any
	hasResult                         bool

	callback bool
	retry    []retrier
	catch    []catcher

	choices []*rule
	deflt   string

	seconds       *int64
	secondsPath   *path
	timestamp     *time.Time
	timestampPath *path

	errorName, cause     string
	errorPath, causePath expr
}

// optPath is InputPath, OutputPath or ResultPath: the zero value is `$`,
// null is JSON null in the definition.
type optPath struct {
	null bool
	p    path
}

// retrier is one element of a Task's Retry.
type retrier struct {
	errorEquals []string
	interval    float64
	maxAttempts int
	backoff     float64
	maxDelay    float64
}

// catcher is one element of a Task's Catch.
type catcher struct {
	errorEquals []string
	resultPath  optPath
	next        string
}

// allowedFields lists, per supported state type, the fields it may have
// besides Type and Comment.
var allowedFields = map[string][]string{
	"Pass":    {"InputPath", "OutputPath", "Parameters", "Result", "ResultPath", "Next", "End"},
	"Task":    {"Resource", "InputPath", "OutputPath", "Parameters", "ResultSelector", "ResultPath", "Retry", "Catch", "Next", "End"},
	"Choice":  {"Choices", "Default", "InputPath", "OutputPath"},
	"Wait":    {"Seconds", "SecondsPath", "Timestamp", "TimestampPath", "InputPath", "OutputPath", "Next", "End"},
	"Succeed": {"InputPath", "OutputPath"},
	"Fail":    {"Error", "ErrorPath", "Cause", "CausePath"},
}

// contextFields lists the context-object fields a template may read.
var contextFields = map[string][]string{
	"Execution": {"Id", "Name", "Input", "StartTime"},
	"State":     {"Name", "EnteredTime", "RetryCount"},
	"Task":      {"Token"},
}

var substitutionRE = regexp.MustCompile(`\$\{([^}]*)\}`)

// Load parses a state machine definition (Amazon States Language, JSONPath),
// replaces each `${Name}` with substitutions[Name] (like Step Functions'
// DefinitionSubstitutions; the value is inserted JSON-escaped), and
// validates it. Anything outside the supported subset (see the package
// documentation) is refused with a *DefinitionError naming the state and
// the field, as are a missing StartAt, an unknown Next, Default or Catch
// target, an unreachable state, a bad JSONPath and a `${Name}` without a
// value.
func Load(definition []byte, substitutions map[string]string) (*Machine, error) {
	m, err := load(definition, substitutions)
	if err != nil {
		return nil, fmt.Errorf("localflow: load definition: %w", err)
	}
	return m, nil
}

func load(definition []byte, substitutions map[string]string) (*Machine, error) {
	var missing []string
	text := substitutionRE.ReplaceAllStringFunc(string(definition), func(s string) string {
		name := s[2 : len(s)-1]
		v, ok := substitutions[name]
		if !ok {
			missing = append(missing, s)
			return s
		}
		b, _ := json.Marshal(v)
		return string(b[1 : len(b)-1])
	})
	if len(missing) > 0 {
		return nil, &DefinitionError{Field: missing[0], Reason: "substitution has no value"}
	}
	doc, err := decodeJSON([]byte(text))
	if err != nil {
		return nil, &DefinitionError{Reason: fmt.Sprintf("not valid JSON: %v", err)}
	}
	top, ok := doc.(map[string]any)
	if !ok {
		return nil, &DefinitionError{Reason: "must be a JSON object"}
	}
	for _, k := range sortedKeys(top) {
		switch k {
		case "Comment", "StartAt", "States":
		case "Version":
			if top[k] != "1.0" {
				return nil, &DefinitionError{Field: k, Reason: `must be "1.0"`}
			}
		case "QueryLanguage":
			if top[k] != "JSONPath" {
				return nil, &DefinitionError{Field: k, Reason: fmt.Sprintf("%v is not supported (only JSONPath)", top[k])}
			}
		default:
			return nil, &DefinitionError{Field: k, Reason: "is not supported"}
		}
	}
	m := &Machine{states: map[string]*state{}, definition: []byte(text)}
	sum := sha256.Sum256(m.definition)
	m.hash = hex.EncodeToString(sum[:])
	if m.startAt, ok = top["StartAt"].(string); !ok || m.startAt == "" {
		return nil, &DefinitionError{Field: "StartAt", Reason: "is required (a state name)"}
	}
	states, ok := top["States"].(map[string]any)
	if !ok || len(states) == 0 {
		return nil, &DefinitionError{Field: "States", Reason: "is required (an object of states)"}
	}
	for _, name := range sortedKeys(states) {
		if name == "" || len(name) > 80 {
			return nil, &DefinitionError{State: name, Reason: "a state name must have 1 to 80 characters"}
		}
		st, err := loadState(name, states[name])
		if err != nil {
			var fe *fieldError
			if errors.As(err, &fe) {
				return nil, &DefinitionError{State: name, Field: fe.field, Reason: fe.reason}
			}
			return nil, err
		}
		m.states[name] = st
	}
	if err := m.checkGraph(); err != nil {
		return nil, err
	}
	return m, nil
}

// checkGraph checks every transition target and that every state is
// reachable from StartAt.
func (m *Machine) checkGraph() error {
	if m.states[m.startAt] == nil {
		return &DefinitionError{Field: "StartAt", Reason: fmt.Sprintf("unknown state %q", m.startAt)}
	}
	for _, name := range sortedKeys(m.states) {
		for _, t := range m.states[name].targets() {
			if m.states[t.next] == nil {
				return &DefinitionError{State: name, Field: t.field, Reason: fmt.Sprintf("unknown state %q", t.next)}
			}
		}
	}
	seen := map[string]bool{m.startAt: true}
	queue := []string{m.startAt}
	for len(queue) > 0 {
		st := m.states[queue[0]]
		queue = queue[1:]
		for _, t := range st.targets() {
			if !seen[t.next] {
				seen[t.next] = true
				queue = append(queue, t.next)
			}
		}
	}
	for _, name := range sortedKeys(m.states) {
		if !seen[name] {
			return &DefinitionError{State: name, Reason: "is not reachable from StartAt"}
		}
	}
	return nil
}

type target struct{ field, next string }

// targets lists the states st may move to, with the field naming each.
func (st *state) targets() []target {
	var ts []target
	if st.next != "" {
		ts = append(ts, target{"Next", st.next})
	}
	for i, r := range st.choices {
		ts = append(ts, target{fmt.Sprintf("Choices[%d].Next", i), r.next})
	}
	if st.deflt != "" {
		ts = append(ts, target{"Default", st.deflt})
	}
	for i, c := range st.catch {
		ts = append(ts, target{fmt.Sprintf("Catch[%d].Next", i), c.next})
	}
	return ts
}

// loadState compiles one state; errors are *DefinitionError or *fieldError.
func loadState(name string, v any) (*state, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, &DefinitionError{State: name, Reason: "must be a JSON object"}
	}
	typ, _ := obj["Type"].(string)
	allowed, ok := allowedFields[typ]
	if !ok {
		if typ == "" {
			return nil, &fieldError{field: "Type", reason: "is required"}
		}
		return nil, &DefinitionError{State: name, Field: "Type", Reason: fmt.Sprintf("type %q is not supported", typ)}
	}
	for _, k := range sortedKeys(obj) {
		if k != "Type" && k != "Comment" && !slices.Contains(allowed, k) {
			return nil, &fieldError{field: k, reason: "is not supported"}
		}
	}
	st := &state{name: name, typ: typ}
	var err error
	if st.inputPath, err = optionalPath(obj, "InputPath", false); err != nil {
		return nil, err
	}
	if st.outputPath, err = optionalPath(obj, "OutputPath", false); err != nil {
		return nil, err
	}
	if st.resultPath, err = optionalPath(obj, "ResultPath", true); err != nil {
		return nil, err
	}
	if p, ok := obj["Parameters"]; ok {
		if st.parameters, err = compileTemplate(p, "Parameters"); err != nil {
			return nil, err
		}
	}
	if p, ok := obj["ResultSelector"]; ok {
		if st.resultSelector, err = compileTemplate(p, "ResultSelector"); err != nil {
			return nil, err
		}
	}
	st.result, st.hasResult = obj["Result"]
	if slices.Contains(allowed, "Next") {
		if err := st.loadTransition(obj); err != nil {
			return nil, err
		}
	}
	switch typ {
	case "Task":
		err = st.loadTask(obj)
	case "Choice":
		err = st.loadChoice(obj)
	case "Wait":
		err = st.loadWait(obj)
	case "Fail":
		err = st.loadFail(obj)
	case "Pass":
		err = checkContextPaths(st.parameters, "Parameters", false)
	}
	if err != nil {
		return nil, err
	}
	return st, nil
}

// loadTransition reads Next/End: exactly one of them.
func (st *state) loadTransition(obj map[string]any) error {
	next, hasNext := obj["Next"]
	end, hasEnd := obj["End"]
	switch {
	case hasNext && hasEnd:
		return &fieldError{field: "End", reason: "cannot be combined with Next"}
	case hasNext:
		s, ok := next.(string)
		if !ok || s == "" {
			return &fieldError{field: "Next", reason: "must be a state name"}
		}
		st.next = s
	case hasEnd:
		if end != true {
			return &fieldError{field: "End", reason: "must be true (or use Next)"}
		}
		st.end = true
	default:
		return &fieldError{field: "Next", reason: "is required (or End: true)"}
	}
	return nil
}

func (st *state) loadTask(obj map[string]any) error {
	switch obj["Resource"] {
	case resourceInvoke:
	case resourceInvokeCallback:
		st.callback = true
	case nil:
		return &fieldError{field: "Resource", reason: "is required"}
	default:
		return &fieldError{field: "Resource", reason: fmt.Sprintf("%v is not supported (only %s and %s)", obj["Resource"], resourceInvoke, resourceInvokeCallback)}
	}
	if st.parameters == nil {
		return &fieldError{field: "Parameters", reason: "is required (FunctionName, Payload)"}
	}
	var hasFunction bool
	for _, f := range st.parameters.fields {
		switch f.key {
		case "FunctionName":
			hasFunction = true
		case "Payload":
		default:
			return &fieldError{field: "Parameters." + f.key, reason: "is not supported"}
		}
	}
	if !hasFunction {
		return &fieldError{field: "Parameters.FunctionName", reason: "is required"}
	}
	if err := checkContextPaths(st.parameters, "Parameters", st.callback); err != nil {
		return err
	}
	if err := checkContextPaths(st.resultSelector, "ResultSelector", false); err != nil {
		return err
	}
	if st.callback {
		usesToken := false
		for _, p := range st.parameters.contextPaths() {
			if len(p.steps) == 2 && p.steps[0].name == "Task" && p.steps[1].name == "Token" {
				usesToken = true
			}
		}
		if !usesToken {
			return &fieldError{field: "Parameters", reason: "a .waitForTaskToken task must pass $$.Task.Token"}
		}
	}
	if v, ok := obj["Retry"]; ok {
		list, ok := v.([]any)
		if !ok {
			return &fieldError{field: "Retry", reason: "must be an array"}
		}
		for i, rv := range list {
			r, err := loadRetrier(rv, fmt.Sprintf("Retry[%d]", i), i == len(list)-1)
			if err != nil {
				return err
			}
			st.retry = append(st.retry, r)
		}
	}
	if v, ok := obj["Catch"]; ok {
		list, ok := v.([]any)
		if !ok {
			return &fieldError{field: "Catch", reason: "must be an array"}
		}
		for i, cv := range list {
			c, err := loadCatcher(cv, fmt.Sprintf("Catch[%d]", i), i == len(list)-1)
			if err != nil {
				return err
			}
			st.catch = append(st.catch, c)
		}
	}
	return nil
}

// checkContextPaths refuses context paths outside contextFields, and
// $$.Task.Token outside a .waitForTaskToken task's Parameters.
func checkContextPaths(t *template, field string, tokenOK bool) error {
	if t == nil {
		return nil
	}
	for _, p := range t.contextPaths() {
		if len(p.steps) == 0 {
			continue
		}
		fields, ok := contextFields[p.steps[0].name]
		if !ok || (len(p.steps) > 1 && !slices.Contains(fields, p.steps[1].name)) {
			return &fieldError{field: field, reason: fmt.Sprintf("context path %q is not supported", p.src)}
		}
		if p.steps[0].name == "Task" && !tokenOK {
			return &fieldError{field: field, reason: fmt.Sprintf("context path %q is only available in a .waitForTaskToken task's Parameters", p.src)}
		}
	}
	return nil
}

func loadErrorEquals(obj map[string]any, field string, last bool) ([]string, error) {
	list, ok := obj["ErrorEquals"].([]any)
	if !ok || len(list) == 0 {
		return nil, &fieldError{field: field + ".ErrorEquals", reason: "must be a non-empty array of error names"}
	}
	var names []string
	for _, v := range list {
		s, ok := v.(string)
		if !ok || s == "" {
			return nil, &fieldError{field: field + ".ErrorEquals", reason: "must contain error names"}
		}
		names = append(names, s)
	}
	if slices.Contains(names, errorAll) && (len(names) > 1 || !last) {
		return nil, &fieldError{field: field + ".ErrorEquals", reason: "States.ALL must appear alone, in the last element"}
	}
	return names, nil
}

func loadRetrier(v any, field string, last bool) (retrier, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return retrier{}, &fieldError{field: field, reason: "must be a JSON object"}
	}
	r := retrier{interval: 1, maxAttempts: 3, backoff: 2}
	for _, k := range sortedKeys(obj) {
		switch k {
		case "Comment", "ErrorEquals":
		case "IntervalSeconds":
			n, ok := intValue(obj[k])
			if !ok || n < 1 || n > 99999999 {
				return r, &fieldError{field: field + "." + k, reason: "must be an integer from 1 to 99999999"}
			}
			r.interval = float64(n)
		case "MaxAttempts":
			n, ok := intValue(obj[k])
			if !ok || n < 0 || n > 99999999 {
				return r, &fieldError{field: field + "." + k, reason: "must be an integer from 0 to 99999999"}
			}
			r.maxAttempts = int(n)
		case "BackoffRate":
			num, ok := obj[k].(json.Number)
			f, err := num.Float64()
			if !ok || err != nil || f < 1 || math.IsInf(f, 0) {
				return r, &fieldError{field: field + "." + k, reason: "must be a number >= 1.0"}
			}
			r.backoff = f
		case "MaxDelaySeconds":
			n, ok := intValue(obj[k])
			if !ok || n < 1 || n > 31622401 {
				return r, &fieldError{field: field + "." + k, reason: "must be an integer from 1 to 31622401"}
			}
			r.maxDelay = float64(n)
		default:
			return r, &fieldError{field: field + "." + k, reason: "is not supported"}
		}
	}
	var err error
	r.errorEquals, err = loadErrorEquals(obj, field, last)
	return r, err
}

func loadCatcher(v any, field string, last bool) (catcher, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return catcher{}, &fieldError{field: field, reason: "must be a JSON object"}
	}
	var c catcher
	for _, k := range sortedKeys(obj) {
		switch k {
		case "Comment", "ErrorEquals", "ResultPath":
		case "Next":
			s, ok := obj[k].(string)
			if !ok || s == "" {
				return c, &fieldError{field: field + ".Next", reason: "must be a state name"}
			}
			c.next = s
		default:
			return c, &fieldError{field: field + "." + k, reason: "is not supported"}
		}
	}
	if c.next == "" {
		return c, &fieldError{field: field + ".Next", reason: "is required"}
	}
	var err error
	if c.resultPath, err = optionalPath(obj, "ResultPath", true); err != nil {
		var fe *fieldError
		if errors.As(err, &fe) {
			fe.field = field + "." + fe.field
		}
		return c, err
	}
	c.errorEquals, err = loadErrorEquals(obj, field, last)
	return c, err
}

func (st *state) loadChoice(obj map[string]any) error {
	list, ok := obj["Choices"].([]any)
	if !ok || len(list) == 0 {
		return &fieldError{field: "Choices", reason: "must be a non-empty array of rules"}
	}
	for i, v := range list {
		r, err := compileRule(v, fmt.Sprintf("Choices[%d]", i), true)
		if err != nil {
			return err
		}
		st.choices = append(st.choices, r)
	}
	if v, ok := obj["Default"]; ok {
		s, ok := v.(string)
		if !ok || s == "" {
			return &fieldError{field: "Default", reason: "must be a state name"}
		}
		st.deflt = s
	}
	return nil
}

func (st *state) loadWait(obj map[string]any) error {
	var set []string
	for _, k := range []string{"Seconds", "SecondsPath", "Timestamp", "TimestampPath"} {
		if _, ok := obj[k]; ok {
			set = append(set, k)
		}
	}
	if len(set) != 1 {
		field := "Seconds"
		if len(set) > 1 {
			field = set[1]
		}
		return &fieldError{field: field, reason: fmt.Sprintf("a Wait needs exactly one of Seconds, SecondsPath, Timestamp, TimestampPath (has %v)", set)}
	}
	k := set[0]
	switch k {
	case "Seconds":
		n, ok := intValue(obj[k])
		if !ok || n < 0 || n > 99999999 {
			return &fieldError{field: k, reason: "must be an integer from 0 to 99999999"}
		}
		st.seconds = &n
	case "Timestamp":
		s, _ := obj[k].(string)
		t, err := parseTimestamp(s)
		if err != nil {
			return &fieldError{field: k, reason: err.Error()}
		}
		st.timestamp = &t
	default:
		s, ok := obj[k].(string)
		if !ok {
			return &fieldError{field: k, reason: "must be a JSONPath string"}
		}
		p, err := parsePath(s)
		if err != nil {
			return &fieldError{field: k, reason: err.Error()}
		}
		if p.context {
			return &fieldError{field: k, reason: "must be a path into the state's input, not the context object"}
		}
		if k == "SecondsPath" {
			st.secondsPath = &p
		} else {
			st.timestampPath = &p
		}
	}
	return nil
}

func (st *state) loadFail(obj map[string]any) error {
	for _, pair := range [][2]string{{"Error", "ErrorPath"}, {"Cause", "CausePath"}} {
		lit, hasLit := obj[pair[0]]
		dyn, hasDyn := obj[pair[1]]
		if hasLit && hasDyn {
			return &fieldError{field: pair[1], reason: "cannot be combined with " + pair[0]}
		}
		if hasLit {
			s, ok := lit.(string)
			if !ok {
				return &fieldError{field: pair[0], reason: "must be a string"}
			}
			if pair[0] == "Error" {
				st.errorName = s
			} else {
				st.cause = s
			}
		}
		if hasDyn {
			s, ok := dyn.(string)
			if !ok {
				return &fieldError{field: pair[1], reason: "must be a JSONPath or an intrinsic function"}
			}
			e, err := parseDynamic(s)
			if err != nil {
				return &fieldError{field: pair[1], reason: err.Error()}
			}
			if len(exprContextPaths(e)) > 0 {
				return &fieldError{field: pair[1], reason: "context paths are not supported here"}
			}
			if pair[0] == "Error" {
				st.errorPath = e
			} else {
				st.causePath = e
			}
		}
	}
	return nil
}

// optionalPath reads InputPath, OutputPath or ResultPath (resultPath: field
// names only).
func optionalPath(obj map[string]any, field string, resultPath bool) (optPath, error) {
	v, ok := obj[field]
	if !ok {
		return optPath{}, nil
	}
	if v == nil {
		return optPath{null: true}, nil
	}
	s, ok := v.(string)
	if !ok {
		return optPath{}, &fieldError{field: field, reason: "must be a JSONPath string or null"}
	}
	p, err := parsePath(s)
	if err != nil {
		return optPath{}, &fieldError{field: field, reason: err.Error()}
	}
	if p.context {
		return optPath{}, &fieldError{field: field, reason: "must be a path into the state's data, not the context object"}
	}
	if resultPath && !p.isFieldsOnly() {
		return optPath{}, &fieldError{field: field, reason: fmt.Sprintf("%q must be $ followed by field names only", s)}
	}
	return optPath{p: p}, nil
}

// parseTimestamp parses a Wait timestamp: RFC 3339 with an uppercase T
// (and an uppercase Z when there is no numeric offset); fractions of a
// second are truncated to milliseconds.
func parseTimestamp(s string) (time.Time, error) {
	if len(s) < 11 || s[10] != 'T' || strings.ContainsAny(s, "tz") {
		return time.Time{}, fmt.Errorf("timestamp %q is not RFC 3339 with an uppercase T and Z", s)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("timestamp %q is not RFC 3339: %w", s, err)
	}
	return t.UTC().Truncate(time.Millisecond), nil
}

// intValue returns a JSON number that is an integer.
func intValue(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
