package template

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/awsruntime"
	"oncepost/shared/dynamostore"
)

// codeFacts is what the checks read from the code.
type codeFacts struct {
	// envNames are the environment variables the functions read: the
	// Env* constants of shared/awsruntime, and every os.Getenv and
	// os.LookupEnv in functions/.
	envNames []string
	// metrics are the metric names the code emits (see scanMetrics).
	metrics map[string]bool
	// dimensions are the EMF dimensions of the AWS runtime's metrics
	// (awsruntime.New).
	dimensions map[string]string
	// storeActions and kmsActions are the IAM actions of the calls the
	// store makes: the methods of dynamostore.API and dynamostore.KMS.
	storeActions, kmsActions []string
}

// optionalEnv are variables the code reads that the template need not
// set, and why.
var optionalEnv = map[string]string{
	awsruntime.EnvOAuthClientID: "optional: each account's credential carries its own OAuth client",
	awsruntime.EnvOAuthSecret:   "optional: each account's credential carries its own OAuth client",
}

// functionOnlyEnv are variables only some functions read: exactly those
// functions set them, and why they need them.
var functionOnlyEnv = map[string]struct {
	functions []string
	why       string
}{
	awsruntime.EnvScheduleGroup:         {[]string{"ApiFunction", "SweeperFunction"}, scheduleWhy},
	awsruntime.EnvTriggerFunctionARN:    {[]string{"ApiFunction", "SweeperFunction"}, scheduleWhy},
	awsruntime.EnvSchedulerRoleARN:      {[]string{"ApiFunction", "SweeperFunction"}, scheduleWhy},
	awsruntime.EnvScheduleDeadLetterARN: {[]string{"ApiFunction", "SweeperFunction"}, scheduleWhy},
}

// scheduleWhy is why the functions that schedule posts read the slot
// schedules' settings.
const scheduleWhy = "the api function schedules the posts it creates, the sweeper the recurring rules' occurrences it creates (awsruntime.Runtime.PostScheduler)"

// forbiddenEnv are variables the template must never set, and why.
var forbiddenEnv = map[string]string{
	awsruntime.EnvStaticKey: "a static credential key is for emulators only; on AWS the KMS key wraps the data key",
}

// runtimeProvided reports whether Lambda sets the variable itself
// (AWS_LAMBDA_LOG_STREAM_NAME, AWS_REGION, _HANDLER, …).
func runtimeProvided(name string) bool {
	return strings.HasPrefix(name, "AWS_") || strings.HasPrefix(name, "_") || strings.HasPrefix(name, "LAMBDA_")
}

// scanCode reads the facts from the module at root.
func scanCode(root string) (codeFacts, error) {
	var f codeFacts
	rt, err := parseDir(filepath.Join(root, "shared", "awsruntime"))
	if err != nil {
		return f, err
	}
	fns, err := parseDir(filepath.Join(root, "functions"))
	if err != nil {
		return f, err
	}
	f.envNames, err = scanEnv(rt, fns)
	if err != nil {
		return f, err
	}
	shared, err := parseDir(filepath.Join(root, "shared"))
	if err != nil {
		return f, err
	}
	f.metrics = scanMetrics(append(shared, fns...))
	f.dimensions = scanDimensions(rt)
	f.storeActions = methodActions("dynamodb", reflect.TypeFor[dynamostore.API]())
	f.kmsActions = methodActions("kms", reflect.TypeFor[dynamostore.KMS]())
	return f, nil
}

// parsedFile is one Go source file.
type parsedFile struct {
	path string
	fset *token.FileSet
	file *ast.File
}

// parseDir parses every non-test Go file under dir (none if dir does not
// exist).
func parseDir(dir string) ([]parsedFile, error) {
	var files []parsedFile
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			if path == dir && errors.Is(err, fs.ErrNotExist) {
				return filepath.SkipDir
			}
			return err
		case d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != dir:
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go"):
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parse %s: %w", path, err)
		}
		files = append(files, parsedFile{path: path, fset: fset, file: f})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the Go sources under %s: %w", dir, err)
	}
	return files, nil
}

// stringConsts maps the name of every constant with a string literal
// value declared in files to its values (one per package that declares
// it).
func stringConsts(files []parsedFile) map[string][]string {
	consts := map[string][]string{}
	for _, f := range files {
		for _, decl := range f.file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						if s, ok := stringLit(vs.Values[i]); ok && !slices.Contains(consts[name.Name], s) {
							consts[name.Name] = append(consts[name.Name], s)
						}
					}
				}
			}
		}
	}
	return consts
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// resolveString is the string values e may have: a literal, or a
// constant named directly or through its package (awsruntime.EnvQueueURL).
func resolveString(e ast.Expr, consts map[string][]string) []string {
	if s, ok := stringLit(e); ok {
		return []string{s}
	}
	switch x := e.(type) {
	case *ast.Ident:
		return consts[x.Name]
	case *ast.SelectorExpr:
		return consts[x.Sel.Name]
	}
	return nil
}

// scanEnv lists the environment variables read: awsruntime's Env*
// constants and the names given to os.Getenv and os.LookupEnv in
// functions/. A name it cannot read is an error.
func scanEnv(awsruntimeFiles, functionFiles []parsedFile) ([]string, error) {
	consts := stringConsts(append(slices.Clone(awsruntimeFiles), functionFiles...))
	var names []string
	for name, values := range consts {
		if strings.HasPrefix(name, "Env") && slices.ContainsFunc(awsruntimeFiles, func(f parsedFile) bool { return declares(f, name) }) {
			names = append(names, values...)
		}
	}
	var err error
	for _, f := range functionFiles {
		ast.Inspect(f.file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "Getenv" && sel.Sel.Name != "LookupEnv") {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "os" {
				return true
			}
			values := resolveString(call.Args[0], consts)
			if len(values) == 0 && err == nil {
				err = fmt.Errorf("%s: os.%s with a name this test cannot read", f.fset.Position(call.Pos()), sel.Sel.Name)
			}
			names = append(names, values...)
			return true
		})
	}
	slices.Sort(names)
	return slices.Compact(names), err
}

// declares reports whether f declares the constant name.
func declares(f parsedFile, name string) bool {
	for _, decl := range f.file.Decls {
		if gd, ok := decl.(*ast.GenDecl); ok && gd.Tok == token.CONST {
			for _, spec := range gd.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					if n.Name == name {
						return true
					}
				}
			}
		}
	}
	return false
}

// scanMetrics lists the metric names the code emits: the Name of every
// emf.Metric literal (written out, or through a constant), and every
// Metric* constant used anywhere but in its own declaration (passed to a
// helper such as publishing's emitCount).
func scanMetrics(files []parsedFile) map[string]bool {
	consts := stringConsts(files)
	emitted := map[string]bool{}
	for _, f := range files {
		declared := map[*ast.Ident]bool{}
		ast.Inspect(f.file, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok {
				for _, name := range vs.Names {
					declared[name] = true
				}
			}
			return true
		})
		ast.Inspect(f.file, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.CompositeLit:
				if isMetricType(x.Type) {
					metricName(x, consts, emitted)
				}
				if at, ok := x.Type.(*ast.ArrayType); ok && isMetricType(at.Elt) {
					for _, e := range x.Elts {
						if cl, ok := e.(*ast.CompositeLit); ok && cl.Type == nil {
							metricName(cl, consts, emitted)
						}
					}
				}
			case *ast.Ident:
				if strings.HasPrefix(x.Name, "Metric") && !declared[x] {
					for _, v := range consts[x.Name] {
						emitted[v] = true
					}
				}
			}
			return true
		})
	}
	return emitted
}

// isMetricType reports whether e names emf.Metric (or Metric inside emf).
func isMetricType(e ast.Expr) bool {
	switch t := e.(type) {
	case *ast.SelectorExpr:
		pkg, ok := t.X.(*ast.Ident)
		return ok && pkg.Name == "emf" && t.Sel.Name == "Metric"
	case *ast.Ident:
		return t.Name == "Metric"
	}
	return false
}

// metricName records the Name field of an emf.Metric literal.
func metricName(cl *ast.CompositeLit, consts map[string][]string, emitted map[string]bool) {
	for _, e := range cl.Elts {
		if kv, ok := e.(*ast.KeyValueExpr); ok {
			if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Name" {
				for _, v := range resolveString(kv.Value, consts) {
					emitted[v] = true
				}
			}
		}
	}
}

// scanDimensions reads the Dimensions map literal of awsruntime's
// emf.Emitter.
func scanDimensions(files []parsedFile) map[string]string {
	dims := map[string]string{}
	for _, f := range files {
		ast.Inspect(f.file, func(n ast.Node) bool {
			kv, ok := n.(*ast.KeyValueExpr)
			if !ok {
				return true
			}
			if k, ok := kv.Key.(*ast.Ident); !ok || k.Name != "Dimensions" {
				return true
			}
			if cl, ok := kv.Value.(*ast.CompositeLit); ok {
				for _, e := range cl.Elts {
					if pair, ok := e.(*ast.KeyValueExpr); ok {
						k, ok1 := stringLit(pair.Key)
						v, ok2 := stringLit(pair.Value)
						if ok1 && ok2 {
							dims[k] = v
						}
					}
				}
			}
			return true
		})
	}
	return dims
}

// methodActions names the IAM actions of an SDK client interface's
// methods: service:Method.
func methodActions(service string, t reflect.Type) []string {
	var actions []string
	for i := range t.NumMethod() {
		actions = append(actions, service+":"+t.Method(i).Name)
	}
	return actions
}

// The scanners find what the code reads and emits, so the checks break
// when the code adds a variable or renames a metric: shown on a small
// source tree of their own.
func TestCodeScanners(t *testing.T) {
	root := t.TempDir()
	write := func(path, src string) {
		t.Helper()
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("shared/awsruntime/awsruntime.go", `package awsruntime
const (
	EnvTablePrefix = "ONCEPOST_TABLE_PREFIX"
	EnvNew         = "ONCEPOST_NEW_SETTING"
	notAnEnv       = "IGNORED"
)
var m = emf.Emitter{Dimensions: map[string]string{"Runtime": "aws"}}
`)
	write("shared/awsruntime/awsruntime_test.go", `package awsruntime
const EnvOnlyInTests = "ONCEPOST_TEST_ONLY"
`)
	write("functions/trigger/main.go", `package main
import ("os"; "oncepost/shared/awsruntime")
const local = "ONCEPOST_LOCAL"
func main() {
	_ = os.Getenv("ONCEPOST_LITERAL")
	_, _ = os.LookupEnv(local)
	_ = os.Getenv(awsruntime.EnvTablePrefix)
	emit(MetricRenamed)
	_ = []emf.Metric{{Name: "InSlice"}}
}
`)
	write("shared/publishing/metrics.go", `package publishing
const (
	MetricRenamed = "Renamed"
	MetricUnused  = "NeverEmitted"
)
func sweep() { _ = emf.Metric{Name: "Literal"}; _ = emf.Metric{Name: name} }
`)
	got, err := scanCode(root)
	if err != nil {
		t.Fatal(err)
	}
	type facts struct {
		Env        []string
		Metrics    []string
		Dimensions map[string]string
	}
	want := facts{
		Env:        []string{"ONCEPOST_LITERAL", "ONCEPOST_LOCAL", "ONCEPOST_NEW_SETTING", "ONCEPOST_TABLE_PREFIX"},
		Metrics:    []string{"InSlice", "Literal", "Renamed"},
		Dimensions: map[string]string{"Runtime": "aws"},
	}
	if diff := cmp.Diff(want, facts{got.envNames, sortedKeys(got.metrics), got.dimensions}); diff != "" {
		t.Errorf("scanned facts (-want +got):\n%s", diff)
	}

	write("functions/publisher/main.go", `package main
import "os"
func main() { _ = os.Getenv(computed()) }
`)
	if _, err := scanCode(root); err == nil || !strings.Contains(err.Error(), "cannot read") {
		t.Errorf("scan with a computed variable name = %v, want an error saying it cannot read it", err)
	}
}
