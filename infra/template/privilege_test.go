package template

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"

	"oncepost/shared/dynamostore"
	"oncepost/shared/ebschedule"
)

// The least-privilege rules of the stack's policies, each stated once
// and applied to every policy of the template, whoever holds it, so that
// a grant added anywhere later is held to it too: who may never do what,
// whatever else changes (forbiddenGrant), the bucket's TLS rule, the
// scope of schedule writes, and the grants the code's calls need, so that
// a tightening cannot take one away (need).

// DynamoDB actions that change or remove items, and those that remove
// them (BatchWriteItem deletes as well as puts; PartiQL is IAM's own).
var (
	dynamoWrites  = []string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem", "dynamodb:PartiQLInsert", "dynamodb:PartiQLUpdate", "dynamodb:PartiQLDelete"}
	dynamoDeletes = []string{"dynamodb:DeleteItem", "dynamodb:BatchWriteItem", "dynamodb:PartiQLDelete"}
	// queueTakes are what a consumer does to a queue's messages: receive
	// them, hide them, delete them (the batch calls are authorized as
	// these), or all at once.
	queueTakes = []string{"sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:PurgeQueue"}
)

// forbiddenGrant is a rule: no owner it applies to may be allowed any of
// actions on a resource referring to any of targets (logical ids).
type forbiddenGrant struct {
	why     string
	applies func(owner string) bool
	actions []string
	targets []string
}

func anyone(string) bool { return true }

func only(id string) func(string) bool { return func(o string) bool { return o == id } }

func allBut(id string) func(string) bool { return func(o string) bool { return o != id } }

// need is a grant the code's calls depend on: owner may action on a
// resource referring to target (a logical id), or on the ARN written as
// the Fn::Sub string arn.
type need struct {
	owner, action, target, arn, why string
}

// checkLeastPrivilege: the rules above.
func checkLeastPrivilege(c *contract, t *tmpl) []string {
	stmts, _ := policyStatements(t) // checkPermissions reports what it cannot read
	w, _ := wiring(t)
	var problems []string
	tables := tableIDs(t, w.prefix)
	table := func(name string) string {
		id := tables[name]
		if id == "" {
			problems = append(problems, fmt.Sprintf("no table %s%s to hold to its rules", w.prefix, name))
		}
		return id
	}
	ledgerTable, postsTable := table(dynamostore.LedgerTable), table(dynamostore.PostsTable)
	workspaceTable, credentialsTable := table(dynamostore.WorkspaceTable), table(dynamostore.CredentialsTable)
	consumer := queueConsumer(t, w.queue)
	rules := []forbiddenGrant{
		{"the ledger is the only record of what was sent: no one deletes its rows (its TTL drops finished ones)",
			anyone, dynamoDeletes, []string{ledgerTable}},
		{"only the operators remove a credential (`account remove`); no function deletes one",
			allBut(operatorPolicy), dynamoDeletes, []string{credentialsTable}},
		{"the trigger reads posts and enqueues their jobs (the queued job is the record): it writes no post and no ledger row",
			only("TriggerFunction"), dynamoWrites, []string{postsTable, ledgerTable}},
		{fmt.Sprintf("only the publish queue's consumer (%s, the function of its event source mapping) takes jobs from it; the operators handle dead letters on the dead-letter queue", cmp.Or(consumer, "none")),
			allBut(consumer), queueTakes, []string{w.queue}},
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
	}
	problems = append(problems, checkScheduleWrites(t, stmts)...)
	problems = append(problems, checkBucketsDenyPlainHTTP(t)...)
	problems = append(problems, checkAPIWorkspaceWrites(t, stmts, workspaceTable)...)

	slots := slotSchedulesARN(t)
	needs := []need{
		{owner: "TriggerFunction", action: "dynamodb:Query", target: postsTable, why: "Fire's GetPost reads a post's partition, FireSlot's DueAt the status index"},
		{owner: "TriggerFunction", action: "dynamodb:BatchGetItem", target: postsTable, why: "FireSlot's DueAt reads the listed targets back"},
		{owner: "TriggerFunction", action: "sqs:SendMessage", target: w.queue, why: "FireSlot sends the slot's jobs (SendMessageBatch)"},
		{owner: operatorPolicy, action: "sqs:ReceiveMessage", target: w.deadLetter, why: "`dlq list`, `redrive`, `drop` and `status` scan the dead letters"},
		{owner: operatorPolicy, action: "sqs:ChangeMessageVisibility", target: w.deadLetter, why: "a scan releases the dead letters it read"},
		{owner: operatorPolicy, action: "sqs:DeleteMessage", target: w.deadLetter, why: "`dlq redrive` and `drop` delete the dead letter"},
		{owner: operatorPolicy, action: "sqs:SendMessage", target: w.queue, why: "`dlq redrive` sends the job back, `post add` queues a slot too close to schedule"},
		{owner: operatorPolicy, action: "sqs:GetQueueAttributes", target: w.queue, why: "a dead-letter scan reads the queue's RedrivePolicy"},
		{owner: operatorPolicy, action: "dynamodb:DeleteItem", target: workspaceTable, why: "`account remove` and `blocklist remove`"},
		{owner: operatorPolicy, action: "dynamodb:DeleteItem", target: credentialsTable, why: "`account remove` drops the account's sealed token"},
		{owner: operatorPolicy, action: "dynamodb:DeleteItem", target: postsTable, why: "`post add` drops what a taken-over creation of the id left"},
		{owner: operatorPolicy, action: "scheduler:CreateSchedule", arn: slots, why: "`post add` and `post reschedule` create slot schedules (ebschedule.PutSlot)"},
		{owner: operatorPolicy, action: "scheduler:UpdateSchedule", arn: slots, why: "ebschedule.PutSlot updates a slot schedule that exists"},
		{owner: "ApiFunction", action: "dynamodb:PutItem", target: workspaceTable, why: "POST /v1/posts writes the Idempotency-Key's record (dynamostore.CreatePostWithKey)"},
		{owner: "ApiFunction", action: "dynamodb:DeleteItem", target: workspaceTable, why: "a create whose post id is refused drops its key's record"},
		{owner: "ApiFunction", action: "dynamodb:PutItem", target: postsTable, why: "POST /v1/posts writes the post and its targets"},
		{owner: "ApiFunction", action: "dynamodb:DeleteItem", target: postsTable, why: "a retry taking a dead request's key over drops what its creation left"},
		{owner: "ApiFunction", action: "dynamodb:Query", target: postsTable, why: "GET /v1/posts/{id} reads the post's partition, GET /v1/posts the status index"},
		{owner: "ApiFunction", action: "sqs:SendMessage", target: w.queue, why: "a slot too close to schedule is queued at once; a redriven dead letter goes back"},
		{owner: "ApiFunction", action: "sqs:DeleteMessage", target: w.deadLetter, why: "redrive and drop delete the dead letter"},
		{owner: "ApiFunction", action: "states:SendTaskSuccess", target: w.stateMachine, why: "a decision on a held entry goes to the workflow waiting on it"},
		{owner: "ApiFunction", action: "s3:PutObject", target: "MediaBucket", why: "POST /v1/media stores the attachment"},
		{owner: "ApiFunction", action: "scheduler:CreateSchedule", arn: slots, why: "POST /v1/posts and reschedule create slot schedules (ebschedule.PutSlot)"},
		{owner: "ApiFunction", action: "scheduler:UpdateSchedule", arn: slots, why: "ebschedule.PutSlot updates a slot schedule that exists"},
		{owner: "ApiFunction", action: "iam:PassRole", target: "SchedulerRole", why: "a slot schedule runs as SchedulerRole"},
	}
	for _, n := range needs {
		switch {
		case n.target == "" && n.arn == "":
			continue // reported above, or by the wiring
		case n.arn != "" && !grantsARN(t, n.owner, n.action, n.arn):
			problems = append(problems, fmt.Sprintf("%s may not %s on %s: %s", n.owner, n.action, n.arn, n.why))
		case n.target != "" && !grants(t, n.owner, n.action, n.target):
			problems = append(problems, fmt.Sprintf("%s may not %s on %s: %s", n.owner, n.action, n.target, n.why))
		}
	}
	return problems
}

// tableIDs maps the store's table names (dynamostore.LedgerTable, …) to
// the logical ids of the tables named prefix+name.
func tableIDs(t *tmpl, prefix string) map[string]string {
	ids := map[string]string{}
	if prefix == "" {
		return ids
	}
	for _, id := range resourcesOf(t, "AWS::DynamoDB::Table") {
		if s, _, ok := subOf(props(t, id)["TableName"]); ok {
			if name, ok := strings.CutPrefix(s, prefix); ok {
				ids[name] = id
			}
		}
	}
	return ids
}

// queueConsumer is the function of the event source mapping reading the
// queue ("" if there is none).
func queueConsumer(t *tmpl, queue string) string {
	for _, id := range resourcesOf(t, "AWS::Lambda::EventSourceMapping") {
		m := props(t, id)
		if src, attr, ok := getAttOf(m["EventSourceArn"]); !ok || src != queue || attr != "Arn" {
			continue
		}
		if fn, ok := refOf(m["FunctionName"]); ok {
			return fn
		}
		if fn, _, ok := getAttOf(m["FunctionName"]); ok {
			return fn
		}
	}
	return ""
}

// allowedActions lists those of actions an Allow statement grants; IAM
// compares actions case-insensitively and expands * and ?.
func allowedActions(s statement, actions []string) []string {
	if s.stmt["Effect"] != "Allow" {
		return nil
	}
	var out []string
	for _, want := range actions {
		for _, a := range asList(s.stmt["Action"]) {
			pattern, _ := a.(string)
			if ok, _ := path.Match(strings.ToLower(pattern), strings.ToLower(want)); ok {
				out = append(out, want)
				break
			}
		}
	}
	return out
}

// covers reports whether one of the statement's resources is target (or
// refers to it: an index, an object) or is every resource.
func covers(s statement, target string) bool {
	for _, r := range asList(s.stmt["Resource"]) {
		if r == "*" || slices.Contains(references(r), target) {
			return true
		}
	}
	return false
}

// schedulePrefix starts the ARN of a schedule of a group, written with
// Fn::Sub, the group's name following.
const schedulePrefix = "arn:${AWS::Partition}:scheduler:${AWS::Region}:${AWS::AccountId}:schedule/"

// slotSchedulesARN is the ARN, written with Fn::Sub, of the slot
// schedules the CLI writes into the stack's schedule group (output
// ScheduleGroupName): every name starting with ebschedule.SlotPrefix.
func slotSchedulesARN(t *tmpl) string {
	group, ok := refOf(asMap(asMap(t.raw["Outputs"])["ScheduleGroupName"])["Value"])
	if !ok {
		return "" // checkOutputs reports it
	}
	return schedulePrefix + "${" + group + "}/" + ebschedule.SlotPrefix + "*"
}

// checkScheduleWrites: a grant to create, change or delete schedules
// names only the slot schedules the CLI writes (ebschedule.SlotPrefix, in
// a schedule group of the stack), never a whole group: the stack's own
// schedules (the sweeper's) live in the group too; and none of those is
// among the names granted.
func checkScheduleWrites(t *tmpl, stmts []statement) []string {
	var problems []string
	// The stack's own schedules' names: their Name, or the one
	// CloudFormation makes (<stack>-<logical id>-<suffix>).
	own := map[string]string{}
	for _, id := range resourcesOf(t, "AWS::Scheduler::Schedule") {
		name := "stack-" + id + "-ABCDEFGHIJKL"
		switch n := props(t, id)["Name"].(type) {
		case string:
			name = n
		case map[string]any:
			if s, _, ok := subOf(n); ok {
				name = strings.ReplaceAll(s, "${AWS::StackName}", "stack")
			}
		}
		own[id] = name
	}
	for _, s := range stmts {
		if s.stmt["Effect"] != "Allow" {
			continue
		}
		var writes []string
		for _, a := range asList(s.stmt["Action"]) {
			action, _ := a.(string)
			service, op, _ := strings.Cut(strings.ToLower(action), ":")
			if (service == "scheduler" || service == "*") && !strings.HasPrefix(op, "get") && !strings.HasPrefix(op, "list") {
				writes = append(writes, action)
			}
		}
		if len(writes) == 0 {
			continue
		}
		for _, r := range asList(s.stmt["Resource"]) {
			sub, _, _ := subOf(r)
			rest, inStack := strings.CutPrefix(sub, schedulePrefix)
			group, pattern, _ := strings.Cut(rest, "/")
			g, isVar := strings.CutPrefix(strings.TrimSuffix(group, "}"), "${")
			if !inStack || !isVar || resourceType(t, g) != "AWS::Scheduler::ScheduleGroup" || !strings.HasPrefix(pattern, ebschedule.SlotPrefix) {
				problems = append(problems, fmt.Sprintf("%s: %s may %s on %s; want only the slot schedules the CLI writes (names starting %q, in a schedule group of the stack): the group holds the stack's own schedules too",
					s.path, s.owner, strings.Join(writes, ", "), show(r), ebschedule.SlotPrefix))
				continue
			}
			for _, id := range sortedKeys(own) {
				if ok, _ := path.Match(pattern, own[id]); ok {
					problems = append(problems, fmt.Sprintf("%s: %s may %s on %s, which names the stack's own schedule %s (%s)", s.path, s.owner, strings.Join(writes, ", "), show(r), id, own[id]))
				}
			}
		}
	}
	return problems
}

// checkBucketsDenyPlainHTTP: every bucket has a bucket policy denying
// every S3 action to every principal, on the bucket and on its objects,
// for a request that did not come over TLS (aws:SecureTransport false).
func checkBucketsDenyPlainHTTP(t *tmpl) []string {
	var problems []string
	for _, bucket := range resourcesOf(t, "AWS::S3::Bucket") {
		denied := false
		for _, p := range resourcesOf(t, "AWS::S3::BucketPolicy") {
			if ref, ok := refOf(props(t, p)["Bucket"]); !ok || ref != bucket {
				continue
			}
			for _, s := range asList(asMap(props(t, p)["PolicyDocument"])["Statement"]) {
				denied = denied || deniesPlainHTTP(asMap(s), bucket)
			}
		}
		if !denied {
			problems = append(problems, fmt.Sprintf("%s: no bucket policy denies s3:* to every principal on the bucket and its objects when aws:SecureTransport is false", bucket))
		}
	}
	return problems
}

// deniesPlainHTTP reports whether a bucket policy statement is the TLS
// rule for bucket.
func deniesPlainHTTP(s map[string]any, bucket string) bool {
	if s["Effect"] != "Deny" || (s["Principal"] != "*" && asMap(s["Principal"])["AWS"] != "*") {
		return false
	}
	if !slices.Contains(asList(s["Action"]), any("s3:*")) && !slices.Contains(asList(s["Action"]), any("*")) {
		return false
	}
	var onBucket, onObjects bool
	for _, r := range asList(s["Resource"]) {
		if id, attr, ok := getAttOf(r); ok && id == bucket && attr == "Arn" {
			onBucket = true
		}
		if sub, _, ok := subOf(r); ok && sub == "${"+bucket+".Arn}/*" {
			onObjects = true
		}
	}
	secure := asMap(asMap(s["Condition"])["Bool"])["aws:SecureTransport"]
	return onBucket && onObjects && (secure == "false" || secure == false)
}

// idempotencyPartitions is the dynamodb:LeadingKeys pattern of the
// idempotency records' partitions.
var idempotencyPartitions = dynamostore.IdempotencyPartitionPrefix + "*"

// apiWorkspacePartitions are the dynamodb:LeadingKeys patterns a
// statement of a function behind the HTTP API may write the workspace
// table under, one each: the idempotency records' partitions, the
// webhook subscriptions' partition and the recurring rules'.
var apiWorkspacePartitions = []string{idempotencyPartitions, dynamostore.WebhookPartition, dynamostore.RulePartition, dynamostore.QueueSlotPartitions}

// apiWorkspaceWrites are the writes the api function needs in each of
// them: records and subscriptions are put and dropped, rules only put
// (a stopped rule stays).
var apiWorkspaceWrites = map[string][]string{
	idempotencyPartitions:        {"dynamodb:PutItem", "dynamodb:DeleteItem"},
	dynamostore.WebhookPartition: {"dynamodb:PutItem", "dynamodb:DeleteItem"},
	dynamostore.RulePartition:    {"dynamodb:PutItem"},
	// Queue claims are taken and released (POST /v1/posts with queue,
	// reorder, shuffle).
	dynamostore.QueueSlotPartitions: {"dynamodb:PutItem", "dynamodb:DeleteItem"},
}

// checkAPIWorkspaceWrites: a function behind an HTTP API (an HttpApi
// event) writes the workspace table only in the idempotency records'
// partitions and the webhook subscriptions' (each statement a condition
// ForAllValues:StringLike on dynamodb:LeadingKeys naming one of them
// alone): a caller of the API can never change an account, the blocklist
// or the data key through it. The api function may put and delete in
// the first two (POST /v1/posts' records; POST and DELETE /v1/webhooks)
// and put in the third (POST and PATCH /v1/recurring).
func checkAPIWorkspaceWrites(t *tmpl, stmts []statement, workspace string) []string {
	if workspace == "" {
		return nil
	}
	behindAPI := map[string]bool{}
	for _, fn := range resourcesOf(t, "AWS::Serverless::Function") {
		for _, ev := range asMap(props(t, fn)["Events"]) {
			if asMap(ev)["Type"] == "HttpApi" {
				behindAPI[fn] = true
			}
		}
	}
	var problems []string
	granted := map[string][]string{} // "ApiFunction " + partition → writes
	for _, s := range stmts {
		writes := allowedActions(s, dynamoWrites)
		if !behindAPI[s.owner] || len(writes) == 0 || !covers(s, workspace) {
			continue
		}
		keys := asList(asMap(asMap(s.stmt["Condition"])["ForAllValues:StringLike"])["dynamodb:LeadingKeys"])
		var key string
		if len(keys) == 1 {
			key, _ = keys[0].(string)
		}
		if len(keys) != 1 || !slices.Contains(apiWorkspacePartitions, key) {
			problems = append(problems, fmt.Sprintf("%s: %s may %s on %s with condition %s; want ForAllValues:StringLike dynamodb:LeadingKeys one of %q only: the API writes idempotency records, webhook subscriptions and recurring rules, never an account, the blocklist or the data key",
				s.path, s.owner, strings.Join(writes, ", "), workspace, show(s.stmt["Condition"]), apiWorkspacePartitions))
			continue
		}
		granted[s.owner+" "+key] = append(granted[s.owner+" "+key], writes...)
	}
	for _, partition := range apiWorkspacePartitions {
		for _, action := range apiWorkspaceWrites[partition] {
			if !slices.Contains(granted["ApiFunction "+partition], action) {
				problems = append(problems, fmt.Sprintf("ApiFunction may not %s on %s under dynamodb:LeadingKeys [%q]: it writes and drops its records there", action, workspace, partition))
			}
		}
	}
	return problems
}
