package template

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/intrinsics"
	"github.com/google/go-cmp/cmp"

	"oncepost/shared/emulatortest"
)

// templateFile is the SAM template, relative to the module root.
const templateFile = "template.yaml"

// tmpl is a parsed template.
type tmpl struct {
	// raw is the template as JSON values, its intrinsic functions in their
	// long form ({"Ref": …}, {"Fn::GetAtt": […]}, {"Fn::Sub": …}).
	raw map[string]any
	// typed is goformation's reading, intrinsic functions encoded as
	// goformation encodes them (base64 of their JSON) in string fields.
	typed *cloudformation.Template
	// typedErr is why goformation could not read it (typed is nil then):
	// its types refuse unknown properties.
	typedErr error
	// dir is the template's directory, the module root.
	dir string
}

// parseTemplate reads a SAM template (YAML with CloudFormation's short
// tags, or JSON) with goformation, both ways; a template goformation's
// types refuse is still returned, raw, with typedErr saying why.
func parseTemplate(b []byte, dir string) (*tmpl, error) {
	j, err := intrinsics.ProcessYAML(b, &intrinsics.ProcessorOptions{NoProcess: true})
	if err != nil {
		return nil, fmt.Errorf("read the template: %w", err)
	}
	var raw map[string]any
	if err := json.Unmarshal(j, &raw); err != nil {
		return nil, fmt.Errorf("read the template: %w", err)
	}
	t := &tmpl{raw: raw, dir: dir}
	// goformation's typed fields hold an intrinsic function only where
	// they hold a string: a number property given by a Number parameter
	// (an event source mapping's BatchSize) is read with the parameter's
	// default.
	typedJSON, err := json.Marshal(withoutGoformationLags(numberParameterDefaults(raw)))
	if err != nil {
		return nil, fmt.Errorf("read the template: %w", err)
	}
	t.typed, t.typedErr = goformation.ParseJSONWithOptions(typedJSON, &intrinsics.ProcessorOptions{IntrinsicHandlerOverrides: cloudformation.EncoderIntrinsics})
	return t, nil
}

// goformationLags are SAM properties goformation's types (v7.14) do not
// know, by resource type, as paths of keys under Properties: its HttpApi
// has AccessLogSetting where SAM says AccessLogSettings, and its
// HttpApiAuth no EnableIamAuthorizer (sam-resource-httpapi,
// sam-property-httpapi-httpapiauth). They are left out of the copy
// goformation reads (the other checks read the template itself, and the
// specification check checks them).
var goformationLags = map[string][][]string{
	"AWS::Serverless::HttpApi": {{"AccessLogSettings"}, {"Auth", "EnableIamAuthorizer"}},
}

// withoutGoformationLags removes goformationLags from a template (a copy
// of it, made by numberParameterDefaults).
func withoutGoformationLags(v any) any {
	for _, r := range asMap(asMap(v)["Resources"]) {
		typ, _ := asMap(r)["Type"].(string)
		for _, path := range goformationLags[typ] {
			m := asMap(asMap(r)["Properties"])
			for _, k := range path[:len(path)-1] {
				m = asMap(m[k])
			}
			delete(m, path[len(path)-1])
		}
	}
	return v
}

// numberParameterDefaults returns a copy of the template whose {"Ref":
// P} of a Number parameter P with a default are that default.
func numberParameterDefaults(raw map[string]any) any {
	defaults := map[string]any{}
	params, _ := raw["Parameters"].(map[string]any)
	for name, p := range params {
		if pm, ok := p.(map[string]any); ok && pm["Type"] == "Number" && pm["Default"] != nil {
			defaults[name] = pm["Default"]
		}
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["Ref"].(string); ok && len(x) == 1 {
				if d, ok := defaults[ref]; ok {
					return d
				}
			}
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[k] = walk(e)
			}
			return out
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = walk(e)
			}
			return out
		}
		return v
	}
	return walk(raw)
}

// contract is what the template is checked against.
type contract struct {
	spec *spec
	code codeFacts
	root string

	mu      sync.Mutex
	targets map[string]string // `make -n build-<id>` output, by id
}

var (
	loadOnce   sync.Once
	loaded     *contract
	loadErr    error
	loadMissed string
)

// load reads the specification and scans the code once per test binary;
// a specification that is not installed skips the test (fails it when
// ONCEPOST_EMULATORS=required).
func load(t *testing.T) (*contract, *tmpl) {
	t.Helper()
	loadOnce.Do(func() {
		wd, err := os.Getwd()
		if err != nil {
			loadErr = err
			return
		}
		root := filepath.Dir(filepath.Dir(wd)) // infra/template → module root
		c := &contract{root: root, targets: map[string]string{}}
		c.spec, err = loadSpec(filepath.Join(root, specFile))
		if errors.Is(err, fs.ErrNotExist) {
			loadMissed = fmt.Sprintf("the resource specification %s is not installed: run `make emulators` in %s", specFile, root)
			return
		}
		if err != nil {
			loadErr = err
			return
		}
		c.code, loadErr = scanCode(root)
		loaded = c
	})
	if loadMissed != "" {
		emulatortest.Unavailable(t, loadMissed)
	}
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	b, err := os.ReadFile(filepath.Join(loaded.root, templateFile))
	if err != nil {
		t.Fatal(err)
	}
	tp, err := parseTemplate(b, loaded.root)
	if err != nil {
		t.Fatal(err)
	}
	if tp.typedErr != nil {
		t.Fatalf("goformation cannot read %s: %v", templateFile, tp.typedErr)
	}
	return loaded, tp
}

// check is one family of checks; it returns every problem it finds.
type check struct {
	name string
	run  func(c *contract, t *tmpl) []string
}

var checks = []check{
	{"specification", func(c *contract, t *tmpl) []string { return c.spec.validateTemplate(t.raw) }},
	{"references", checkReferences},
	{"dependencies", checkDependencies},
	{"functions", checkFunctions},
	{"make targets", checkMakeTargets},
	{"environment", checkEnvironment},
	{"tables", checkTables},
	{"queues", checkQueues},
	{"state machine", checkStateMachine},
	{"alarms and dashboard", checkAlarms},
	{"asynchronous invocation", checkAsyncInvocation},
	{"http api", checkHTTPAPI},
	{"permissions", checkPermissions},
	{"least privilege", checkLeastPrivilege},
	{"outputs", checkOutputs},
	{"events and webhooks", checkEvents},
}

// runChecks runs every check and returns the problems, each prefixed with
// its check's name.
func runChecks(c *contract, t *tmpl) []string {
	var all []string
	for _, ch := range checks {
		for _, p := range ch.run(c, t) {
			all = append(all, ch.name+": "+p)
		}
	}
	return all
}

// template.yaml passes every check.
func TestTemplate(t *testing.T) {
	c, tp := load(t)
	for _, ch := range checks {
		t.Run(ch.name, func(t *testing.T) {
			if problems := ch.run(c, tp); len(problems) > 0 {
				t.Errorf("%d problems:\n%s", len(problems), strings.Join(problems, "\n"))
			}
		})
	}
}

// ---------------------------------------------------------------- helpers

// asMap is v as an object, or nil.
func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// asList is v as a list; a single value is a list of one (IAM's Action
// and Resource may be either).
func asList(v any) []any {
	switch x := v.(type) {
	case nil:
		return nil
	case []any:
		return x
	}
	return []any{v}
}

// show is v as compact JSON, for reports.
func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// intrinsic reports whether v is an intrinsic function in long form: an
// object whose one key is Ref or Fn::….
func intrinsic(v any) (fn string, arg any, ok bool) {
	m, isMap := v.(map[string]any)
	if !isMap || len(m) != 1 {
		return "", nil, false
	}
	for k, a := range m {
		if k == "Ref" || strings.HasPrefix(k, "Fn::") {
			return k, a, true
		}
	}
	return "", nil, false
}

// refOf is the name v refers to with Ref.
func refOf(v any) (string, bool) {
	fn, arg, ok := intrinsic(v)
	name, isString := arg.(string)
	return name, ok && fn == "Ref" && isString
}

// getAttOf is the resource and attribute of v's Fn::GetAtt.
func getAttOf(v any) (id, attr string, ok bool) {
	fn, arg, isIntrinsic := intrinsic(v)
	if !isIntrinsic || fn != "Fn::GetAtt" {
		return "", "", false
	}
	switch a := arg.(type) {
	case string:
		return strings.Cut(a, ".")
	case []any:
		if len(a) == 2 {
			id, ok1 := a[0].(string)
			attr, ok2 := a[1].(string)
			return id, attr, ok1 && ok2
		}
	}
	return "", "", false
}

// subOf is v's Fn::Sub string and variables.
func subOf(v any) (string, map[string]any, bool) {
	fn, arg, ok := intrinsic(v)
	if !ok || fn != "Fn::Sub" {
		return "", nil, false
	}
	switch a := arg.(type) {
	case string:
		return a, nil, true
	case []any:
		if len(a) == 2 {
			s, ok := a[0].(string)
			return s, asMap(a[1]), ok
		}
	}
	return "", nil, false
}

// subVariable matches ${Name} and ${Name.Attr}, not the literal ${!…}.
var subVariable = regexp.MustCompile(`\$\{([^!}][^}]*)\}`)

// references lists the names v refers to, recursively: Ref targets,
// Fn::GetAtt resources and Fn::Sub variables (a "Res.Attr" variable
// names Res).
func references(v any) []string {
	var names []string
	var walk func(v any)
	walk = func(v any) {
		if fn, arg, ok := intrinsic(v); ok {
			switch fn {
			case "Ref":
				if s, ok := arg.(string); ok {
					names = append(names, s)
				}
			case "Fn::GetAtt":
				if id, _, ok := getAttOf(v); ok {
					names = append(names, id)
				}
			case "Fn::Sub":
				if s, vars, ok := subOf(v); ok {
					for _, m := range subVariable.FindAllStringSubmatch(s, -1) {
						if _, local := vars[m[1]]; local {
							continue
						}
						name, _, _ := strings.Cut(m[1], ".")
						if strings.HasPrefix(m[1], "AWS::") {
							name = m[1]
						}
						names = append(names, name)
					}
				}
			}
		}
		switch x := v.(type) {
		case map[string]any:
			for _, k := range sortedKeys(x) {
				walk(x[k])
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	slices.Sort(names)
	return slices.Compact(names)
}

// resourcesOf lists the logical ids of the template's resources of typ.
func resourcesOf(t *tmpl, typ string) []string {
	var ids []string
	res := asMap(t.raw["Resources"])
	for _, id := range sortedKeys(res) {
		if asMap(res[id])["Type"] == typ {
			ids = append(ids, id)
		}
	}
	return ids
}

// resourceType is the type of the resource id ("" if there is none).
func resourceType(t *tmpl, id string) string {
	s, _ := asMap(asMap(t.raw["Resources"])[id])["Type"].(string)
	return s
}

// props is the Properties of the resource id.
func props(t *tmpl, id string) map[string]any {
	return asMap(asMap(asMap(t.raw["Resources"])[id])["Properties"])
}

// effective is a function's properties with Globals.Function's beneath
// them, as SAM merges them (environment variables key by key).
func effective(t *tmpl, id string) map[string]any {
	out := map[string]any{}
	global := asMap(asMap(t.raw["Globals"])["Function"])
	for k, v := range global {
		out[k] = v
	}
	for k, v := range props(t, id) {
		out[k] = v
	}
	out["Environment"] = map[string]any{"Variables": functionEnv(t, id)}
	return out
}

// functionEnv is a function's environment variables, Globals' and its own.
func functionEnv(t *tmpl, id string) map[string]any {
	env := map[string]any{}
	for _, p := range []map[string]any{asMap(asMap(t.raw["Globals"])["Function"]), props(t, id)} {
		for k, v := range asMap(asMap(p["Environment"])["Variables"]) {
			env[k] = v
		}
	}
	return env
}

// decodeIntrinsic reads a string field of goformation's typed template:
// an intrinsic function it encoded (base64 of its JSON), or the string.
func decodeIntrinsic(s string) any {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return s
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return s
	}
	if _, _, ok := intrinsic(v); !ok {
		return s
	}
	return v
}

// cloneJSON deep-copies a JSON value.
func cloneJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = cloneJSON(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = cloneJSON(e)
		}
		return l
	}
	return v
}

// equalJSON compares JSON values.
func equalJSON(a, b any) bool { return reflect.DeepEqual(a, b) }

// Guard: the helpers read both intrinsic forms goformation produces.
func TestIntrinsicHelpers(t *testing.T) {
	raw := map[string]any{
		"ref":    map[string]any{"Ref": "Queue"},
		"att":    map[string]any{"Fn::GetAtt": []any{"Queue", "Arn"}},
		"attDot": map[string]any{"Fn::GetAtt": "Queue.QueueName"},
		"sub":    map[string]any{"Fn::Sub": "${AWS::StackName}-${Table.Arn}/${!Literal}-${Param}"},
		"subVar": map[string]any{"Fn::Sub": []any{"${Local}-${Fn}", map[string]any{"Local": "x"}}},
	}
	if diff := cmp.Diff([]string{"AWS::StackName", "Fn", "Param", "Queue", "Table"}, references(raw)); diff != "" {
		t.Errorf("references (-want +got):\n%s", diff)
	}
	encoded := cloudformation.Sub("${AWS::StackName}-ledger")
	if diff := cmp.Diff(any(map[string]any{"Fn::Sub": "${AWS::StackName}-ledger"}), decodeIntrinsic(encoded)); diff != "" {
		t.Errorf("decodeIntrinsic (-want +got):\n%s", diff)
	}
	if got := decodeIntrinsic("plain"); got != "plain" {
		t.Errorf("decodeIntrinsic(plain) = %v", got)
	}
}
