package template

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/awslabs/goformation/v7/intrinsics"

	"oncepost/shared/awsruntime"
	"oncepost/shared/dynamostore"
	"oncepost/shared/sqsqueue"
)

// Events and webhooks on AWS (docs/webhooks-aws.md): the tables' change
// streams are the outbox, read by the notifier, which puts events on an
// EventBridge bus and queues webhook deliveries for the webhooks
// function. The checks below hold the template to what that needs, and
// to least privilege for the two functions.

const (
	// notifierFunction reads the streams; webhooksFunction the webhook
	// queue.
	notifierFunction = "NotifierFunction"
	webhooksFunction = "WebhooksFunction"
)

var (
	// secretFunctions open webhook secrets (sealed with the credentials'
	// data key): they may decrypt with the key, never read the credentials
	// table.
	secretFunctions = []string{webhooksFunction, apiFunction}
	// apiFunction serves /v1/webhooks: it seals a new subscription's
	// secret with the data key the operators made, and handles the dead
	// deliveries as the operators do.
	apiFunction = "ApiFunction"
	// streamActions are the DynamoDB Streams calls of a stream event
	// source mapping: granted on streams only.
	streamActions = []string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"}
	// requiredEventOutputs are the outputs `oncepost dlq --queue webhooks`
	// and the documentation name.
	requiredEventOutputs = map[string]string{
		"EventBusName": awsruntime.EnvEventBusName, "WebhookQueueUrl": awsruntime.EnvWebhookQueueURL,
		"WebhookDeadLetterQueueUrl": awsruntime.EnvWebhookDeadLetterURL,
	}
)

// Stream mapping bounds: a record the notifier cannot process is retried
// a finite number of times and for a bounded age, then given up to the
// failure destination, with at least half the stream's 24-hour retention
// left to re-derive its event from the stream.
const (
	maxStreamRetries   = 10000
	maxStreamRecordAge = 12 * 3600
	// minWebhookRetention: a delivery made 24 h ago may still wait for its
	// last try.
	minWebhookRetention = 2 * 24 * 3600
)

// isStreamResource reports whether an IAM resource is a table's stream:
// Fn::GetAtt Table.StreamArn, or "${Table.Arn}/stream/*".
func isStreamResource(t *tmpl, r any) bool {
	if id, attr, ok := getAttOf(r); ok {
		return attr == "StreamArn" && resourceType(t, id) == "AWS::DynamoDB::Table"
	}
	if sub, _, ok := subOf(r); ok {
		table, ok := strings.CutSuffix(sub, ".Arn}/stream/*")
		table, isVar := strings.CutPrefix(table, "${")
		return ok && isVar && resourceType(t, table) == "AWS::DynamoDB::Table"
	}
	return false
}

// streamStatement reports whether every resource of the statement is a
// stream: then stream actions are what it may grant.
func streamStatement(t *tmpl, s statement) bool {
	rs := asList(s.stmt["Resource"])
	if len(rs) == 0 {
		return false
	}
	for _, r := range rs {
		if !isStreamResource(t, r) {
			return false
		}
	}
	return true
}

// hasAlarm reports whether an alarm watches namespace/metric with the
// dimension dim referring to target.
func hasAlarm(t *tmpl, w wired, namespace, metric, dim, target string) bool {
	for _, id := range resourcesOf(t, "AWS::CloudWatch::Alarm") {
		for _, m := range alarmMetrics(t, w, id) {
			if m.namespace == namespace && m.metric == metric && slices.Equal(references(m.dims[dim]), []string{target}) {
				return true
			}
		}
	}
	return false
}

// mappingFunction is the function an event source mapping invokes.
func mappingFunction(m map[string]any) string {
	if fn, ok := refOf(m["FunctionName"]); ok {
		return fn
	}
	fn, _, _ := getAttOf(m["FunctionName"])
	return fn
}

// checkEvents: the tables of dynamostore.EventTables stream old and new
// images to the notifier through mappings that cannot lose a record
// silently or block a shard for a day (finite retries and record age,
// bisecting, per-record failures, an on-failure queue with an alarm) and
// that pass exactly dynamostore.StreamFilter's changes; the bus and the
// webhook queue are wired as the functions read them; the functions have
// the alarms a stream and a queue consumer need; and least privilege for
// both functions.
func checkEvents(c *contract, t *tmpl) []string {
	w, problems := wiring(t)
	if w.prefix == "" {
		return problems
	}
	for _, fn := range []string{notifierFunction, webhooksFunction} {
		if resourceType(t, fn) != "AWS::Serverless::Function" {
			problems = append(problems, fmt.Sprintf("no function %s: events and webhooks on AWS need it (docs/webhooks-aws.md)", fn))
		}
	}
	tables := tableIDs(t, w.prefix)
	for _, name := range dynamostore.EventTables {
		id := tables[name]
		if id == "" {
			problems = append(problems, fmt.Sprintf("no table %s%s, whose changes cause events", w.prefix, name))
			continue
		}
		problems = append(problems, checkStreamMapping(t, w, name, id)...)
	}
	if !hasAlarm(t, w, "AWS/Lambda", "IteratorAge", "FunctionName", notifierFunction) {
		problems = append(problems, fmt.Sprintf("no alarm on AWS/Lambda IteratorAge FunctionName=%s: a stream falling behind delays every event, then drops records to the failure queue", notifierFunction))
	}
	for _, fn := range []string{notifierFunction, webhooksFunction} {
		if !hasAlarm(t, w, "AWS/Lambda", "Throttles", "FunctionName", fn) {
			problems = append(problems, fmt.Sprintf("no alarm on AWS/Lambda Throttles FunctionName=%s", fn))
		}
	}
	bus, busProblems := checkEventBus(t, w)
	problems = append(problems, busProblems...)
	queue, dead, queueProblems := checkWebhookQueue(t, w)
	problems = append(problems, queueProblems...)
	problems = append(problems, checkEventsPrivilege(t, w, tables, bus, queue, dead)...)
	outputs := asMap(t.raw["Outputs"])
	for _, name := range sortedKeys(requiredEventOutputs) {
		env := requiredEventOutputs[name]
		switch {
		case outputs[name] == nil:
			problems = append(problems, fmt.Sprintf("no output %s", name))
		case !equalJSON(asMap(outputs[name])["Value"], w.env[env]):
			problems = append(problems, fmt.Sprintf("output %s is %s, the functions' %s is %s", name, show(asMap(outputs[name])["Value"]), env, show(w.env[env])))
		}
	}
	return problems
}

// checkStreamMapping checks the stream of the event table id (named
// name) and the one mapping reading it.
func checkStreamMapping(t *tmpl, w wired, name, id string) []string {
	var problems []string
	if v := asMap(props(t, id)["StreamSpecification"])["StreamViewType"]; v != "NEW_AND_OLD_IMAGES" {
		problems = append(problems, fmt.Sprintf("%s: StreamSpecification.StreamViewType %s, want NEW_AND_OLD_IMAGES: its changes cause events (dynamostore.EventTables), derived from the old and new image", id, show(v)))
	}
	var mappings []string
	for _, m := range resourcesOf(t, "AWS::Lambda::EventSourceMapping") {
		if src, attr, ok := getAttOf(props(t, m)["EventSourceArn"]); ok && src == id && attr == "StreamArn" {
			mappings = append(mappings, m)
		}
	}
	if len(mappings) != 1 {
		return append(problems, fmt.Sprintf("%d event source mappings read %s's stream, want 1 (invoking %s)", len(mappings), id, notifierFunction))
	}
	mid := mappings[0]
	m := props(t, mid)
	if fn := mappingFunction(m); fn != notifierFunction {
		problems = append(problems, fmt.Sprintf("%s: FunctionName %s, want %s", mid, show(m["FunctionName"]), notifierFunction))
	}
	if m["StartingPosition"] != "TRIM_HORIZON" {
		problems = append(problems, fmt.Sprintf("%s: StartingPosition %s, want TRIM_HORIZON: a mapping made or re-made later must not skip the changes before it", mid, show(m["StartingPosition"])))
	}
	if n, ok := number(m["MaximumRetryAttempts"]); !ok || n < 0 || n > maxStreamRetries {
		problems = append(problems, fmt.Sprintf("%s: MaximumRetryAttempts %s, want 0-%d: the default (-1) retries a failing record until it expires, blocking its shard for up to a day", mid, show(m["MaximumRetryAttempts"]), maxStreamRetries))
	}
	if n, ok := number(m["MaximumRecordAgeInSeconds"]); !ok || n < 60 || n > maxStreamRecordAge {
		problems = append(problems, fmt.Sprintf("%s: MaximumRecordAgeInSeconds %s, want 60-%d: records are given up while half of the stream's 24 h remain to re-derive them", mid, show(m["MaximumRecordAgeInSeconds"]), maxStreamRecordAge))
	}
	if m["BisectBatchOnFunctionError"] != true {
		problems = append(problems, fmt.Sprintf("%s: BisectBatchOnFunctionError %s, want true: a failing batch is split until the bad record is alone", mid, show(m["BisectBatchOnFunctionError"])))
	}
	if !slices.Contains(asList(m["FunctionResponseTypes"]), any("ReportBatchItemFailures")) {
		problems = append(problems, fmt.Sprintf("%s: FunctionResponseTypes %s, want ReportBatchItemFailures (the stream retries from the failed record, not the whole batch)", mid, show(m["FunctionResponseTypes"])))
	}
	onFailure := asMap(asMap(m["DestinationConfig"])["OnFailure"])
	if q, attr, ok := getAttOf(onFailure["Destination"]); !ok || attr != "Arn" || resourceType(t, q) != "AWS::SQS::Queue" {
		problems = append(problems, fmt.Sprintf("%s: DestinationConfig.OnFailure %s, want a queue of the stack: records given up would be dropped unseen", mid, show(onFailure)))
	} else {
		if !hasAlarm(t, w, "AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", q) {
			problems = append(problems, fmt.Sprintf("%s: no alarm on %s's visible messages: records given up would wait there unseen", mid, q))
		}
		if !grants(t, notifierFunction, "sqs:SendMessage", q) {
			problems = append(problems, fmt.Sprintf("%s: %s may not sqs:SendMessage on %s, its on-failure destination (Lambda sends as the function's role)", mid, notifierFunction, q))
		}
	}
	filters := asList(asMap(m["FilterCriteria"])["Filters"])
	want := dynamostore.StreamFilter(name)
	var got any
	if len(filters) == 1 {
		got = asMap(filters[0])["Pattern"]
	}
	if !sameJSON(got, want) {
		problems = append(problems, fmt.Sprintf("%s: FilterCriteria %s, want the one pattern dynamostore.StreamFilter(%q) gives, %s: a change it drops never reaches the notifier", mid, show(m["FilterCriteria"]), name, want))
	}
	return problems
}

// sameJSON reports whether got is a string holding the same JSON as want.
func sameJSON(got any, want string) bool {
	s, ok := got.(string)
	if !ok {
		return false
	}
	var a, b any
	return json.Unmarshal([]byte(s), &a) == nil && json.Unmarshal([]byte(want), &b) == nil && equalJSON(a, b)
}

// checkEventBus: the bus the functions name is an event bus of the stack,
// named after it.
func checkEventBus(t *tmpl, w wired) (string, []string) {
	bus, ok := refOf(w.env[awsruntime.EnvEventBusName])
	if !ok || resourceType(t, bus) != "AWS::Events::EventBus" {
		return "", []string{fmt.Sprintf("%s is %s, want a Ref to an AWS::Events::EventBus", awsruntime.EnvEventBusName, show(w.env[awsruntime.EnvEventBusName]))}
	}
	if s, _, ok := subOf(props(t, bus)["Name"]); !ok || !strings.Contains(s, "${AWS::StackName}") {
		return bus, []string{fmt.Sprintf("%s: Name %s, want !Sub with ${AWS::StackName}: one bus per stack", bus, show(props(t, bus)["Name"]))}
	}
	return bus, nil
}

// checkWebhookQueue: the webhook queue and its dead letters as the
// functions and sqsqueue need them, consumed by the webhooks function
// alone.
func checkWebhookQueue(t *tmpl, w wired) (queue, dead string, problems []string) {
	refTo := func(env string) string {
		id, ok := refOf(w.env[env])
		if !ok || resourceType(t, id) != "AWS::SQS::Queue" {
			problems = append(problems, fmt.Sprintf("%s is %s, want a Ref to an AWS::SQS::Queue", env, show(w.env[env])))
			return ""
		}
		return id
	}
	queue, dead = refTo(awsruntime.EnvWebhookQueueURL), refTo(awsruntime.EnvWebhookDeadLetterURL)
	if queue == "" || dead == "" {
		return queue, dead, problems
	}
	q, d := props(t, queue), props(t, dead)
	policy := asMap(q["RedrivePolicy"])
	if id, attr, ok := getAttOf(policy["deadLetterTargetArn"]); !ok || id != dead || attr != "Arn" {
		problems = append(problems, fmt.Sprintf("%s's RedrivePolicy targets %s, want %s (%s)", queue, show(policy["deadLetterTargetArn"]), dead, awsruntime.EnvWebhookDeadLetterURL))
	}
	if n, ok := number(policy["maxReceiveCount"]); !ok || n != awsruntime.WebhookMaxReceives {
		problems = append(problems, fmt.Sprintf("%s: maxReceiveCount %s, want awsruntime.WebhookMaxReceives (%d): a receive is an attempt, and the function gives a delivery up itself after 24 h, with the reason", queue, show(policy["maxReceiveCount"]), awsruntime.WebhookMaxReceives))
	}
	if d["RedrivePolicy"] != nil {
		problems = append(problems, fmt.Sprintf("%s: has a RedrivePolicy; listing dead letters counts as receiving them (sqsqueue.Check)", dead))
	}
	for _, x := range []struct {
		id    string
		props map[string]any
	}{{queue, q}, {dead, d}} {
		if n, _ := number(x.props["DelaySeconds"]); n != 0 {
			problems = append(problems, fmt.Sprintf("%s: DelaySeconds %v, want 0 (sqsqueue.Check)", x.id, n))
		}
		if n, ok := number(x.props["MaximumMessageSize"]); !ok || n < sqsqueue.MinQueueMessageSize {
			problems = append(problems, fmt.Sprintf("%s: MaximumMessageSize %s, want at least sqsqueue.MinQueueMessageSize (%d), set explicitly", x.id, show(x.props["MaximumMessageSize"]), sqsqueue.MinQueueMessageSize))
		}
		if n, ok := number(x.props["MessageRetentionPeriod"]); !ok || n < minWebhookRetention {
			problems = append(problems, fmt.Sprintf("%s: MessageRetentionPeriod %s, want at least %d s: a delivery is tried for 24 h", x.id, show(x.props["MessageRetentionPeriod"]), minWebhookRetention))
		}
	}
	if n, _ := number(q["ReceiveMessageWaitTimeSeconds"]); n != 0 {
		problems = append(problems, fmt.Sprintf("%s: ReceiveMessageWaitTimeSeconds %v, want 0 (sqsqueue.Check)", queue, n))
	}
	var mappings []string
	for _, id := range resourcesOf(t, "AWS::Lambda::EventSourceMapping") {
		if src, attr, ok := getAttOf(props(t, id)["EventSourceArn"]); ok && src == queue && attr == "Arn" {
			mappings = append(mappings, id)
		}
	}
	if len(mappings) != 1 {
		return queue, dead, append(problems, fmt.Sprintf("%d event source mappings read %s, want 1 (invoking %s)", len(mappings), queue, webhooksFunction))
	}
	m := props(t, mappings[0])
	if fn := mappingFunction(m); fn != webhooksFunction {
		problems = append(problems, fmt.Sprintf("%s: FunctionName %s, want %s", mappings[0], show(m["FunctionName"]), webhooksFunction))
	}
	if lo, hi, ok := numberRange(t, m["BatchSize"]); !ok || lo < 1 || hi > 10 {
		problems = append(problems, fmt.Sprintf("%s: BatchSize %s, want 1-10 (a batch's attempts run concurrently)", mappings[0], show(m["BatchSize"])))
	}
	if !slices.Contains(asList(m["FunctionResponseTypes"]), any("ReportBatchItemFailures")) {
		problems = append(problems, fmt.Sprintf("%s: FunctionResponseTypes %s, want ReportBatchItemFailures (a failed delivery is hidden until its next try, the others deleted)", mappings[0], show(m["FunctionResponseTypes"])))
	}
	if lo, hi, ok := numberRange(t, asMap(m["ScalingConfig"])["MaximumConcurrency"]); !ok || lo < 2 || hi > 1000 {
		problems = append(problems, fmt.Sprintf("%s: ScalingConfig.MaximumConcurrency %s, want 2-1000: slow receivers must not take the account's concurrency", mappings[0], show(m["ScalingConfig"])))
	}
	timeout, _ := number(effective(t, webhooksFunction)["Timeout"])
	if v, _ := number(q["VisibilityTimeout"]); timeout <= 0 || v < 6*timeout {
		problems = append(problems, fmt.Sprintf("%s: VisibilityTimeout %s, want at least 6 × %s's timeout %v s (AWS's guidance)", queue, show(q["VisibilityTimeout"]), webhooksFunction, timeout))
	}
	if !hasAlarm(t, w, "AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", dead) {
		problems = append(problems, fmt.Sprintf("no alarm on AWS/SQS ApproximateNumberOfMessagesVisible QueueName=%s: deliveries given up need a person", dead))
	}
	return queue, dead, problems
}

// checkEventsPrivilege: least privilege for the notifier and the
// webhooks function, and the grants their calls, and the operators'
// handling of dead deliveries, need.
func checkEventsPrivilege(t *tmpl, w wired, tables map[string]string, bus, queue, dead string) []string {
	stmts, _ := policyStatements(t)
	var problems []string
	ledgerTable, postsTable := tables[dynamostore.LedgerTable], tables[dynamostore.PostsTable]
	workspaceTable, credentialsTable := tables[dynamostore.WorkspaceTable], tables[dynamostore.CredentialsTable]
	var allTables []string
	for _, id := range tables {
		allTables = append(allTables, id)
	}
	slices.Sort(allTables)
	rules := []forbiddenGrant{
		{"the notifier writes nothing: the streams are its input, the queue and the bus its output",
			only(notifierFunction), dynamoWrites, allTables},
		{"the webhooks function writes only subscriptions (disabling one on a 410), in the workspace table",
			only(webhooksFunction), dynamoWrites, []string{ledgerTable, postsTable, credentialsTable}},
		{"the api function never makes the data key (writing it is the operators'): it unwraps the one they made",
			only(apiFunction), []string{"kms:GenerateDataKey", "kms:Encrypt"}, []string{w.key}},
		{"only the notifier puts events on the bus (consumers trust its source)",
			allBut(notifierFunction), []string{"events:PutEvents"}, []string{bus}},
		{"only the webhooks function takes deliveries from the webhook queue; the operators handle its dead letters",
			allBut(webhooksFunction), queueTakes, []string{queue}},
	}
	for _, s := range stmts {
		for _, r := range rules {
			if !r.applies(s.owner) {
				continue
			}
			actions := allowedActions(s, r.actions)
			if len(actions) == 0 {
				continue
			}
			for _, target := range r.targets {
				if target != "" && covers(s, target) {
					problems = append(problems, fmt.Sprintf("%s: %s may %s on %s: %s", s.path, s.owner, strings.Join(actions, ", "), target, r.why))
				}
			}
		}
		// Stream calls on streams only, and nothing else on a stream.
		if s.stmt["Effect"] != "Allow" {
			continue
		}
		onStreams := streamStatement(t, s)
		for _, a := range asList(s.stmt["Action"]) {
			action, _ := a.(string)
			stream := slices.Contains(streamActions, action)
			switch {
			case stream && !onStreams:
				problems = append(problems, fmt.Sprintf("%s: grants %s on %s, want a table's stream only (Fn::GetAtt Table.StreamArn or ${Table.Arn}/stream/*)", s.path, action, show(s.stmt["Resource"])))
			case !stream && onStreams:
				problems = append(problems, fmt.Sprintf("%s: grants %s on a stream; a stream's readers need only %s", s.path, action, strings.Join(streamActions, ", ")))
			}
		}
	}
	needs := []need{
		{owner: notifierFunction, action: "dynamodb:Query", target: workspaceTable, why: "ListSubscriptionsWithoutSecrets reads the subscriptions"},
		{owner: notifierFunction, action: "sqs:SendMessage", target: queue, why: "the notifier queues the webhook deliveries (SendMessageBatch)"},
		{owner: notifierFunction, action: "events:PutEvents", target: bus, why: "the notifier puts the events on the bus"},
		{owner: webhooksFunction, action: "sqs:ReceiveMessage", target: queue, why: "the event source mapping receives the deliveries"},
		{owner: webhooksFunction, action: "sqs:DeleteMessage", target: queue, why: "the event source mapping deletes the ones delivered"},
		{owner: webhooksFunction, action: "sqs:ChangeMessageVisibility", target: queue, why: "a failed delivery is hidden until its next try"},
		{owner: webhooksFunction, action: "sqs:GetQueueAttributes", target: queue, why: "the event source mapping reads the queue"},
		{owner: webhooksFunction, action: "sqs:SendMessage", target: dead, why: "a delivery given up is dead-lettered with its reason"},
		{owner: webhooksFunction, action: "dynamodb:GetItem", target: workspaceTable, why: "GetSubscription, and the wrapped data key"},
		{owner: webhooksFunction, action: "dynamodb:UpdateItem", target: workspaceTable, why: "DisableSubscription on a 410"},
		{owner: webhooksFunction, action: "kms:Decrypt", target: w.key, why: "the subscriptions' secrets are sealed with the data key the key wraps"},
		{owner: apiFunction, action: "kms:Decrypt", target: w.key, why: "POST /v1/webhooks seals the secret with the data key the key wraps"},
		{owner: apiFunction, action: "sqs:ReceiveMessage", target: dead, why: "GET /v1/webhooks/{id}/deliveries scans the dead deliveries"},
		{owner: apiFunction, action: "sqs:ChangeMessageVisibility", target: dead, why: "a scan releases the dead deliveries it read"},
		{owner: apiFunction, action: "sqs:DeleteMessage", target: dead, why: "a redrive deletes the dead delivery"},
		{owner: apiFunction, action: "sqs:SendMessage", target: queue, why: "a redrive sends the delivery back"},
		{owner: apiFunction, action: "sqs:GetQueueAttributes", target: queue, why: "a dead-letter scan reads the queue's RedrivePolicy"},
		{owner: operatorPolicy, action: "sqs:ReceiveMessage", target: dead, why: "`dlq list --queue webhooks` scans the dead deliveries"},
		{owner: operatorPolicy, action: "sqs:ChangeMessageVisibility", target: dead, why: "a scan releases the dead deliveries it read"},
		{owner: operatorPolicy, action: "sqs:DeleteMessage", target: dead, why: "`dlq redrive --queue webhooks` and `drop` delete the dead delivery"},
		{owner: operatorPolicy, action: "sqs:SendMessage", target: queue, why: "`dlq redrive --queue webhooks` sends the delivery back"},
		{owner: operatorPolicy, action: "sqs:GetQueueAttributes", target: queue, why: "a dead-letter scan reads the queue's RedrivePolicy"},
	}
	for _, name := range dynamostore.EventTables {
		id := tables[name]
		for _, a := range streamActions {
			needs = append(needs, need{owner: notifierFunction, action: a, target: id, why: "the stream event source mapping reads " + id + "'s stream as the function's role"})
		}
	}
	for _, n := range needs {
		if n.target == "" {
			continue // reported above
		}
		if !grants(t, n.owner, n.action, n.target) {
			problems = append(problems, fmt.Sprintf("%s may not %s on %s: %s", n.owner, n.action, n.target, n.why))
		}
	}
	return problems
}

// Every events-and-webhooks check catches what it is there for (as
// TestBrokenTemplatesAreCaught, on the stack's event and webhook parts).
func TestBrokenEventTemplatesAreCaught(t *testing.T) {
	c, good := load(t)
	notifierStatement := func(d map[string]any, sid string) map[string]any {
		for _, s := range statements(d, notifierFunction) {
			if asMap(s)["Sid"] == sid {
				return asMap(s)
			}
		}
		panic("NotifierFunction has no statement " + sid)
	}
	tests := []struct {
		name   string
		mutate func(doc map[string]any)
		want   string
	}{
		{"a table without its stream", func(d map[string]any) {
			delete(properties(d, "PostsTable"), "StreamSpecification")
		}, "events and webhooks: PostsTable: StreamSpecification.StreamViewType null, want NEW_AND_OLD_IMAGES"},
		{"a stream of keys only", func(d map[string]any) {
			properties(d, "LedgerTable")["StreamSpecification"] = map[string]any{"StreamViewType": "KEYS_ONLY"}
		}, `events and webhooks: LedgerTable: StreamSpecification.StreamViewType "KEYS_ONLY"`},
		{"a stream nobody reads", func(d map[string]any) {
			delete(asMap(d["Resources"]), "WorkspaceStreamMapping")
		}, "events and webhooks: 0 event source mappings read WorkspaceTable's stream, want 1"},
		{"retried until the record expires", func(d map[string]any) {
			properties(d, "PostsStreamMapping")["MaximumRetryAttempts"] = -1
		}, "events and webhooks: PostsStreamMapping: MaximumRetryAttempts -1, want 0-10000"},
		{"no record age", func(d map[string]any) {
			delete(properties(d, "LedgerStreamMapping"), "MaximumRecordAgeInSeconds")
		}, "events and webhooks: LedgerStreamMapping: MaximumRecordAgeInSeconds null, want 60-43200"},
		{"records given up too late to re-derive", func(d map[string]any) {
			properties(d, "LedgerStreamMapping")["MaximumRecordAgeInSeconds"] = 86400
		}, "events and webhooks: LedgerStreamMapping: MaximumRecordAgeInSeconds 86400"},
		{"no bisecting", func(d map[string]any) {
			delete(properties(d, "PostsStreamMapping"), "BisectBatchOnFunctionError")
		}, "events and webhooks: PostsStreamMapping: BisectBatchOnFunctionError null, want true"},
		{"whole-batch stream failures", func(d map[string]any) {
			delete(properties(d, "WorkspaceStreamMapping"), "FunctionResponseTypes")
		}, "events and webhooks: WorkspaceStreamMapping: FunctionResponseTypes null, want ReportBatchItemFailures"},
		{"records given up unseen", func(d map[string]any) {
			delete(properties(d, "PostsStreamMapping"), "DestinationConfig")
		}, "events and webhooks: PostsStreamMapping: DestinationConfig.OnFailure null, want a queue of the stack"},
		{"a failure queue nobody watches", func(d map[string]any) {
			delete(asMap(d["Resources"]), "NotifierFailuresAlarm")
		}, "events and webhooks: PostsStreamMapping: no alarm on NotifierFailureQueue's visible messages"},
		{"a failure queue the notifier cannot send to", func(d map[string]any) {
			notifierStatement(d, "OnFailure")["Resource"] = getAtt("WebhookQueue", "Arn")
		}, "events and webhooks: LedgerStreamMapping: NotifierFunction may not sqs:SendMessage on NotifierFailureQueue"},
		{"a filter that drops an event", func(d map[string]any) {
			properties(d, "PostsStreamMapping")["FilterCriteria"] = map[string]any{"Filters": []any{map[string]any{"Pattern": `{"dynamodb":{"NewImage":{"status":{"S":["published"]}}}}`}}}
		}, `events and webhooks: PostsStreamMapping: FilterCriteria {"Filters":[{"Pattern":"{\"dynamodb\":{\"NewImage\":{\"status\":{\"S\":[\"published\"]}}}}"}]}, want the one pattern dynamostore.StreamFilter("posts") gives`},
		{"from the latest record", func(d map[string]any) {
			properties(d, "LedgerStreamMapping")["StartingPosition"] = "LATEST"
		}, `events and webhooks: LedgerStreamMapping: StartingPosition "LATEST", want TRIM_HORIZON`},
		{"a stream read by another function", func(d map[string]any) {
			properties(d, "LedgerStreamMapping")["FunctionName"] = ref("SweeperFunction")
		}, `events and webhooks: LedgerStreamMapping: FunctionName {"Ref":"SweeperFunction"}, want NotifierFunction`},
		{"no iterator age alarm", func(d map[string]any) {
			delete(asMap(d["Resources"]), "NotifierIteratorAgeAlarm")
		}, "events and webhooks: no alarm on AWS/Lambda IteratorAge FunctionName=NotifierFunction"},
		{"no throttles alarm", func(d map[string]any) {
			delete(asMap(d["Resources"]), "WebhooksThrottlesAlarm")
		}, "events and webhooks: no alarm on AWS/Lambda Throttles FunctionName=WebhooksFunction"},
		{"no alarm on dead webhooks", func(d map[string]any) {
			delete(asMap(d["Resources"]), "WebhookDeadLettersAlarm")
		}, "events and webhooks: no alarm on AWS/SQS ApproximateNumberOfMessagesVisible QueueName=WebhookDeadLetterQueue"},
		{"no errors alarm on the notifier", func(d map[string]any) {
			delete(asMap(d["Resources"]), "NotifierErrorsAlarm")
		}, "alarms and dashboard: no alarm on AWS/Lambda Errors FunctionName=NotifierFunction"},
		{"a bus shared between stacks", func(d map[string]any) {
			properties(d, "EventBus")["Name"] = "oncepost"
		}, `events and webhooks: EventBus: Name "oncepost", want !Sub with ${AWS::StackName}`},
		{"SQS dead-letters webhooks before their window", func(d map[string]any) {
			asMap(properties(d, "WebhookQueue")["RedrivePolicy"])["maxReceiveCount"] = 10
		}, "events and webhooks: WebhookQueue: maxReceiveCount 10, want awsruntime.WebhookMaxReceives (100)"},
		{"webhooks kept less than their window", func(d map[string]any) {
			properties(d, "WebhookQueue")["MessageRetentionPeriod"] = 86400
		}, "events and webhooks: WebhookQueue: MessageRetentionPeriod 86400, want at least 172800 s"},
		{"whole-batch webhook failures", func(d map[string]any) {
			delete(properties(d, "WebhookQueueMapping"), "FunctionResponseTypes")
		}, "events and webhooks: WebhookQueueMapping: FunctionResponseTypes null, want ReportBatchItemFailures"},
		{"webhook visibility under 6 × the timeout", func(d map[string]any) {
			properties(d, "WebhookQueue")["VisibilityTimeout"] = 60
		}, "events and webhooks: WebhookQueue: VisibilityTimeout 60, want at least 6 × WebhooksFunction's timeout 60 s"},
		{"another function takes deliveries", func(d map[string]any) {
			addStatement(d, "SweeperFunction", map[string]any{"Effect": "Allow", "Action": "sqs:ReceiveMessage", "Resource": getAtt("WebhookQueue", "Arn")})
		}, "events and webhooks: SweeperFunction.Policies[0].Statement[10]: SweeperFunction may sqs:ReceiveMessage on WebhookQueue"},
		{"the notifier writes", func(d map[string]any) {
			notifierStatement(d, "ListSubscriptions")["Action"] = []any{"dynamodb:Query", "dynamodb:PutItem"}
		}, "events and webhooks: NotifierFunction.Policies[0].Statement[2]: NotifierFunction may dynamodb:PutItem on WorkspaceTable: the notifier writes nothing"},
		{"the notifier decrypts", func(d map[string]any) {
			addStatement(d, notifierFunction, map[string]any{"Effect": "Allow", "Action": "kms:Decrypt", "Resource": getAtt("CredentialsKey", "Arn")})
		}, "permissions: NotifierFunction.Policies[0].Statement[6]: NotifierFunction is granted the credentials key"},
		{"the webhooks function reads credentials", func(d map[string]any) {
			addStatement(d, webhooksFunction, map[string]any{"Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": getAtt("CredentialsTable", "Arn")})
		}, "permissions: WebhooksFunction.Policies[0].Statement[4]: WebhooksFunction is granted the credentials table"},
		{"the webhooks function writes posts", func(d map[string]any) {
			addStatement(d, webhooksFunction, map[string]any{"Effect": "Allow", "Action": "dynamodb:UpdateItem", "Resource": getAtt("PostsTable", "Arn")})
		}, "events and webhooks: WebhooksFunction.Policies[0].Statement[4]: WebhooksFunction may dynamodb:UpdateItem on PostsTable"},
		{"another function puts events", func(d map[string]any) {
			addStatement(d, "PublisherFunction", map[string]any{"Effect": "Allow", "Action": "events:PutEvents", "Resource": getAtt("EventBus", "Arn")})
		}, "events and webhooks: PublisherFunction.Policies[0].Statement[7]: PublisherFunction may events:PutEvents on EventBus"},
		{"events on every bus", func(d map[string]any) {
			notifierStatement(d, "PutEvents")["Resource"] = "*"
		}, `permissions: NotifierFunction.Policies[0].Statement[4]: resource "*" is not one of the stack's own`},
		{"stream reads on the table", func(d map[string]any) {
			notifierStatement(d, "ReadStreams")["Resource"] = getAtt("PostsTable", "Arn")
		}, `events and webhooks: NotifierFunction.Policies[0].Statement[0]: grants dynamodb:DescribeStream on {"Fn::GetAtt":["PostsTable","Arn"]}, want a table's stream only`},
		{"a store call on a stream", func(d map[string]any) {
			s := notifierStatement(d, "ReadStreams")
			s["Action"] = append(asList(s["Action"]), "dynamodb:Query")
		}, "events and webhooks: NotifierFunction.Policies[0].Statement[0]: grants dynamodb:Query on a stream"},
		{"the notifier cannot read a stream", func(d map[string]any) {
			notifierStatement(d, "ReadStreams")["Resource"] = []any{getAtt("LedgerTable", "StreamArn"), getAtt("PostsTable", "StreamArn")}
		}, "events and webhooks: NotifierFunction may not dynamodb:GetRecords on WorkspaceTable"},
		{"the operators cannot redrive dead webhooks", func(d map[string]any) {
			operatorStatement(d, "SendWebhooks")["Action"] = "sqs:GetQueueAttributes"
		}, "events and webhooks: OperatorPolicy may not sqs:SendMessage on WebhookQueue"},
		{"an output the CLI reads is missing", func(d map[string]any) {
			delete(asMap(d["Outputs"]), "WebhookDeadLetterQueueUrl")
		}, "events and webhooks: no output WebhookDeadLetterQueueUrl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkBroken(t, c, good, tt.mutate, tt.want) })
	}
}

// checkBroken breaks a copy of the good template with mutate and wants a
// problem containing want. When want names its check ("events and
// webhooks: …"), only that check runs, and goformation's typed reading
// (some 50 ms a template, most of a case's time) is made only for the
// checks that read it; otherwise every check runs.
func checkBroken(t *testing.T, c *contract, good *tmpl, mutate func(map[string]any), want string) {
	t.Helper()
	doc := cloneJSON(good.raw).(map[string]any)
	mutate(doc)
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	run := checks
	for _, ch := range checks {
		if strings.HasPrefix(want, ch.name+": ") {
			run = []check{ch}
		}
	}
	var broken *tmpl
	if len(run) == 1 && run[0].name != "tables" {
		broken, err = parseRaw(b, good.dir)
	} else {
		broken, err = parseTemplate(b, good.dir)
	}
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	for _, ch := range run {
		for _, p := range ch.run(c, broken) {
			problems = append(problems, ch.name+": "+p)
		}
	}
	for _, p := range problems {
		if strings.Contains(p, want) {
			return
		}
	}
	t.Errorf("no problem reported contains %q; reported:\n%s", want, strings.Join(problems, "\n"))
}

// parseRaw reads a template as parseTemplate does, without goformation's
// typed reading (typed is nil, typedErr says so).
func parseRaw(b []byte, dir string) (*tmpl, error) {
	j, err := intrinsics.ProcessYAML(b, &intrinsics.ProcessorOptions{NoProcess: true})
	if err != nil {
		return nil, fmt.Errorf("read the template: %w", err)
	}
	var raw map[string]any
	if err := json.Unmarshal(j, &raw); err != nil {
		return nil, fmt.Errorf("read the template: %w", err)
	}
	return &tmpl{raw: raw, dir: dir, typedErr: errors.New("not read typed (parseRaw)")}, nil
}
