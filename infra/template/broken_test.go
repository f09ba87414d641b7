package template

import (
	"strings"
	"testing"
)

// resource is the resource id of doc (Type, Properties, …).
func resource(doc map[string]any, id string) map[string]any {
	return asMap(asMap(doc["Resources"])[id])
}

// properties is the Properties of the resource id of doc.
func properties(doc map[string]any, id string) map[string]any {
	return asMap(resource(doc, id)["Properties"])
}

// globalEnv is Globals.Function.Environment.Variables of doc.
func globalEnv(doc map[string]any) map[string]any {
	return asMap(asMap(asMap(asMap(doc["Globals"])["Function"])["Environment"])["Variables"])
}

// statements is the first policy document's statements of a function.
func statements(doc map[string]any, fn string) []any {
	return asList(asMap(asList(properties(doc, fn)["Policies"])[0])["Statement"])
}

// addStatement appends a statement to a function's first policy.
func addStatement(doc map[string]any, fn string, stmt map[string]any) {
	p := asMap(asList(properties(doc, fn)["Policies"])[0])
	p["Statement"] = append(asList(p["Statement"]), stmt)
}

// alarmOn finds the alarm watching metric.
func alarmOn(doc map[string]any, metric string) map[string]any {
	for _, r := range asMap(doc["Resources"]) {
		if p := asMap(asMap(r)["Properties"]); asMap(r)["Type"] == "AWS::CloudWatch::Alarm" && p["MetricName"] == metric {
			return p
		}
	}
	return nil
}

// operatorStatement is the operators' policy statement with the Sid.
func operatorStatement(doc map[string]any, sid string) map[string]any {
	for _, s := range asList(asMap(properties(doc, "OperatorPolicy")["PolicyDocument"])["Statement"]) {
		if asMap(s)["Sid"] == sid {
			return asMap(s)
		}
	}
	panic("OperatorPolicy has no statement " + sid)
}

func ref(name string) map[string]any { return map[string]any{"Ref": name} }

func getAtt(id, attr string) map[string]any {
	return map[string]any{"Fn::GetAtt": []any{id, attr}}
}

// Every check catches what it is there for: each case breaks one thing
// in a copy of template.yaml and wants the problem reported, by the check
// named at its start.
func TestBrokenTemplatesAreCaught(t *testing.T) {
	c, good := load(t)
	tests := []struct {
		name   string
		mutate func(doc map[string]any)
		want   string
	}{
		// The resource specification.
		{"misspelt property", func(d map[string]any) {
			properties(d, "PublishQueue")["VisibiltyTimeout"] = 360
		}, "specification: Resources.PublishQueue.Properties.VisibiltyTimeout: not a property of AWS::SQS::Queue"},
		{"property of the wrong type", func(d map[string]any) {
			properties(d, "PublishQueueMapping")["BatchSize"] = "ten"
		}, `specification: Resources.PublishQueueMapping.Properties.BatchSize: want an integer, got "ten"`},
		{"required property missing", func(d map[string]any) {
			delete(properties(d, "SweeperSchedule"), "FlexibleTimeWindow")
		}, "specification: Resources.SweeperSchedule.Properties: FlexibleTimeWindow is required"},
		{"value not allowed", func(d map[string]any) {
			properties(d, "SweeperSchedule")["State"] = "PAUSED"
		}, `specification: Resources.SweeperSchedule.Properties.State: "PAUSED" is not one of`},
		{"nested property unknown", func(d map[string]any) {
			properties(d, "PublishQueueMapping")["ScalingConfig"] = map[string]any{"MaxConcurrency": 10}
		}, "specification: Resources.PublishQueueMapping.Properties.ScalingConfig.MaxConcurrency: not a property of ScalingConfig"},
		{"unknown resource type", func(d map[string]any) {
			resource(d, "ScheduleGroup")["Type"] = "AWS::Scheduler::Group"
		}, `specification: Resources.ScheduleGroup: type "AWS::Scheduler::Group" is not in the resource specification`},
		{"allow-listed SAM property checked as Lambda's", func(d map[string]any) {
			asMap(asMap(d["Globals"])["Function"])["LoggingConfig"] = map[string]any{"LogFormat": "XML"}
		}, `specification: Globals.Function.LoggingConfig.LogFormat: "XML" is not one of`},
		{"SAM property unknown to SAM", func(d map[string]any) {
			asMap(asMap(d["Globals"])["Function"])["Loging"] = map[string]any{}
		}, "specification: Globals.Function.Loging: not a property of AWS::Serverless::Function"},

		// References.
		{"Ref to nothing", func(d map[string]any) {
			properties(d, "PublishQueueMapping")["FunctionName"] = ref("PublisherFunktion")
		}, `references: Resources.PublishQueueMapping.Properties.FunctionName: Ref "PublisherFunktion" does not resolve`},
		{"GetAtt of an attribute the type lacks", func(d map[string]any) {
			properties(d, "PublishQueueMapping")["EventSourceArn"] = getAtt("PublishQueue", "Url")
		}, "references: Resources.PublishQueueMapping.Properties.EventSourceArn: Fn::GetAtt PublishQueue.Url: a AWS::SQS::Queue has no attribute Url"},
		{"Sub variable of nothing", func(d map[string]any) {
			properties(d, "TriggerLogGroup")["LogGroupName"] = map[string]any{"Fn::Sub": "/aws/lambda/${TrigerFunction}"}
		}, "references: Resources.TriggerLogGroup.Properties.LogGroupName: Fn::Sub variable ${TrigerFunction} does not resolve"},
		{"DependsOn nothing", func(d map[string]any) {
			resource(d, "PublishQueueMapping")["DependsOn"] = "PublisherRole"
		}, "references: Resources.PublishQueueMapping.DependsOn: no resource"},

		// Functions and their build.
		{"another build method", func(d map[string]any) {
			asMap(resource(d, "ConfirmFunction")["Metadata"])["BuildMethod"] = "go1.x"
		}, `functions: ConfirmFunction: Metadata.BuildMethod is "go1.x", want "makefile"`},
		{"another architecture", func(d map[string]any) {
			asMap(asMap(d["Globals"])["Function"])["Architectures"] = []any{"x86_64"}
		}, `functions: ConfirmFunction: Architectures is ["x86_64"], want ["arm64"]`},
		{"a function without a make target", func(d map[string]any) {
			asMap(d["Resources"])["ExtraFunction"] = cloneJSON(resource(d, "ConfirmFunction"))
		}, "make targets: ExtraFunction: no make target build-ExtraFunction"},

		// Environment.
		{"a variable the code reads is missing", func(d map[string]any) {
			delete(globalEnv(d), "ONCEPOST_QUEUE_URL")
		}, "environment: TriggerFunction: ONCEPOST_QUEUE_URL is not set, and the code reads it"},
		{"the static key is set", func(d map[string]any) {
			properties(d, "PublisherFunction")["Environment"] = map[string]any{"Variables": map[string]any{"ONCEPOST_STATIC_CREDENTIAL_KEY": "00"}}
		}, "environment: PublisherFunction sets ONCEPOST_STATIC_CREDENTIAL_KEY"},
		{"a variable no code reads", func(d map[string]any) {
			globalEnv(d)["ONCEPOST_QUEUE"] = ref("PublishQueue")
		}, "environment: ConfirmFunction sets ONCEPOST_QUEUE, which no code reads"},
		{"the queue variable names the dead-letter queue", func(d map[string]any) {
			globalEnv(d)["ONCEPOST_QUEUE_URL"] = ref("PublishDeadLetterQueue")
		}, "environment: PublishDeadLetterQueue's RedrivePolicy targets null, want the dead-letter queue"},
		{"functions disagree on the store", func(d map[string]any) {
			properties(d, "SweeperFunction")["Environment"] = map[string]any{"Variables": map[string]any{"ONCEPOST_TABLE_PREFIX": "other-"}}
		}, "environment: SweeperFunction: ONCEPOST_TABLE_PREFIX is \"other-\""},

		// Tables.
		{"index projects more than the store's", func(d map[string]any) {
			gsi := asMap(asList(properties(d, "LedgerTable")["GlobalSecondaryIndexes"])[0])
			gsi["Projection"] = map[string]any{"ProjectionType": "ALL"}
		}, `tables: the tables differ from dynamostore.Tables`},
		{"provisioned billing", func(d map[string]any) {
			properties(d, "PostsTable")["BillingMode"] = "PROVISIONED"
		}, `tables: the tables differ from dynamostore.Tables`},
		{"no TTL on the ledger", func(d map[string]any) {
			delete(properties(d, "LedgerTable"), "TimeToLiveSpecification")
		}, `tables: LedgerTable: TTL attribute "", want "ttl"`},
		{"no TTL on the workspace (idempotency records kept forever)", func(d map[string]any) {
			delete(properties(d, "WorkspaceTable"), "TimeToLiveSpecification")
		}, `tables: WorkspaceTable: TTL attribute "", want "ttl"`},
		{"no point-in-time recovery", func(d map[string]any) {
			delete(properties(d, "CredentialsTable"), "PointInTimeRecoverySpecification")
		}, "tables: CredentialsTable: point-in-time recovery is off"},
		{"a table deleted with the stack", func(d map[string]any) {
			delete(resource(d, "LedgerTable"), "DeletionPolicy")
		}, "tables: LedgerTable: DeletionPolicy \"\""},

		// Queues.
		{"visibility under 6 × the publisher's timeout", func(d map[string]any) {
			properties(d, "PublishQueue")["VisibilityTimeout"] = 300
		}, "queues: PublishQueue: VisibilityTimeout 300, want at least 6 × PublisherFunction's timeout 60 s"},
		{"max receives apart from the environment", func(d map[string]any) {
			globalEnv(d)["ONCEPOST_MAX_RECEIVES"] = "5"
		}, `queues: ONCEPOST_MAX_RECEIVES is "5", want PublishQueue's maxReceiveCount 10`},
		{"dead-letter queue with a redrive policy", func(d map[string]any) {
			properties(d, "PublishDeadLetterQueue")["RedrivePolicy"] = map[string]any{"deadLetterTargetArn": getAtt("ScheduleDeadLetterQueue", "Arn"), "maxReceiveCount": 5}
		}, "queues: PublishDeadLetterQueue: has a RedrivePolicy"},
		{"messages too small for sqsqueue", func(d map[string]any) {
			delete(properties(d, "PublishDeadLetterQueue"), "MaximumMessageSize")
		}, "queues: PublishDeadLetterQueue: MaximumMessageSize null, want at least sqsqueue.MinQueueMessageSize"},
		{"whole-batch failures", func(d map[string]any) {
			delete(properties(d, "PublishQueueMapping"), "FunctionResponseTypes")
		}, "queues: PublishQueueMapping: FunctionResponseTypes null, want ReportBatchItemFailures"},
		{"unbounded concurrency", func(d map[string]any) {
			delete(properties(d, "PublishQueueMapping"), "ScalingConfig")
		}, "queues: PublishQueueMapping: ScalingConfig.MaximumConcurrency null, want 2-1000"},

		// The state machine.
		{"a placeholder not substituted", func(d map[string]any) {
			properties(d, "ConfirmStateMachine")["DefinitionSubstitutions"] = map[string]any{"ConfirmArn": getAtt("ConfirmFunction", "Arn")}
		}, "state machine: ConfirmStateMachine: infra/statemachine/confirm.asl.json's placeholders (-) and DefinitionSubstitutions (+) differ"},
		{"the workflow may not invoke its function", func(d map[string]any) {
			delete(properties(d, "ConfirmStateMachine"), "Policies")
		}, "state machine: ConfirmStateMachine: its policies do not allow lambda:InvokeFunction on"},
		{"no operators' policy", func(d map[string]any) {
			delete(asMap(d["Resources"]), "OperatorPolicy")
			delete(asMap(d["Outputs"]), "OperatorPolicyArn")
		}, "permissions: no AWS::IAM::ManagedPolicy OperatorPolicy"},
		{"the operators' policy with a wildcard", func(d map[string]any) {
			stmts := asList(asMap(properties(d, "OperatorPolicy")["PolicyDocument"])["Statement"])
			asMap(stmts[1])["Action"] = "dynamodb:*"
		}, "permissions: OperatorPolicy.PolicyDocument.Statement[1]: grants dynamodb:*"},
		{"a workflow and its function referring to each other", func(d map[string]any) {
			properties(d, "ConfirmStateMachine")["DefinitionSubstitutions"] = map[string]any{"ConfirmFunctionArn": getAtt("ConfirmFunction", "Arn")}
		}, "dependencies: circular references: ConfirmFunction → ConfirmStateMachine → ConfirmFunction"},
		{"a workflow naming no function of the stack", func(d map[string]any) {
			properties(d, "ConfirmStateMachine")["DefinitionSubstitutions"] = map[string]any{
				"ConfirmFunctionArn": map[string]any{"Fn::Sub": "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:${AWS::StackName}-confrim"}}
		}, "is no function's FunctionName in this template"},
		{"an Express workflow", func(d map[string]any) {
			properties(d, "ConfirmStateMachine")["Type"] = "EXPRESS"
		}, `state machine: ConfirmStateMachine: Type "EXPRESS", want STANDARD`},

		// Alarms and the dashboard.
		{"an alarm on a metric no code emits", func(d map[string]any) {
			alarmOn(d, "StalePending")["MetricName"] = "PendingStale"
		}, "alarms and dashboard: StalePendingAlarm: watches PendingStale, which no code emits"},
		{"a required alarm missing", func(d map[string]any) {
			delete(asMap(d["Resources"]), "DuplicateBlockedAlarm")
		}, "alarms and dashboard: no alarm watches DuplicateBlocked"},
		{"a gauge alarm quiet when the sweeper stops", func(d map[string]any) {
			alarmOn(d, "StalePending")["TreatMissingData"] = "notBreaching"
		}, "alarms and dashboard: StalePendingAlarm: TreatMissingData \"notBreaching\", want breaching"},
		{"a gauge alarm paging on two late sweeps", func(d map[string]any) {
			alarmOn(d, "HeldTargets")["DatapointsToAlarm"] = 2
		}, "alarms and dashboard: HeldTargetsAlarm: DatapointsToAlarm 2, want at least 3: each late or missed sweep leaves a minute without a datapoint, which counts as breaching"},
		{"a gauge alarm without M of N", func(d map[string]any) {
			alarmOn(d, "StalePending")["EvaluationPeriods"] = 3
		}, "alarms and dashboard: StalePendingAlarm: EvaluationPeriods 3, want more than DatapointsToAlarm 3"},
		{"a gauge alarm too slow for a dead sweeper", func(d map[string]any) {
			alarmOn(d, "StuckTargets")["DatapointsToAlarm"] = 6
			alarmOn(d, "StuckTargets")["EvaluationPeriods"] = 8
		}, "alarms and dashboard: StuckTargetsAlarm: DatapointsToAlarm 6 × Period 60 s, want at most 300 s: a sweeper that stopped must page within five minutes"},
		{"a gauge alarm's period apart from the sweeps", func(d map[string]any) {
			alarmOn(d, "MissedSchedules")["Period"] = 30
		}, "alarms and dashboard: MissedSchedulesAlarm: Period 30, want the sweeper's rate, 60 s: one datapoint a period"},
		{"the sweeps' rate apart from the gauge alarms", func(d map[string]any) {
			properties(d, "SweeperSchedule")["ScheduleExpression"] = "rate(2 minutes)"
		}, "alarms and dashboard: SweepErrorsAlarm: Period 60, want the sweeper's rate, 120 s: one datapoint a period"},
		{"an alarm without the runtime's dimension", func(d map[string]any) {
			delete(alarmOn(d, "HeldTargets"), "Dimensions")
		}, `alarms and dashboard: HeldTargetsAlarm: dimensions {}, want the runtime's {"Runtime":"aws"}`},
		{"a literal custom namespace", func(d map[string]any) {
			alarmOn(d, "SweepErrors")["Namespace"] = "oncepost"
		}, `alarms and dashboard: SweepErrorsAlarm: namespace "oncepost", want the MetricsNamespace parameter`},
		{"no alarm on a function's errors", func(d map[string]any) {
			delete(asMap(d["Resources"]), "SweeperErrorsAlarm")
		}, "alarms and dashboard: no alarm on AWS/Lambda Errors FunctionName=SweeperFunction"},
		{"no alarm on dead letters", func(d map[string]any) {
			delete(asMap(d["Resources"]), "DeadLettersAlarm")
		}, "alarms and dashboard: no alarm on AWS/SQS ApproximateNumberOfMessagesVisible QueueName=PublishDeadLetterQueue"},
		{"an alarm notifying no one", func(d map[string]any) {
			delete(alarmOn(d, "StuckTargets"), "AlarmActions")
		}, "alarms and dashboard: StuckTargetsAlarm: AlarmActions null, want the topic parameter"},
		{"a dashboard metric no code emits", func(d map[string]any) {
			body := asMap(properties(d, "Dashboard")["DashboardBody"])
			body["Fn::Sub"] = strings.Replace(body["Fn::Sub"].(string), `"WaitingTargets"`, `"TargetsWaiting"`, 1)
		}, "alarms and dashboard: Dashboard: shows TargetsWaiting, which no code emits"},

		// Permissions.
		{"dynamodb:*", func(d map[string]any) {
			asMap(statements(d, "TriggerFunction")[0])["Action"] = "dynamodb:*"
		}, "permissions: TriggerFunction.Policies[0].Statement[0]: grants dynamodb:*"},
		{"a wildcard within a service", func(d map[string]any) {
			addStatement(d, "PublisherFunction", map[string]any{"Effect": "Allow", "Action": "states:Start*", "Resource": ref("ConfirmStateMachine")})
		}, "permissions: PublisherFunction.Policies[0].Statement[7]: grants states:Start*"},
		{"every action", func(d map[string]any) {
			addStatement(d, "ConfirmFunction", map[string]any{"Effect": "Allow", "Action": "*", "Resource": "*"})
		}, "permissions: ConfirmFunction.Policies[0].Statement[4]: grants *"},
		{"a resource that is not the stack's", func(d map[string]any) {
			asMap(statements(d, "TriggerFunction")[1])["Resource"] = "*"
		}, `permissions: TriggerFunction.Policies[0].Statement[1]: resource "*" is not one of the stack's own`},
		{"a trigger whose failures Lambda drops", func(d map[string]any) {
			delete(properties(d, "TriggerFunction"), "EventInvokeConfig")
		}, "asynchronous invocation: TriggerFunction: no EventInvokeConfig"},
		{"a trigger retried more than Lambda allows", func(d map[string]any) {
			asMap(properties(d, "TriggerFunction")["EventInvokeConfig"])["MaximumRetryAttempts"] = 5
		}, "asynchronous invocation: TriggerFunction: EventInvokeConfig.MaximumRetryAttempts 5, want 0-2"},
		{"a failure queue nobody watches", func(d map[string]any) {
			delete(asMap(d["Resources"]), "TriggerFailuresAlarm")
		}, "asynchronous invocation: TriggerFunction: no alarm on TriggerFailureQueue's visible messages"},
		{"a call the store never makes", func(d map[string]any) {
			addStatement(d, "SweeperFunction", map[string]any{"Effect": "Allow", "Action": "dynamodb:Scan", "Resource": getAtt("LedgerTable", "Arn")})
		}, "permissions: SweeperFunction.Policies[0].Statement[10]: grants dynamodb:Scan, a call the store never makes"},
		{"the trigger reads credentials", func(d map[string]any) {
			s := asMap(statements(d, "TriggerFunction")[0])
			s["Resource"] = append(asList(s["Resource"]), getAtt("CredentialsTable", "Arn"))
		}, "permissions: TriggerFunction.Policies[0].Statement[0]: TriggerFunction is granted the credentials table"},
		{"the trigger decrypts", func(d map[string]any) {
			addStatement(d, "TriggerFunction", map[string]any{"Effect": "Allow", "Action": "kms:Decrypt", "Resource": getAtt("CredentialsKey", "Arn")})
		}, "permissions: TriggerFunction.Policies[0].Statement[5]: TriggerFunction is granted the credentials key"},
		{"the publisher cannot decrypt", func(d map[string]any) {
			p := asMap(asList(properties(d, "PublisherFunction")["Policies"])[0])
			p["Statement"] = append(asList(p["Statement"])[:1:1], asList(p["Statement"])[2:]...)
		}, "permissions: PublisherFunction cannot decrypt with the key CredentialsKey"},
		{"a managed policy", func(d map[string]any) {
			properties(d, "SweeperFunction")["Policies"] = append(asList(properties(d, "SweeperFunction")["Policies"]), "AmazonDynamoDBFullAccess")
		}, `permissions: SweeperFunction.Policies[1]: "AmazonDynamoDBFullAccess" is a managed policy or a SAM policy template`},
		{"a SAM policy template", func(d map[string]any) {
			properties(d, "SweeperFunction")["Policies"] = append(asList(properties(d, "SweeperFunction")["Policies"]), map[string]any{"SQSPollerPolicy": map[string]any{"QueueName": "x"}})
		}, "permissions: SweeperFunction.Policies[1]: {\"SQSPollerPolicy\""},
		{"NotAction", func(d map[string]any) {
			addStatement(d, "ConfirmFunction", map[string]any{"Effect": "Allow", "NotAction": "iam:*", "Resource": getAtt("PublishQueue", "Arn")})
		}, "permissions: ConfirmFunction.Policies[0].Statement[4]: NotAction or NotResource"},
		{"the scheduler role invokes the publisher", func(d map[string]any) {
			stmt := asMap(asList(asMap(asMap(asList(properties(d, "SchedulerRole")["Policies"])[0])["PolicyDocument"])["Statement"])[0])
			stmt["Resource"] = getAtt("PublisherFunction", "Arn")
		}, "permissions: SchedulerRole.Policies[0].PolicyDocument.Statement[0]: the scheduler role invokes"},
		{"the scheduler role may start workflows", func(d map[string]any) {
			doc := asMap(asMap(asList(properties(d, "SchedulerRole")["Policies"])[0])["PolicyDocument"])
			doc["Statement"] = append(asList(doc["Statement"]), map[string]any{"Effect": "Allow", "Action": "states:StartExecution", "Resource": ref("ConfirmStateMachine")})
		}, `permissions: SchedulerRole.Policies[0].PolicyDocument.Statement[2]: the scheduler role may "states:StartExecution"`},
		{"a key open to everyone", func(d map[string]any) {
			asMap(asList(asMap(properties(d, "CredentialsKey")["KeyPolicy"])["Statement"])[0])["Principal"] = map[string]any{"AWS": "*"}
		}, "permissions: CredentialsKey.KeyPolicy.Statement[0]: opens the key to every principal"},

		// Least privilege.
		{"a function deletes ledger rows", func(d map[string]any) {
			s := asMap(statements(d, "PublisherFunction")[0])
			s["Action"] = append(asList(s["Action"]), "dynamodb:DeleteItem")
		}, "least privilege: PublisherFunction.Policies[0].Statement[0]: PublisherFunction may dynamodb:DeleteItem on LedgerTable"},
		{"the operators delete ledger rows", func(d map[string]any) {
			s := operatorStatement(d, "Ledger")
			s["Action"] = append(asList(s["Action"]), "dynamodb:DeleteItem")
		}, "least privilege: OperatorPolicy.PolicyDocument.Statement[1]: OperatorPolicy may dynamodb:DeleteItem on LedgerTable"},
		{"a function deletes credentials in a batch", func(d map[string]any) {
			addStatement(d, "SweeperFunction", map[string]any{"Effect": "Allow", "Action": "dynamodb:BatchWriteItem", "Resource": getAtt("CredentialsTable", "Arn")})
		}, "least privilege: SweeperFunction.Policies[0].Statement[10]: SweeperFunction may dynamodb:BatchWriteItem on CredentialsTable"},
		{"the trigger writes posts", func(d map[string]any) {
			s := asMap(statements(d, "TriggerFunction")[0])
			s["Action"] = append(asList(s["Action"]), "dynamodb:UpdateItem")
		}, "least privilege: TriggerFunction.Policies[0].Statement[0]: TriggerFunction may dynamodb:UpdateItem on PostsTable"},
		{"the operators receive from the live queue", func(d map[string]any) {
			s := operatorStatement(d, "SendJobs")
			s["Action"] = append(asList(s["Action"]), "sqs:ReceiveMessage")
		}, "OperatorPolicy may sqs:ReceiveMessage on PublishQueue"},
		{"another function takes jobs from the live queue", func(d map[string]any) {
			addStatement(d, "SweeperFunction", map[string]any{"Effect": "Allow", "Action": "sqs:DeleteMessage", "Resource": getAtt("PublishQueue", "Arn")})
		}, "SweeperFunction may sqs:DeleteMessage on PublishQueue: only the publish queue's consumer (PublisherFunction"},
		{"the operators write every schedule of the group", func(d map[string]any) {
			operatorStatement(d, "ScheduleSlots")["Resource"] = map[string]any{"Fn::Sub": "arn:${AWS::Partition}:scheduler:${AWS::Region}:${AWS::AccountId}:schedule/${ScheduleGroup}/*"}
		}, "OperatorPolicy may scheduler:CreateSchedule, scheduler:UpdateSchedule on {\"Fn::Sub\":\"arn:${AWS::Partition}:scheduler:${AWS::Region}:${AWS::AccountId}:schedule/${ScheduleGroup}/*\"}; want only the slot schedules"},
		{"the operators delete schedules of another group", func(d map[string]any) {
			operatorStatement(d, "ScheduleSlots")["Action"] = "scheduler:DeleteSchedule"
			operatorStatement(d, "ScheduleSlots")["Resource"] = map[string]any{"Fn::Sub": "arn:${AWS::Partition}:scheduler:${AWS::Region}:${AWS::AccountId}:schedule/default/slot.*"}
		}, "OperatorPolicy may scheduler:DeleteSchedule on"},
		{"a schedule of the stack named like a slot's", func(d map[string]any) {
			properties(d, "SweeperSchedule")["Name"] = "slot.sweeper"
		}, "which names the stack's own schedule SweeperSchedule (slot.sweeper)"},
		{"a bucket open to plain HTTP", func(d map[string]any) {
			delete(asMap(d["Resources"]), "MediaBucketPolicy")
		}, "least privilege: MediaBucket: no bucket policy denies s3:* to every principal"},
		{"the TLS rule on the objects only", func(d map[string]any) {
			s := asMap(asList(asMap(properties(d, "MediaBucketPolicy")["PolicyDocument"])["Statement"])[0])
			s["Resource"] = map[string]any{"Fn::Sub": "${MediaBucket.Arn}/*"}
		}, "least privilege: MediaBucket: no bucket policy denies"},
		{"the operators cannot drop dead letters", func(d map[string]any) {
			operatorStatement(d, "DeadLetters")["Action"] = []any{"sqs:ReceiveMessage", "sqs:ChangeMessageVisibility"}
		}, "least privilege: OperatorPolicy may not sqs:DeleteMessage on PublishDeadLetterQueue"},
		{"the trigger cannot enqueue", func(d map[string]any) {
			asMap(statements(d, "TriggerFunction")[1])["Action"] = "sqs:GetQueueAttributes"
		}, "least privilege: TriggerFunction may not sqs:SendMessage on PublishQueue"},

		// The HTTP API (the template before it had one fails the first).
		{"no api function for functions/api", func(d map[string]any) {
			for _, id := range []string{"ApiFunction", "ApiLogGroup", "ApiErrorsAlarm", "ApiThrottlesAlarm", "ApiDurationAlarm"} {
				delete(asMap(d["Resources"]), id)
			}
		}, "functions: functions/api has no function ApiFunction in the template"},
		{"the API without IAM authorization", func(d map[string]any) {
			delete(properties(d, "Api"), "Auth")
		}, "http api: Api: Auth null, want EnableIamAuthorizer: true and DefaultAuthorizer: AWS_IAM"},
		{"IAM as the default authorizer without enabling it", func(d map[string]any) {
			delete(asMap(properties(d, "Api")["Auth"]), "EnableIamAuthorizer")
		}, "http api: Api: Auth {\"DefaultAuthorizer\":\"AWS_IAM\"}, want EnableIamAuthorizer: true"},
		{"a route opting out of IAM", func(d map[string]any) {
			ev := asMap(asMap(asMap(properties(d, "ApiFunction")["Events"])["Api"])["Properties"])
			ev["Auth"] = map[string]any{"Authorizer": "NONE"}
		}, "http api: ApiFunction: event Api: Auth {\"Authorizer\":\"NONE\"}: a route without IAM authorization"},
		{"payload format 1.0", func(d map[string]any) {
			ev := asMap(asMap(asMap(properties(d, "ApiFunction")["Events"])["Api"])["Properties"])
			ev["PayloadFormatVersion"] = "1.0"
		}, `http api: ApiFunction: event Api: PayloadFormatVersion "1.0", want "2.0"`},
		{"SAM's implicit API (no IAM)", func(d map[string]any) {
			ev := asMap(asMap(asMap(properties(d, "ApiFunction")["Events"])["Api"])["Properties"])
			delete(ev, "ApiId")
		}, "http api: ApiFunction: event Api: ApiId null, want a Ref to an AWS::Serverless::HttpApi of the stack"},
		{"the api function outliving its idempotency keys' stale time", func(d map[string]any) {
			properties(d, "ApiFunction")["Timeout"] = 60
		}, "http api: ApiFunction: Timeout 60 s, want under API Gateway's 30 s and under dynamostore.CreateStaleAfter"},
		{"no throttle alarm on the api function", func(d map[string]any) {
			delete(asMap(d["Resources"]), "ApiThrottlesAlarm")
		}, "http api: no alarm on AWS/Lambda Throttles FunctionName=ApiFunction"},
		{"no errors alarm on the api function", func(d map[string]any) {
			delete(asMap(d["Resources"]), "ApiErrorsAlarm")
		}, "alarms and dashboard: no alarm on AWS/Lambda Errors FunctionName=ApiFunction"},
		{"a duration alarm far from the timeout", func(d map[string]any) {
			properties(d, "ApiDurationAlarm")["Threshold"] = 5000
		}, "http api: ApiFunction's Duration alarm: Statistic \"Maximum\", Threshold 5000 ms"},
		{"no 5xx alarm on the API", func(d map[string]any) {
			delete(asMap(d["Resources"]), "Api5xxAlarm")
		}, "http api: no alarm on AWS/ApiGateway 5xx ApiId=Api"},
		{"no API URL output", func(d map[string]any) {
			delete(asMap(d["Outputs"]), "ApiUrl")
		}, "http api: Api: no output gives its URL"},
		{"the api function writes accounts", func(d map[string]any) {
			for _, st := range statements(d, "ApiFunction") {
				if asMap(st)["Sid"] == "IdempotencyRecords" {
					delete(asMap(st), "Condition")
				}
			}
		}, "least privilege: ApiFunction.Policies[0].Statement[3]: ApiFunction may dynamodb:PutItem, dynamodb:DeleteItem on WorkspaceTable with condition null"},
		{"the api function writes any partition of the workspace (an account, the data key)", func(d map[string]any) {
			for _, st := range statements(d, "ApiFunction") {
				if asMap(st)["Sid"] == "WebhookSubscriptions" {
					asMap(asMap(asMap(st)["Condition"])["ForAllValues:StringLike"])["dynamodb:LeadingKeys"] = []any{"webhook*"}
				}
			}
		}, `ApiFunction may dynamodb:PutItem, dynamodb:DeleteItem on WorkspaceTable with condition {"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["webhook*"]}}`},
		{"the api function cannot write subscriptions", func(d map[string]any) {
			var kept []any
			for _, st := range statements(d, "ApiFunction") {
				if asMap(st)["Sid"] != "WebhookSubscriptions" {
					kept = append(kept, st)
				}
			}
			asMap(asList(properties(d, "ApiFunction")["Policies"])[0])["Statement"] = kept
		}, `ApiFunction may not dynamodb:PutItem on WorkspaceTable under dynamodb:LeadingKeys ["webhook"]`},
		{"the api function makes data keys", func(d map[string]any) {
			addStatement(d, "ApiFunction", map[string]any{"Effect": "Allow", "Action": "kms:GenerateDataKey", "Resource": getAtt("CredentialsKey", "Arn")})
		}, "ApiFunction may kms:GenerateDataKey on CredentialsKey: the api function never makes the data key"},
		{"the api function cannot scan the dead webhook deliveries", func(d map[string]any) {
			for _, st := range statements(d, "ApiFunction") {
				if asMap(st)["Sid"] == "WebhookDeadLetters" {
					asMap(st)["Action"] = []any{"sqs:DeleteMessage"}
				}
			}
		}, "ApiFunction may not sqs:ReceiveMessage on WebhookDeadLetterQueue"},
		{"the api function takes deliveries from the webhook queue", func(d map[string]any) {
			addStatement(d, "ApiFunction", map[string]any{"Effect": "Allow", "Action": "sqs:ReceiveMessage", "Resource": getAtt("WebhookQueue", "Arn")})
		}, "ApiFunction may sqs:ReceiveMessage on WebhookQueue: only the webhooks function takes deliveries"},
		{"the api function reads tokens", func(d map[string]any) {
			addStatement(d, "ApiFunction", map[string]any{"Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": getAtt("CredentialsTable", "Arn")})
		}, "ApiFunction is granted the credentials table; only PublisherFunction, ConfirmFunction, SweeperFunction act with tokens"},
		{"the api function takes jobs", func(d map[string]any) {
			addStatement(d, "ApiFunction", map[string]any{"Effect": "Allow", "Action": "sqs:ReceiveMessage", "Resource": getAtt("PublishQueue", "Arn")})
		}, "ApiFunction may sqs:ReceiveMessage on PublishQueue: only the publish queue's consumer"},
		{"the api function cannot schedule", func(d map[string]any) {
			for _, st := range statements(d, "ApiFunction") {
				if asMap(st)["Sid"] == "ScheduleSlots" {
					asMap(st)["Action"] = "scheduler:GetSchedule"
				}
			}
		}, "least privilege: ApiFunction may not scheduler:CreateSchedule on"},

		// Outputs.
		{"an output the CLI reads is missing", func(d map[string]any) {
			delete(asMap(d["Outputs"]), "ScheduleGroupName")
		}, "outputs: no output ScheduleGroupName"},
		{"an output apart from the functions", func(d map[string]any) {
			asMap(asMap(d["Outputs"])["QueueUrl"])["Value"] = ref("PublishDeadLetterQueue")
		}, `outputs: output QueueUrl is {"Ref":"PublishDeadLetterQueue"}, the functions' ONCEPOST_QUEUE_URL is {"Ref":"PublishQueue"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkBroken(t, c, good, tt.mutate, tt.want) })
	}
}
