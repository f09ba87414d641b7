package template

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/google/go-cmp/cmp"

	"oncepost/shared/awsruntime"
	"oncepost/shared/dynamostore"
	"oncepost/shared/sqsqueue"
)

// pseudoParameters are CloudFormation's.
var pseudoParameters = []string{"AWS::AccountId", "AWS::NotificationARNs", "AWS::NoValue", "AWS::Partition", "AWS::Region", "AWS::StackId", "AWS::StackName", "AWS::URLSuffix"}

// samResourceTypes maps a SAM type to the CloudFormation type whose
// attributes Fn::GetAtt reads (SAM names the generated resource with the
// same logical id).
var samResourceTypes = map[string]string{
	"AWS::Serverless::Function":     "AWS::Lambda::Function",
	"AWS::Serverless::StateMachine": "AWS::StepFunctions::StateMachine",
	"AWS::Serverless::SimpleTable":  "AWS::DynamoDB::Table",
	"AWS::Serverless::Api":          "AWS::ApiGateway::RestApi",
	"AWS::Serverless::HttpApi":      "AWS::ApiGatewayV2::Api",
	"AWS::Serverless::LayerVersion": "AWS::Lambda::LayerVersion",
}

// checkReferences: every Ref names a parameter, a resource (or one SAM
// generates: <Function>Role) or a pseudo parameter; every Fn::GetAtt a
// resource and one of its type's attributes; every Fn::Sub variable
// either; every DependsOn a resource.
func checkReferences(c *contract, t *tmpl) []string {
	var problems []string
	res := asMap(t.raw["Resources"])
	types := map[string]string{}
	for id, r := range res {
		typ, _ := asMap(r)["Type"].(string)
		types[id] = typ
		if (typ == "AWS::Serverless::Function" || typ == "AWS::Serverless::StateMachine") && props(t, id)["Role"] == nil {
			types[id+"Role"] = "AWS::IAM::Role"
		}
	}
	params := asMap(t.raw["Parameters"])
	refOK := func(name string) bool {
		_, isParam := params[name]
		_, isRes := types[name]
		return isParam || isRes || slices.Contains(pseudoParameters, name)
	}
	getAtt := func(path, id, attr string) {
		typ, ok := types[id]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: Fn::GetAtt %s.%s: no resource %s", path, id, attr, id))
			return
		}
		if mapped, ok := samResourceTypes[typ]; ok {
			typ = mapped
		}
		def := c.spec.resources[typ]
		if def == nil {
			return // the specification check reports the type
		}
		if _, ok := def.Attributes[attr]; !ok {
			problems = append(problems, fmt.Sprintf("%s: Fn::GetAtt %s.%s: a %s has no attribute %s (it has %s)", path, id, attr, typ, attr, strings.Join(sortedKeys(def.Attributes), ", ")))
		}
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		if fn, arg, ok := intrinsic(v); ok {
			switch fn {
			case "Ref":
				if name, _ := arg.(string); !refOK(name) {
					problems = append(problems, fmt.Sprintf("%s: Ref %s does not resolve to a parameter, resource or pseudo parameter", path, show(arg)))
				}
			case "Fn::GetAtt":
				if id, attr, ok := getAttOf(v); ok {
					getAtt(path, id, attr)
				} else {
					problems = append(problems, fmt.Sprintf("%s: Fn::GetAtt %s: want Resource.Attribute", path, show(arg)))
				}
			case "Fn::Sub":
				s, vars, ok := subOf(v)
				if !ok {
					problems = append(problems, fmt.Sprintf("%s: Fn::Sub %s: want a string or [string, variables]", path, show(arg)))
					break
				}
				for _, m := range subVariable.FindAllStringSubmatch(s, -1) {
					name := m[1]
					if _, local := vars[name]; local || refOK(name) {
						continue
					}
					if id, attr, ok := strings.Cut(name, "."); ok {
						getAtt(path, id, attr)
						continue
					}
					problems = append(problems, fmt.Sprintf("%s: Fn::Sub variable ${%s} does not resolve", path, name))
				}
			}
		}
		switch x := v.(type) {
		case map[string]any:
			for _, k := range sortedKeys(x) {
				walk(path+"."+k, x[k])
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		}
	}
	for _, section := range []string{"Globals", "Conditions", "Outputs"} {
		walk(section, t.raw[section])
	}
	for _, id := range sortedKeys(res) {
		r := asMap(res[id])
		walk("Resources."+id+".Properties", r["Properties"])
		for _, d := range asList(r["DependsOn"]) {
			if name, _ := d.(string); types[name] == "" {
				problems = append(problems, fmt.Sprintf("Resources.%s.DependsOn: no resource %s", id, show(d)))
			}
		}
	}
	return problems
}

// functionDir is the package a function is built from: <Name>Function →
// functions/<name>.
func functionDir(id string) (string, bool) {
	name, ok := strings.CutSuffix(id, "Function")
	if !ok || name == "" {
		return "", false
	}
	return "functions/" + strings.ToLower(name), true
}

// checkFunctions: every function is built by the Makefile from the module
// root for provided.al2023 on arm64 as `bootstrap`, logs JSON, and has a
// timeout; every package main under functions/ is a function of the
// template.
func checkFunctions(c *contract, t *tmpl) []string {
	var problems []string
	fns := resourcesOf(t, "AWS::Serverless::Function")
	if len(fns) == 0 {
		return []string{"no AWS::Serverless::Function"}
	}
	for _, id := range fns {
		r := asMap(asMap(t.raw["Resources"])[id])
		p := effective(t, id)
		want := map[string]any{
			"Metadata.BuildMethod":    "makefile",
			"CodeUri":                 ".",
			"Runtime":                 "provided.al2023",
			"Architectures":           []any{"arm64"},
			"Handler":                 "bootstrap",
			"LoggingConfig.LogFormat": "JSON",
		}
		got := map[string]any{
			"Metadata.BuildMethod":    asMap(r["Metadata"])["BuildMethod"],
			"CodeUri":                 p["CodeUri"],
			"Runtime":                 p["Runtime"],
			"Architectures":           p["Architectures"],
			"Handler":                 p["Handler"],
			"LoggingConfig.LogFormat": asMap(p["LoggingConfig"])["LogFormat"],
		}
		for _, k := range sortedKeys(want) {
			if !equalJSON(want[k], got[k]) {
				problems = append(problems, fmt.Sprintf("%s: %s is %s, want %s", id, k, show(got[k]), show(want[k])))
			}
		}
		if n, ok := number(p["Timeout"]); !ok || n <= 0 {
			problems = append(problems, fmt.Sprintf("%s: no Timeout (Lambda's default is 3 s)", id))
		}
		if _, ok := functionDir(id); !ok {
			problems = append(problems, fmt.Sprintf("%s: a function's logical id must be <Name>Function, built from functions/<name>", id))
		}
	}
	// Every function of the code is deployed.
	dirs, err := filepath.Glob(filepath.Join(c.root, "functions", "*", "main.go"))
	if err != nil {
		return append(problems, err.Error())
	}
	for _, d := range dirs {
		name := filepath.Base(filepath.Dir(d))
		id := strings.ToUpper(name[:1]) + name[1:] + "Function"
		if resourceType(t, id) != "AWS::Serverless::Function" {
			problems = append(problems, fmt.Sprintf("functions/%s has no function %s in the template", name, id))
		}
	}
	return problems
}

// checkMakeTargets: the Makefile has build-<LogicalId> for every function,
// and it builds functions/<name> for linux/arm64 without cgo or the RPC
// shim, into $(ARTIFACTS_DIR)/bootstrap (`make -n`: nothing is built).
func checkMakeTargets(c *contract, t *tmpl) []string {
	var problems []string
	for _, id := range resourcesOf(t, "AWS::Serverless::Function") {
		dir, ok := functionDir(id)
		if !ok {
			continue // checkFunctions reports it
		}
		out, err := c.dryRun(id)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: no make target build-%s: %v", id, id, err))
			continue
		}
		for _, want := range []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64", "-tags lambda.norpc", "-trimpath", "-o /ARTIFACTS/bootstrap ./" + dir} {
			if !strings.Contains(out, want) {
				problems = append(problems, fmt.Sprintf("%s: `make build-%s` does not run %q:\n%s", id, id, want, out))
			}
		}
	}
	return problems
}

// dryRun is `make -n build-<id> ARTIFACTS_DIR=/ARTIFACTS`, once per id.
func (c *contract) dryRun(id string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if out, ok := c.targets[id]; ok {
		if strings.HasPrefix(out, "error: ") {
			return "", fmt.Errorf("%s", strings.TrimPrefix(out, "error: "))
		}
		return out, nil
	}
	cmd := exec.Command("make", "--no-print-directory", "-n", "build-"+id, "ARTIFACTS_DIR=/ARTIFACTS")
	cmd.Dir = c.root
	b, err := cmd.CombinedOutput()
	if err != nil {
		c.targets[id] = "error: " + strings.TrimSpace(string(b))
		return "", fmt.Errorf("%s", strings.TrimSpace(string(b)))
	}
	c.targets[id] = string(b)
	return string(b), nil
}

// wired is what the functions' environment points at.
type wired struct {
	prefix                   string // the tables' prefix, as Fn::Sub text
	queue, deadLetter        string // queue ids
	stateMachine, key, param string // state machine, KMS key, namespace parameter
	env                      map[string]any
}

// wiring reads the functions' shared settings: every function must agree,
// and each must point at a resource of the right kind.
func wiring(t *tmpl) (wired, []string) {
	var w wired
	var problems []string
	fns := resourcesOf(t, "AWS::Serverless::Function")
	if len(fns) == 0 {
		return w, []string{"no function to read the environment of"}
	}
	w.env = functionEnv(t, fns[0])
	for _, id := range fns[1:] {
		env := functionEnv(t, id)
		for _, name := range []string{awsruntime.EnvTablePrefix, awsruntime.EnvQueueURL, awsruntime.EnvDeadLetterURL, awsruntime.EnvStateMachineARN, awsruntime.EnvKMSKeyID, awsruntime.EnvMetricsNS, awsruntime.EnvMaxReceives} {
			if !equalJSON(env[name], w.env[name]) {
				problems = append(problems, fmt.Sprintf("%s: %s is %s, %s's is %s: the functions must share one store, queue and workflow", id, name, show(env[name]), fns[0], show(w.env[name])))
			}
		}
	}
	refTo := func(name, typ string) string {
		v := w.env[name]
		id, ok := refOf(v)
		if !ok || resourceType(t, id) != typ {
			problems = append(problems, fmt.Sprintf("%s is %s, want a Ref to a %s", name, show(v), typ))
		}
		return id
	}
	if s, vars, ok := subOf(w.env[awsruntime.EnvTablePrefix]); ok && len(vars) == 0 && s == "${AWS::StackName}-" {
		w.prefix = s
	} else {
		problems = append(problems, fmt.Sprintf("%s is %s, want !Sub \"${AWS::StackName}-\"", awsruntime.EnvTablePrefix, show(w.env[awsruntime.EnvTablePrefix])))
	}
	w.queue = refTo(awsruntime.EnvQueueURL, "AWS::SQS::Queue")
	w.deadLetter = refTo(awsruntime.EnvDeadLetterURL, "AWS::SQS::Queue")
	w.stateMachine = refTo(awsruntime.EnvStateMachineARN, "AWS::Serverless::StateMachine")
	w.key = refTo(awsruntime.EnvKMSKeyID, "AWS::KMS::Key")
	if p, ok := refOf(w.env[awsruntime.EnvMetricsNS]); ok && asMap(t.raw["Parameters"])[p] != nil {
		w.param = p
	} else {
		problems = append(problems, fmt.Sprintf("%s is %s, want a Ref to a parameter", awsruntime.EnvMetricsNS, show(w.env[awsruntime.EnvMetricsNS])))
	}
	if w.queue != "" {
		target := asMap(props(t, w.queue)["RedrivePolicy"])["deadLetterTargetArn"]
		if id, attr, ok := getAttOf(target); !ok || id != w.deadLetter || attr != "Arn" {
			problems = append(problems, fmt.Sprintf("%s's RedrivePolicy targets %s, want the dead-letter queue %s (%s)", w.queue, show(target), w.deadLetter, awsruntime.EnvDeadLetterURL))
		}
	}
	return w, problems
}

// checkEnvironment: every function sets every variable the code reads
// (but the documented exceptions), none the code does not read, never
// the static key, and the variables of functionOnlyEnv exactly where
// they are needed; the shared settings point at the right resources.
func checkEnvironment(c *contract, t *tmpl) []string {
	_, problems := wiring(t)
	for _, id := range resourcesOf(t, "AWS::Serverless::Function") {
		env := functionEnv(t, id)
		for _, name := range c.code.envNames {
			_, set := env[name]
			_, optional := optionalEnv[name]
			why, forbidden := forbiddenEnv[name]
			if only, ok := functionOnlyEnv[name]; ok {
				switch needs := slices.Contains(only.functions, id); {
				case needs && !set:
					problems = append(problems, fmt.Sprintf("%s: %s is not set: %s", id, name, only.why))
				case !needs && set:
					problems = append(problems, fmt.Sprintf("%s sets %s, which only %s read(s): %s", id, name, strings.Join(only.functions, ", "), only.why))
				}
				continue
			}
			switch {
			case forbidden && set:
				problems = append(problems, fmt.Sprintf("%s sets %s: %s", id, name, why))
			case !set && !forbidden && !optional && !runtimeProvided(name):
				problems = append(problems, fmt.Sprintf("%s: %s is not set, and the code reads it", id, name))
			}
		}
		for _, name := range sortedKeys(env) {
			if !slices.Contains(c.code.envNames, name) {
				problems = append(problems, fmt.Sprintf("%s sets %s, which no code reads", id, name))
			}
			if _, ok := env[name].(string); !ok {
				if _, _, ok := intrinsic(env[name]); !ok {
					problems = append(problems, fmt.Sprintf("%s: %s is %s, want a string", id, name, show(env[name])))
				}
			}
		}
	}
	return problems
}

// tableShape is what the checks compare of a table.
type tableShape struct {
	Billing    string
	Attributes []string // name:type, sorted
	Key        []string // name:HASH, name:RANGE
	Indexes    map[string]indexShape
}

type indexShape struct {
	Key        []string
	Projection string
	NonKey     []string
}

// checkTables: the tables are dynamostore.Tables(prefix), with
// point-in-time recovery, retained with the stack, the TTLs of
// dynamostore.TimeToLives (the ledger's and the workspace table's).
func checkTables(c *contract, t *tmpl) []string {
	w, problems := wiring(t)
	if t.typed == nil {
		return append(problems, fmt.Sprintf("goformation cannot read the template: %v", t.typedErr))
	}
	if w.prefix == "" {
		return problems
	}
	want := map[string]tableShape{}
	for _, in := range dynamostore.Tables(w.prefix) {
		s := tableShape{Billing: string(in.BillingMode), Indexes: map[string]indexShape{}}
		for _, a := range in.AttributeDefinitions {
			s.Attributes = append(s.Attributes, aws.ToString(a.AttributeName)+":"+string(a.AttributeType))
		}
		for _, k := range in.KeySchema {
			s.Key = append(s.Key, aws.ToString(k.AttributeName)+":"+string(k.KeyType))
		}
		for _, g := range in.GlobalSecondaryIndexes {
			ix := indexShape{Projection: string(g.Projection.ProjectionType), NonKey: g.Projection.NonKeyAttributes}
			for _, k := range g.KeySchema {
				ix.Key = append(ix.Key, aws.ToString(k.AttributeName)+":"+string(k.KeyType))
			}
			s.Indexes[aws.ToString(g.IndexName)] = ix
		}
		slices.Sort(s.Attributes)
		want[aws.ToString(in.TableName)] = s
	}
	got := map[string]tableShape{}
	ttls := map[string]string{} // table name → TTL attribute
	for _, in := range dynamostore.TimeToLives(w.prefix) {
		ttls[aws.ToString(in.TableName)] = aws.ToString(in.TimeToLiveSpecification.AttributeName)
	}
	for id, tb := range t.typed.GetAllDynamoDBTableResources() {
		name := id + " (no TableName)"
		if tb.TableName != nil {
			name = show(decodeIntrinsic(*tb.TableName))
			if s, _, ok := subOf(decodeIntrinsic(*tb.TableName)); ok {
				name = s
			}
		}
		s := tableShape{Billing: aws.ToString(tb.BillingMode), Indexes: map[string]indexShape{}}
		for _, a := range tb.AttributeDefinitions {
			s.Attributes = append(s.Attributes, a.AttributeName+":"+a.AttributeType)
		}
		for _, k := range tb.KeySchema {
			s.Key = append(s.Key, k.AttributeName+":"+k.KeyType)
		}
		for _, g := range tb.GlobalSecondaryIndexes {
			ix := indexShape{}
			if g.Projection != nil {
				ix.Projection, ix.NonKey = aws.ToString(g.Projection.ProjectionType), g.Projection.NonKeyAttributes
			}
			for _, k := range g.KeySchema {
				ix.Key = append(ix.Key, k.AttributeName+":"+k.KeyType)
			}
			s.Indexes[g.IndexName] = ix
		}
		if len(tb.LocalSecondaryIndexes) > 0 {
			problems = append(problems, fmt.Sprintf("%s: local secondary indexes the store does not define", id))
		}
		slices.Sort(s.Attributes)
		got[name] = s
		if p := tb.PointInTimeRecoverySpecification; p == nil || p.PointInTimeRecoveryEnabled == nil || !*p.PointInTimeRecoveryEnabled {
			problems = append(problems, fmt.Sprintf("%s: point-in-time recovery is off", id))
		}
		if tb.AWSCloudFormationDeletionPolicy != "Retain" || tb.AWSCloudFormationUpdateReplacePolicy != "Retain" {
			problems = append(problems, fmt.Sprintf("%s: DeletionPolicy %q, UpdateReplacePolicy %q, want Retain: the ledger must outlive the stack", id, tb.AWSCloudFormationDeletionPolicy, tb.AWSCloudFormationUpdateReplacePolicy))
		}
		var gotTTL string
		if s := tb.TimeToLiveSpecification; s != nil && s.Enabled {
			gotTTL = aws.ToString(s.AttributeName)
		}
		if wantTTL := ttls[name]; gotTTL != wantTTL {
			problems = append(problems, fmt.Sprintf("%s: TTL attribute %q, want %q (dynamostore.TimeToLives)", id, gotTTL, wantTTL))
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		problems = append(problems, fmt.Sprintf("the tables differ from dynamostore.Tables(%q) (-want +got):\n%s", w.prefix, diff))
	}
	return problems
}

// checkQueues: the publish queue and its event source mapping as
// sqsqueue and the publisher need them.
func checkQueues(c *contract, t *tmpl) []string {
	w, problems := wiring(t)
	if w.queue == "" || w.deadLetter == "" {
		return problems
	}
	q, d := props(t, w.queue), props(t, w.deadLetter)
	for _, x := range []struct {
		id    string
		props map[string]any
	}{{w.queue, q}, {w.deadLetter, d}} {
		if n, _ := number(x.props["DelaySeconds"]); n != 0 {
			problems = append(problems, fmt.Sprintf("%s: DelaySeconds %v, want 0 (sqsqueue.Check)", x.id, n))
		}
		if n, ok := number(x.props["MaximumMessageSize"]); !ok || n < sqsqueue.MinQueueMessageSize {
			problems = append(problems, fmt.Sprintf("%s: MaximumMessageSize %s, want at least sqsqueue.MinQueueMessageSize (%d), set explicitly", x.id, show(x.props["MaximumMessageSize"]), sqsqueue.MinQueueMessageSize))
		}
	}
	if n, _ := number(q["ReceiveMessageWaitTimeSeconds"]); n != 0 {
		problems = append(problems, fmt.Sprintf("%s: ReceiveMessageWaitTimeSeconds %v, want 0 (sqsqueue.Check)", w.queue, n))
	}
	if d["RedrivePolicy"] != nil {
		problems = append(problems, fmt.Sprintf("%s: has a RedrivePolicy; listing dead letters counts as receiving them (sqsqueue.Check)", w.deadLetter))
	}
	maxReceives, ok := number(asMap(q["RedrivePolicy"])["maxReceiveCount"])
	if !ok || maxReceives < 5 {
		problems = append(problems, fmt.Sprintf("%s: maxReceiveCount %s, want a number of at least 5 (AWS's guidance for an event source mapping)", w.queue, show(asMap(q["RedrivePolicy"])["maxReceiveCount"])))
	}
	if env, ok := number(w.env[awsruntime.EnvMaxReceives]); !ok || env != maxReceives {
		problems = append(problems, fmt.Sprintf("%s is %s, want %s's maxReceiveCount %v: sqsqueue dead-letters at the same count", awsruntime.EnvMaxReceives, show(w.env[awsruntime.EnvMaxReceives]), w.queue, maxReceives))
	}

	var mappings []string
	for _, id := range resourcesOf(t, "AWS::Lambda::EventSourceMapping") {
		if src, attr, ok := getAttOf(props(t, id)["EventSourceArn"]); ok && src == w.queue && attr == "Arn" {
			mappings = append(mappings, id)
		}
	}
	if len(mappings) != 1 {
		return append(problems, fmt.Sprintf("%d event source mappings read %s, want 1", len(mappings), w.queue))
	}
	m := props(t, mappings[0])
	fn, ok := refOf(m["FunctionName"])
	if !ok {
		fn, _, ok = getAttOf(m["FunctionName"])
	}
	if !ok || fn != "PublisherFunction" {
		problems = append(problems, fmt.Sprintf("%s: FunctionName %s, want PublisherFunction", mappings[0], show(m["FunctionName"])))
	}
	// Jobs of a batch run concurrently in one invocation: at most ten.
	if lo, hi, ok := numberRange(t, m["BatchSize"]); !ok || lo < 1 || hi > 10 {
		problems = append(problems, fmt.Sprintf("%s: BatchSize %s, want 1-10 (a number, or a Number parameter bounded so)", mappings[0], show(m["BatchSize"])))
	}
	if !slices.Contains(asList(m["FunctionResponseTypes"]), any("ReportBatchItemFailures")) {
		problems = append(problems, fmt.Sprintf("%s: FunctionResponseTypes %s, want ReportBatchItemFailures (else one failed job returns the whole batch)", mappings[0], show(m["FunctionResponseTypes"])))
	}
	if lo, hi, ok := numberRange(t, asMap(m["ScalingConfig"])["MaximumConcurrency"]); !ok || lo < 2 || hi > 1000 {
		problems = append(problems, fmt.Sprintf("%s: ScalingConfig.MaximumConcurrency %s, want 2-1000", mappings[0], show(m["ScalingConfig"])))
	}
	timeout, _ := number(effective(t, fn)["Timeout"])
	if v, _ := number(q["VisibilityTimeout"]); timeout <= 0 || v < 6*timeout {
		problems = append(problems, fmt.Sprintf("%s: VisibilityTimeout %s, want at least 6 × %s's timeout %v s (AWS's guidance)", w.queue, show(q["VisibilityTimeout"]), fn, timeout))
	}
	return problems
}

// placeholder matches ${Name} in a state machine definition.
var placeholder = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)\}`)

// checkStateMachine: a Standard workflow from its file, every placeholder
// of which is substituted, every substitution used, and allowed to invoke
// every function it names.
func checkStateMachine(c *contract, t *tmpl) []string {
	var problems []string
	sms := resourcesOf(t, "AWS::Serverless::StateMachine")
	if len(sms) == 0 {
		return []string{"no AWS::Serverless::StateMachine"}
	}
	for _, id := range sms {
		p := props(t, id)
		if p["Type"] != "STANDARD" {
			problems = append(problems, fmt.Sprintf("%s: Type %s, want STANDARD (exactly-once executions, unique names, task tokens)", id, show(p["Type"])))
		}
		uri, _ := p["DefinitionUri"].(string)
		b, err := os.ReadFile(filepath.Join(t.dir, uri))
		if err != nil || !json.Valid(b) {
			problems = append(problems, fmt.Sprintf("%s: DefinitionUri %s: not a JSON file of the module (%v)", id, show(p["DefinitionUri"]), err))
			continue
		}
		var used []string
		for _, m := range placeholder.FindAllStringSubmatch(string(b), -1) {
			used = append(used, m[1])
		}
		slices.Sort(used)
		used = slices.Compact(used)
		subs := asMap(p["DefinitionSubstitutions"])
		if diff := cmp.Diff(used, sortedKeys(subs)); diff != "" {
			problems = append(problems, fmt.Sprintf("%s: %s's placeholders (-) and DefinitionSubstitutions (+) differ:\n%s", id, uri, diff))
		}
		for _, k := range sortedKeys(subs) {
			if fn, attr, ok := getAttOf(subs[k]); ok && attr == "Arn" && resourceType(t, fn) == "AWS::Serverless::Function" {
				if !grants(t, id, "lambda:InvokeFunction", fn) {
					problems = append(problems, fmt.Sprintf("%s: its policies do not allow lambda:InvokeFunction on %s, which ${%s} names", id, fn, k))
				}
				continue
			}
			arn, _, ok := subOf(subs[k])
			if !ok || !strings.HasPrefix(arn, lambdaARNPrefix) {
				continue
			}
			fn := functionNamed(t, strings.TrimPrefix(arn, lambdaARNPrefix))
			if fn == "" {
				problems = append(problems, fmt.Sprintf("%s: ${%s} is %s, which is no function's FunctionName in this template", id, k, arn))
				continue
			}
			if !grantsARN(t, id, "lambda:InvokeFunction", arn) {
				problems = append(problems, fmt.Sprintf("%s: its policies do not allow lambda:InvokeFunction on %s (%s), which ${%s} names", id, arn, fn, k))
			}
		}
	}
	return problems
}

// lambdaARNPrefix starts a Lambda function's ARN written with Fn::Sub.
const lambdaARNPrefix = "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:"

// functionNamed is the function whose FunctionName is !Sub name, or "".
func functionNamed(t *tmpl, name string) string {
	for _, fn := range resourcesOf(t, "AWS::Serverless::Function") {
		if s, _, ok := subOf(props(t, fn)["FunctionName"]); ok && s == name {
			return fn
		}
	}
	return ""
}

// grantsARN reports whether owner's policy statements allow action on
// the resource written as the Fn::Sub string arn.
func grantsARN(t *tmpl, owner, action, arn string) bool {
	stmts, _ := policyStatements(t)
	for _, s := range stmts {
		if s.owner != owner || s.stmt["Effect"] != "Allow" || !slices.Contains(asList(s.stmt["Action"]), any(action)) {
			continue
		}
		for _, r := range asList(s.stmt["Resource"]) {
			if sub, _, ok := subOf(r); ok && sub == arn {
				return true
			}
		}
	}
	return false
}

// grants reports whether owner's policy statements allow action on a
// resource that refers to target.
func grants(t *tmpl, owner, action, target string) bool {
	stmts, _ := policyStatements(t)
	for _, s := range stmts {
		if s.owner != owner || s.stmt["Effect"] != "Allow" || !slices.Contains(asList(s.stmt["Action"]), any(action)) {
			continue
		}
		for _, r := range asList(s.stmt["Resource"]) {
			if slices.Contains(references(r), target) {
				return true
			}
		}
	}
	return false
}

// Alarms the template must have on the custom namespace, and those of
// them that must treat missing data as breaching (a sweeper that stopped,
// or a sweep that could not read, emits no gauge). FailedTargets is a
// running total watched for growth (DIFF), whose first point in a window
// is always missing: it cannot be breaching, and need not be.
var (
	requiredAlarmMetrics = []string{"StalePending", "StaleUnknown", "StuckTargets", "MissedSchedules", "HeldTargets", "ApprovalOverdue", "FailedTargets", "ReconnectNeeded", "DuplicateBlocked", "SweepErrors"}
	breachingMetrics     = []string{"StalePending", "StaleUnknown", "StuckTargets", "MissedSchedules", "HeldTargets", "ApprovalOverdue", "SweepErrors"}
)

// watched is one metric an alarm watches.
type watched struct {
	alarm, namespace, metric string
	custom                   bool // in the MetricsNamespace parameter
	dims                     map[string]any
}

// alarmMetrics lists what an alarm watches: its metric, or its metric
// math's metrics.
func alarmMetrics(t *tmpl, w wired, id string) []watched {
	p := props(t, id)
	metrics := []map[string]any{p}
	for _, q := range asList(p["Metrics"]) {
		if m := asMap(asMap(asMap(q)["MetricStat"])["Metric"]); m != nil {
			metrics = append(metrics, m)
		}
	}
	var out []watched
	for _, m := range metrics {
		if m["MetricName"] == nil {
			continue
		}
		x := watched{alarm: id, dims: map[string]any{}}
		x.metric, _ = m["MetricName"].(string)
		if ref, ok := refOf(m["Namespace"]); ok && ref == w.param {
			x.custom = true
		} else {
			x.namespace, _ = m["Namespace"].(string)
		}
		for _, d := range asList(m["Dimensions"]) {
			if name, ok := asMap(d)["Name"].(string); ok {
				x.dims[name] = asMap(d)["Value"]
			}
		}
		out = append(out, x)
	}
	return out
}

// checkAlarms: the alarms watch metrics the code emits, with its
// dimensions, in the namespace parameter; the required ones exist (the
// sweeper's gauges breaching when missing), on the dead-letter queue, the
// workflow and every function; each notifies a topic parameter; the
// dashboard's custom metrics are emitted too.
func checkAlarms(c *contract, t *tmpl) []string {
	w, problems := wiring(t)
	if w.param == "" {
		return problems
	}
	wantDims := map[string]any{}
	for k, v := range c.code.dimensions {
		wantDims[k] = v
	}
	sweep, err := sweepInterval(t)
	if err != nil {
		problems = append(problems, err.Error())
	}
	custom := map[string][]string{} // metric → alarms
	aws := map[string]bool{}        // namespace|metric|dimension=target
	for _, id := range resourcesOf(t, "AWS::CloudWatch::Alarm") {
		p := props(t, id)
		ms := alarmMetrics(t, w, id)
		if len(ms) == 0 {
			problems = append(problems, fmt.Sprintf("%s: watches no metric", id))
		}
		for _, m := range ms {
			switch {
			case m.custom:
				if !c.code.metrics[m.metric] {
					problems = append(problems, fmt.Sprintf("%s: watches %s, which no code emits", id, m.metric))
				}
				if !equalJSON(wantDims, m.dims) {
					problems = append(problems, fmt.Sprintf("%s: dimensions %s, want the runtime's %s", id, show(m.dims), show(wantDims)))
				}
				custom[m.metric] = append(custom[m.metric], id)
				if slices.Contains(breachingMetrics, m.metric) {
					if p["TreatMissingData"] != "breaching" {
						problems = append(problems, fmt.Sprintf("%s: TreatMissingData %s, want breaching: a sweeper that stopped emits no %s", id, show(p["TreatMissingData"]), m.metric))
					}
					problems = append(problems, checkGaugeTolerance(id, p, sweep)...)
				}
			case strings.HasPrefix(m.namespace, "AWS/"):
				for name, v := range m.dims {
					target := references(v)
					if len(target) == 1 {
						aws[m.namespace+"|"+m.metric+"|"+name+"="+target[0]] = true
					}
				}
			default:
				problems = append(problems, fmt.Sprintf("%s: namespace %s, want the %s parameter or AWS/…", id, show(p["Namespace"]), w.param))
			}
		}
		notifies := false
		for _, a := range asList(p["AlarmActions"]) {
			if ref, ok := refOf(a); ok && asMap(t.raw["Parameters"])[ref] != nil {
				notifies = true
			}
		}
		if !notifies {
			problems = append(problems, fmt.Sprintf("%s: AlarmActions %s, want the topic parameter", id, show(p["AlarmActions"])))
		}
	}
	for _, m := range requiredAlarmMetrics {
		if len(custom[m]) == 0 {
			problems = append(problems, fmt.Sprintf("no alarm watches %s", m))
		}
	}
	want := []string{"AWS/SQS|ApproximateNumberOfMessagesVisible|QueueName=" + w.deadLetter}
	if w.stateMachine != "" {
		want = append(want, "AWS/States|ExecutionsFailed|StateMachineArn="+w.stateMachine)
	}
	for _, fn := range resourcesOf(t, "AWS::Serverless::Function") {
		want = append(want, "AWS/Lambda|Errors|FunctionName="+fn)
	}
	for _, k := range want {
		if !aws[k] {
			problems = append(problems, fmt.Sprintf("no alarm on %s", strings.ReplaceAll(k, "|", " ")))
		}
	}
	return append(problems, checkDashboards(c, t, w)...)
}

// Gauge alarms' tolerance (docs/decisions.md, "Gauge alarms and late
// sweeps"): a sweep that starts after its minute, or does not run, leaves
// one minute without a datapoint, which TreatMissingData breaching counts
// against the alarm.
const (
	// minGaugeDatapoints is the fewest breaching minutes a gauge alarm may
	// page on: two late or missed sweeps make two empty minutes at most.
	minGaugeDatapoints = 3
	// maxDeadSweeper is how long a sweeper may be dead before its gauges'
	// alarms page (G3: a dead sweeper alarms too), in seconds.
	maxDeadSweeper = 300
)

// rateMinutes reads a rate() expression in minutes.
var rateMinutes = regexp.MustCompile(`^rate\((\d+) minutes?\)$`)

// sweepInterval is the rate, in seconds, of the schedule that runs the
// sweeper: the template's one rate() schedule in minutes.
func sweepInterval(t *tmpl) (float64, error) {
	var found []float64
	for _, id := range resourcesOf(t, "AWS::Scheduler::Schedule") {
		expr, _ := props(t, id)["ScheduleExpression"].(string)
		if m := rateMinutes.FindStringSubmatch(expr); m != nil {
			n, _ := strconv.Atoi(m[1])
			found = append(found, float64(n*60))
		}
	}
	if len(found) != 1 {
		return 0, fmt.Errorf("%d rate() schedules in minutes, want one: the sweeper's, which the gauge alarms' periods follow", len(found))
	}
	return found[0], nil
}

// checkGaugeTolerance: an alarm on a sweeper gauge has one datapoint a
// period (the sweeps' rate), pages on no fewer than minGaugeDatapoints
// breaching periods (no one or two late or missed sweeps page), out of
// more periods than that (M of N: a datapoint that comes late, or a gauge
// that dips for a minute, does not restart the count; AWS's guidance for
// EMF metrics), and within maxDeadSweeper of the last sweep.
func checkGaugeTolerance(id string, p map[string]any, sweep float64) []string {
	var problems []string
	period, _ := number(p["Period"])
	m, _ := number(p["DatapointsToAlarm"])
	n, _ := number(p["EvaluationPeriods"])
	if p["DatapointsToAlarm"] == nil {
		m = n // CloudFormation's default
	}
	if sweep > 0 && period != sweep {
		problems = append(problems, fmt.Sprintf("%s: Period %s, want the sweeper's rate, %g s: one datapoint a period", id, show(p["Period"]), sweep))
	}
	if m < minGaugeDatapoints {
		problems = append(problems, fmt.Sprintf("%s: DatapointsToAlarm %g, want at least %d: each late or missed sweep leaves a minute without a datapoint, which counts as breaching", id, m, minGaugeDatapoints))
	}
	if n <= m {
		problems = append(problems, fmt.Sprintf("%s: EvaluationPeriods %g, want more than DatapointsToAlarm %g", id, n, m))
	}
	if m*period > maxDeadSweeper {
		problems = append(problems, fmt.Sprintf("%s: DatapointsToAlarm %g × Period %g s, want at most %d s: a sweeper that stopped must page within five minutes", id, m, period, maxDeadSweeper))
	}
	return problems
}

// checkDashboards: every dashboard body is JSON once its variables are
// filled, and its metrics in the namespace parameter are emitted.
func checkDashboards(c *contract, t *tmpl, w wired) []string {
	var problems []string
	for _, id := range resourcesOf(t, "AWS::CloudWatch::Dashboard") {
		body, _, ok := subOf(props(t, id)["DashboardBody"])
		if !ok {
			body, ok = props(t, id)["DashboardBody"].(string)
		}
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: DashboardBody %s, want a string or Fn::Sub", id, show(props(t, id)["DashboardBody"])))
			continue
		}
		filled := subVariable.ReplaceAllString(body, "«$1»")
		var doc struct {
			Widgets []struct {
				Properties struct {
					Metrics [][]any `json:"metrics"`
				} `json:"properties"`
			} `json:"widgets"`
		}
		if err := json.Unmarshal([]byte(filled), &doc); err != nil {
			problems = append(problems, fmt.Sprintf("%s: DashboardBody is not JSON: %v", id, err))
			continue
		}
		for _, wd := range doc.Widgets {
			for _, m := range wd.Properties.Metrics {
				if len(m) >= 2 && m[0] == "«"+w.param+"»" && !c.code.metrics[fmt.Sprint(m[1])] {
					problems = append(problems, fmt.Sprintf("%s: shows %v, which no code emits", id, m[1]))
				}
			}
		}
	}
	return problems
}

// statement is one IAM policy statement and what it belongs to.
type statement struct {
	owner string
	path  string
	stmt  map[string]any
}

// policyStatements lists the statements of every identity policy of the
// template: the functions' and state machines' Policies (inline
// documents only: a managed policy or a SAM policy template cannot be
// checked, and is reported), IAM roles' and policies' documents.
func policyStatements(t *tmpl) ([]statement, []string) {
	var out []statement
	var problems []string
	addDoc := func(owner, path string, doc any) {
		for i, s := range asList(asMap(doc)["Statement"]) {
			out = append(out, statement{owner: owner, path: fmt.Sprintf("%s.Statement[%d]", path, i), stmt: asMap(s)})
		}
	}
	for _, typ := range []string{"AWS::Serverless::Function", "AWS::Serverless::StateMachine"} {
		for _, id := range resourcesOf(t, typ) {
			for i, p := range asList(props(t, id)["Policies"]) {
				path := fmt.Sprintf("%s.Policies[%d]", id, i)
				switch {
				case asMap(p)["Statement"] != nil:
					addDoc(id, path, p)
				default:
					problems = append(problems, fmt.Sprintf("%s: %s is a managed policy or a SAM policy template; write the statements inline so they can be checked", path, show(p)))
				}
			}
		}
	}
	for _, id := range resourcesOf(t, "AWS::IAM::Role") {
		for i, p := range asList(props(t, id)["Policies"]) {
			addDoc(id, fmt.Sprintf("%s.Policies[%d].PolicyDocument", id, i), asMap(p)["PolicyDocument"])
		}
		if len(asList(props(t, id)["ManagedPolicyArns"])) > 0 {
			problems = append(problems, fmt.Sprintf("%s: ManagedPolicyArns %s; write the statements inline so they can be checked", id, show(props(t, id)["ManagedPolicyArns"])))
		}
	}
	for _, typ := range []string{"AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"} {
		for _, id := range resourcesOf(t, typ) {
			addDoc(id, id+".PolicyDocument", props(t, id)["PolicyDocument"])
		}
	}
	return out, problems
}

// Services whose actions must never be wildcards, and those whose
// resources must be the stack's own.
var (
	noWildcardServices = []string{"dynamodb", "sqs", "states", "scheduler", "events"}
	scopedServices     = []string{"dynamodb", "sqs", "states", "scheduler", "kms", "lambda", "events"}
	// tokenFunctions act with an account's token: only they, and the
	// operators' policy (account add seals the tokens), may read the
	// credentials table and decrypt with the key (and secretFunctions,
	// the key only).
	tokenFunctions = []string{"PublisherFunction", "ConfirmFunction", "SweeperFunction"}
	// operatorPolicy is the managed policy for people running the CLI
	// against the stack, output as OperatorPolicyArn.
	operatorPolicy = "OperatorPolicy"
)

// checkPermissions: least privilege. No "*" or service:* actions on
// DynamoDB, SQS, Step Functions, Scheduler or EventBridge; no NotAction
// or NotResource; DynamoDB and KMS actions are calls the store makes (or
// a stream's reads, on streams: checkEvents); their
// resources, like those of Step Functions, SQS, Scheduler and Lambda, are
// the stack's own; the credentials table and the key only for the
// functions acting with tokens; the scheduler role only invokes the
// trigger; no key policy opens the key to everyone.
func checkPermissions(c *contract, t *tmpl) []string {
	stmts, problems := policyStatements(t)
	w, _ := wiring(t)
	credentials := ""
	for _, id := range resourcesOf(t, "AWS::DynamoDB::Table") {
		if s, _, ok := subOf(props(t, id)["TableName"]); ok && s == w.prefix+dynamostore.CredentialsTable {
			credentials = id
		}
	}
	sensitive := map[string]string{credentials: "the credentials table", w.key: "the credentials key"}
	delete(sensitive, "")
	resourcesOfTemplate := asMap(t.raw["Resources"])
	for _, s := range stmts {
		if s.stmt["NotAction"] != nil || s.stmt["NotResource"] != nil {
			problems = append(problems, fmt.Sprintf("%s: NotAction or NotResource grants more than it names", s.path))
		}
		if s.stmt["Effect"] != "Allow" {
			continue
		}
		var scoped bool
		for _, a := range asList(s.stmt["Action"]) {
			action, ok := a.(string)
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: action %s, want a literal", s.path, show(a)))
				continue
			}
			service, op, _ := strings.Cut(strings.ToLower(action), ":")
			switch {
			case action == "*" || (slices.Contains(noWildcardServices, service) && strings.Contains(op, "*")):
				problems = append(problems, fmt.Sprintf("%s: grants %s", s.path, action))
			case service == "dynamodb" && !slices.Contains(c.code.storeActions, action) && !(slices.Contains(streamActions, action) && streamStatement(t, s)):
				problems = append(problems, fmt.Sprintf("%s: grants %s, a call the store never makes (it makes %s)", s.path, action, strings.Join(c.code.storeActions, ", ")))
			case service == "kms" && !slices.Contains(c.code.kmsActions, action):
				problems = append(problems, fmt.Sprintf("%s: grants %s, a call the store never makes (it makes %s)", s.path, action, strings.Join(c.code.kmsActions, ", ")))
			}
			scoped = scoped || slices.Contains(scopedServices, service)
		}
		for _, r := range asList(s.stmt["Resource"]) {
			refs := slices.DeleteFunc(references(r), func(n string) bool { return resourcesOfTemplate[n] == nil })
			if sub, _, ok := subOf(r); ok && strings.HasPrefix(sub, lambdaARNPrefix) {
				// A function named by its ARN (to keep a reference cycle out).
				if fn := functionNamed(t, strings.TrimSuffix(strings.TrimPrefix(sub, lambdaARNPrefix), ":*")); fn != "" {
					refs = append(refs, fn)
				}
			}
			if scoped && len(refs) == 0 {
				problems = append(problems, fmt.Sprintf("%s: resource %s is not one of the stack's own", s.path, show(r)))
			}
			for _, ref := range refs {
				if ref == w.key && slices.Contains(secretFunctions, s.owner) {
					continue // it opens webhook secrets, sealed with the same data key
				}
				if what, ok := sensitive[ref]; ok && !slices.Contains(tokenFunctions, s.owner) && s.owner != operatorPolicy {
					problems = append(problems, fmt.Sprintf("%s: %s is granted %s; only %s act with tokens", s.path, s.owner, what, strings.Join(tokenFunctions, ", ")))
				}
			}
		}
	}
	if resourceType(t, operatorPolicy) != "AWS::IAM::ManagedPolicy" {
		problems = append(problems, fmt.Sprintf("no AWS::IAM::ManagedPolicy %s: the CLI's operators need their permissions from the stack", operatorPolicy))
	} else if id, ok := refOf(asMap(asMap(t.raw["Outputs"])["OperatorPolicyArn"])["Value"]); !ok || id != operatorPolicy {
		problems = append(problems, fmt.Sprintf("output OperatorPolicyArn is not a Ref to %s", operatorPolicy))
	}
	for _, fn := range tokenFunctions {
		if resourceType(t, fn) == "" {
			problems = append(problems, fmt.Sprintf("no function %s", fn))
			continue
		}
		if credentials != "" && !grants(t, fn, "dynamodb:GetItem", credentials) {
			problems = append(problems, fmt.Sprintf("%s cannot read the credentials table %s", fn, credentials))
		}
		if w.key != "" && !grants(t, fn, "kms:Decrypt", w.key) {
			problems = append(problems, fmt.Sprintf("%s cannot decrypt with the key %s", fn, w.key))
		}
	}
	problems = append(problems, checkSchedulerRole(t, stmts)...)
	for _, id := range resourcesOf(t, "AWS::KMS::Key") {
		for i, s := range asList(asMap(props(t, id)["KeyPolicy"])["Statement"]) {
			p := asMap(s)["Principal"]
			if p == "*" || asMap(p)["AWS"] == "*" {
				problems = append(problems, fmt.Sprintf("%s.KeyPolicy.Statement[%d]: opens the key to every principal", id, i))
			}
		}
	}
	return problems
}

// checkSchedulerRole: the role the CLI's schedules run as (output
// SchedulerRoleArn) is assumable by Scheduler only and may only invoke
// the trigger (output TriggerFunctionArn) and dead-letter to a queue.
func checkSchedulerRole(t *tmpl, stmts []statement) []string {
	outputs := asMap(t.raw["Outputs"])
	role, _, ok := getAttOf(asMap(outputs["SchedulerRoleArn"])["Value"])
	if !ok || resourceType(t, role) != "AWS::IAM::Role" {
		return []string{fmt.Sprintf("output SchedulerRoleArn is %s, want Fn::GetAtt of a role", show(asMap(outputs["SchedulerRoleArn"])["Value"]))}
	}
	trigger, _, _ := getAttOf(asMap(outputs["TriggerFunctionArn"])["Value"])
	var problems []string
	for _, s := range asList(asMap(props(t, role)["AssumeRolePolicyDocument"])["Statement"]) {
		if svc := asMap(asMap(s)["Principal"])["Service"]; svc != "scheduler.amazonaws.com" {
			problems = append(problems, fmt.Sprintf("%s: assumable by %s, want scheduler.amazonaws.com only", role, show(asMap(s)["Principal"])))
		}
	}
	for _, s := range stmts {
		if s.owner != role {
			continue
		}
		for _, a := range asList(s.stmt["Action"]) {
			switch a {
			case "lambda:InvokeFunction":
				for _, r := range asList(s.stmt["Resource"]) {
					if refs := references(r); !slices.Equal(refs, []string{trigger}) {
						problems = append(problems, fmt.Sprintf("%s: the scheduler role invokes %s, want only the trigger %s", s.path, show(r), trigger))
					}
				}
			case "sqs:SendMessage":
			default:
				problems = append(problems, fmt.Sprintf("%s: the scheduler role may %s; it needs only lambda:InvokeFunction and sqs:SendMessage (its dead letters)", s.path, show(a)))
			}
		}
	}
	return problems
}

// requiredOutputs are the outputs the CLI reads.
var requiredOutputs = []string{"TablePrefix", "QueueUrl", "DeadLetterQueueUrl", "StateMachineArn", "ScheduleGroupName", "SchedulerRoleArn", "ScheduleDeadLetterQueueArn", "TriggerFunctionArn", "KmsKeyId", "MetricsNamespace", "MediaBucketName"}

// checkOutputs: the outputs the CLI reads exist and say what the
// functions use.
func checkOutputs(c *contract, t *tmpl) []string {
	w, _ := wiring(t)
	var problems []string
	outputs := asMap(t.raw["Outputs"])
	for _, name := range requiredOutputs {
		if outputs[name] == nil {
			problems = append(problems, fmt.Sprintf("no output %s (the CLI reads it)", name))
		}
	}
	value := func(name string) any { return asMap(outputs[name])["Value"] }
	for name, env := range map[string]string{
		"TablePrefix": awsruntime.EnvTablePrefix, "QueueUrl": awsruntime.EnvQueueURL,
		"DeadLetterQueueUrl": awsruntime.EnvDeadLetterURL, "StateMachineArn": awsruntime.EnvStateMachineARN,
		"KmsKeyId": awsruntime.EnvKMSKeyID, "MetricsNamespace": awsruntime.EnvMetricsNS,
	} {
		if outputs[name] != nil && !equalJSON(value(name), w.env[env]) {
			problems = append(problems, fmt.Sprintf("output %s is %s, the functions' %s is %s", name, show(value(name)), env, show(w.env[env])))
		}
	}
	if g, ok := refOf(value("ScheduleGroupName")); outputs["ScheduleGroupName"] != nil && (!ok || resourceType(t, g) != "AWS::Scheduler::ScheduleGroup") {
		problems = append(problems, fmt.Sprintf("output ScheduleGroupName is %s, want a Ref to a schedule group", show(value("ScheduleGroupName"))))
	}
	if fn, attr, ok := getAttOf(value("TriggerFunctionArn")); outputs["TriggerFunctionArn"] != nil && (!ok || fn != "TriggerFunction" || attr != "Arn") {
		problems = append(problems, fmt.Sprintf("output TriggerFunctionArn is %s, want TriggerFunction's Arn", show(value("TriggerFunctionArn"))))
	}
	return problems
}

// numberRange is the values v can take: a number itself, or the MinValue
// to MaxValue of the Number parameter it refers to (both required).
func numberRange(t *tmpl, v any) (lo, hi float64, ok bool) {
	if n, isNumber := number(v); isNumber {
		return n, n, true
	}
	name, isRef := refOf(v)
	p := asMap(asMap(t.raw["Parameters"])[name])
	if !isRef || p["Type"] != "Number" {
		return 0, 0, false
	}
	lo, okLo := number(p["MinValue"])
	hi, okHi := number(p["MaxValue"])
	return lo, hi, okLo && okHi && lo <= hi
}

// checkAsyncInvocation: the function the schedules invoke (output
// TriggerFunctionArn) is invoked asynchronously by EventBridge Scheduler,
// so its failures are Lambda's to retry and then drop: it must have an
// EventInvokeConfig with at most two retries, a bounded event age, and an
// on-failure destination that is a queue of the stack with an alarm on
// its visible messages. Without one, a firing that failed three times
// would be discarded unseen (Scheduler's dead-letter queue never sees it).
func checkAsyncInvocation(c *contract, t *tmpl) []string {
	fn, _, ok := getAttOf(asMap(asMap(t.raw["Outputs"])["TriggerFunctionArn"])["Value"])
	if !ok {
		return []string{"output TriggerFunctionArn is not Fn::GetAtt of a function"}
	}
	cfg := asMap(props(t, fn)["EventInvokeConfig"])
	if cfg == nil {
		return []string{fmt.Sprintf("%s: no EventInvokeConfig: Scheduler invokes it asynchronously, and a firing that failed Lambda's retries would be dropped unseen", fn)}
	}
	var problems []string
	if n, ok := number(cfg["MaximumRetryAttempts"]); !ok || n < 0 || n > 2 {
		problems = append(problems, fmt.Sprintf("%s: EventInvokeConfig.MaximumRetryAttempts %s, want 0-2", fn, show(cfg["MaximumRetryAttempts"])))
	}
	if n, ok := number(cfg["MaximumEventAgeInSeconds"]); !ok || n < 60 || n > 21600 {
		problems = append(problems, fmt.Sprintf("%s: EventInvokeConfig.MaximumEventAgeInSeconds %s, want 60-21600", fn, show(cfg["MaximumEventAgeInSeconds"])))
	}
	onFailure := asMap(asMap(cfg["DestinationConfig"])["OnFailure"])
	queue, attr, ok := getAttOf(onFailure["Destination"])
	if !ok || attr != "Arn" || resourceType(t, queue) != "AWS::SQS::Queue" || onFailure["Type"] != "SQS" {
		return append(problems, fmt.Sprintf("%s: EventInvokeConfig.DestinationConfig.OnFailure %s, want Type SQS and a queue of the stack", fn, show(onFailure)))
	}
	w, _ := wiring(t)
	alarmed := false
	for _, id := range resourcesOf(t, "AWS::CloudWatch::Alarm") {
		for _, m := range alarmMetrics(t, w, id) {
			if m.namespace == "AWS/SQS" && m.metric == "ApproximateNumberOfMessagesVisible" && slices.Contains(references(m.dims["QueueName"]), queue) {
				alarmed = true
			}
		}
	}
	if !alarmed {
		problems = append(problems, fmt.Sprintf("%s: no alarm on %s's visible messages: a firing that failed for good would wait there unseen", fn, queue))
	}
	return problems
}
