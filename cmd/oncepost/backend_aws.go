package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/smithy-go"

	"oncepost/shared/awsclock"
	"oncepost/shared/awsruntime"
	"oncepost/shared/awswebhooks"
	"oncepost/shared/dynamostore"
	"oncepost/shared/emf"
	"oncepost/shared/ledger"
	"oncepost/shared/publishing"
	"oncepost/shared/sqsqueue"
)

// The names of a stack's Outputs the CLI reads (template.yaml declares
// them): exact, as CloudFormation's DescribeStacks and an --outputs file
// give them.
const (
	outTablePrefix        = "TablePrefix"
	outQueueURL           = "QueueUrl"
	outDeadLetterQueueURL = "DeadLetterQueueUrl"
	outStateMachineARN    = "StateMachineArn"
	outScheduleGroupName  = "ScheduleGroupName"
	outSchedulerRoleARN   = "SchedulerRoleArn"
	outScheduleDLQARN     = "ScheduleDeadLetterQueueArn"
	outTriggerFunctionARN = "TriggerFunctionArn"
	outKMSKeyID           = "KmsKeyId"
	outMetricsNamespace   = "MetricsNamespace"
	outMediaBucketName    = "MediaBucketName"
	// The webhook queue's, optional: a stack without them has no
	// `dlq --queue webhooks`.
	outWebhookQueueURL           = "WebhookQueueUrl"
	outWebhookDeadLetterQueueURL = "WebhookDeadLetterQueueUrl"
)

// stackOutputs are a deployed stack's Outputs, by name.
type stackOutputs map[string]string

// requiredOutputs are the Outputs every command needs; KmsKeyId is
// required unless a static credential key is given (emulators), and
// MetricsNamespace defaults to "oncepost".
var requiredOutputs = []string{outTablePrefix, outQueueURL, outDeadLetterQueueURL, outStateMachineARN,
	outScheduleGroupName, outSchedulerRoleARN, outScheduleDLQARN, outTriggerFunctionARN, outMediaBucketName}

// maxOutputsBytes bounds an --outputs file (a stack has at most 200
// outputs of a few hundred bytes).
const maxOutputsBytes = 1 << 20

// readOutputsFile reads an --outputs file: a JSON object of output names
// and string values, or the list `aws cloudformation describe-stacks
// --query 'Stacks[0].Outputs'` prints ([{"OutputKey": …, "OutputValue":
// …}]). Names the CLI does not read are ignored (a stack may have more).
func readOutputsFile(name string) (stackOutputs, error) {
	raw, err := readLimited(name, maxOutputsBytes)
	if err != nil {
		return nil, usageError("outputs", "cannot read %s: %v", name, unwrapPathError(err))
	}
	if len(raw) > maxOutputsBytes {
		return nil, usageError("outputs", "%s is larger than %d bytes; give the stack's Outputs only", name, maxOutputsBytes)
	}
	raw = bytes.TrimSpace(raw)
	var out stackOutputs
	var list []struct {
		OutputKey   string
		OutputValue string
	}
	switch {
	case bytes.HasPrefix(raw, []byte("[")):
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, usageError("outputs", "%s: %v; write a JSON object {\"TablePrefix\": \"…\", …} or the Outputs list of describe-stacks", name, jsonMessage(err))
		}
		out = stackOutputs{}
		for _, o := range list {
			out[o.OutputKey] = o.OutputValue
		}
	default:
		var values map[string]json.RawMessage
		if err := json.Unmarshal(raw, &values); err != nil {
			return nil, usageError("outputs", "%s: %v; write a JSON object of the stack's Outputs, e.g. {\"TablePrefix\": \"oncepost-prod-\", \"QueueUrl\": \"https://…\"}", name, jsonMessage(err))
		}
		out = stackOutputs{}
		for k, v := range values {
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, usageError("outputs", "%s: %q must be a string, not %s", name, k, snippet(string(v), 40))
			}
			out[k] = s
		}
	}
	return out, nil
}

// jsonMessage is a JSON decoding error without the package's prefix.
func jsonMessage(err error) string {
	var typ *json.UnmarshalTypeError
	if errors.As(err, &typ) {
		return fmt.Sprintf("%q must be a string, not %s", typ.Field, typ.Value)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// describeStack reads a stack's Outputs with CloudFormation DescribeStacks.
func describeStack(ctx context.Context, cfg aws.Config, name string) (stackOutputs, error) {
	res, err := cloudformation.NewFromConfig(cfg).DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(name)})
	var api smithy.APIError
	switch {
	case errors.As(err, &api) && api.ErrorCode() == "ValidationError" && strings.Contains(api.ErrorMessage(), "does not exist"):
		return nil, usageError("stack", "there is no stack %q in %s (%s); check the name and AWS_REGION", name, cfg.Region, api.ErrorMessage())
	case err != nil:
		return nil, fmt.Errorf("read the outputs of stack %s with CloudFormation DescribeStacks: %w", name, err)
	case len(res.Stacks) == 0:
		return nil, usageError("stack", "there is no stack %q in %s", name, cfg.Region)
	}
	st := res.Stacks[0]
	out := stackOutputs{}
	for _, o := range st.Outputs {
		out[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	if len(st.Outputs) == 0 {
		return nil, usageError("stack", "stack %s (%s) has no Outputs; is it an oncepost stack, and is it deployed?", name, st.StackStatus)
	}
	return out, nil
}

// loadAWSConfig is the AWS SDK's standard configuration: the environment
// (AWS_REGION, AWS_PROFILE, AWS_CA_BUNDLE, AWS_ENDPOINT_URL_<SERVICE> …),
// then the shared config and credentials files. It reads the stack's
// Outputs only (DescribeStacks, a read the SDK may safely repeat).
func loadAWSConfig(ctx context.Context) (aws.Config, error) {
	return awsconfig.LoadDefaultConfig(ctx)
}

// staticCredentialKey reads the credential key an emulator setup gives
// instead of KMS, as the stack's functions read it (awsruntime).
func staticCredentialKey() ([]byte, error) {
	env, err := awsruntime.ReadEnv(func(name string) (string, bool) {
		if name != awsruntime.EnvStaticKey {
			return "", false
		}
		return os.LookupEnv(name)
	})
	if err != nil {
		return nil, badInput("%v", err)
	}
	return env.StaticKey, nil
}

// openStack opens the AWS backend named by --stack or --outputs: the
// DynamoDB store, the SQS publish queue and its dead letters, the Step
// Functions state machine (operators' decisions, looks) and the schedule
// group, with the AWS SDK's standard configuration (AWS_REGION,
// AWS_PROFILE, AWS_ENDPOINT_URL_<SERVICE> …). It makes no call but
// DescribeStacks.
func (w *where) openStack(ctx context.Context) (*backend, error) {
	src := "outputs"
	var outs stackOutputs
	var err error
	if w.outputs != "" {
		if outs, err = readOutputsFile(w.outputs); err != nil {
			return nil, err
		}
	} else {
		src = "stack"
		cfg, err := loadAWSConfig(ctx)
		if err != nil {
			return nil, fmt.Errorf("load the AWS configuration: %w", err)
		}
		if outs, err = describeStack(ctx, cfg, w.stack); err != nil {
			return nil, err
		}
	}
	static, err := staticCredentialKey()
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, name := range requiredOutputs {
		if outs[name] == "" {
			missing = append(missing, name)
		}
	}
	if outs[outKMSKeyID] == "" && static == nil {
		missing = append(missing, outKMSKeyID+" (or "+awsruntime.EnvStaticKey+" for emulators)")
	}
	if len(missing) > 0 {
		from := w.outputs
		if src == "stack" {
			from = "stack " + w.stack
		}
		return nil, usageError(src, "%s lacks the output(s) %s", from, strings.Join(missing, ", "))
	}
	return openAWS(ctx, src, outs, static)
}

// openAWS builds the AWS backend from a stack's outputs; src names the
// flag they came from, for errors.
func openAWS(ctx context.Context, src string, outs stackOutputs, static []byte) (*backend, error) {
	env := awsruntime.Env{
		TablePrefix: outs[outTablePrefix], KMSKeyID: outs[outKMSKeyID], StaticKey: static,
		QueueURL: outs[outQueueURL], DeadLetterURL: outs[outDeadLetterQueueURL],
		StateMachineARN: outs[outStateMachineARN], MetricsNS: outs[outMetricsNamespace], MediaBucket: outs[outMediaBucketName],
		ScheduleGroup: outs[outScheduleGroupName], TriggerFunctionARN: outs[outTriggerFunctionARN],
		SchedulerRoleARN: outs[outSchedulerRoleARN], ScheduleDeadLetterARN: outs[outScheduleDLQARN],
		WebhookQueueURL: outs[outWebhookQueueURL], WebhookDeadLetterURL: outs[outWebhookDeadLetterQueueURL],
	}
	if env.MetricsNS == "" {
		env.MetricsNS = "oncepost"
	}
	cfg := defaultConfig()
	// Whether a slot is too near for its schedule, and how long its job
	// waits, are decided by AWS's clock, measured on the stack's answers:
	// Scheduler fires by it, and the operator's may be minutes off.
	clock := &awsclock.Clock{}
	rt, err := awsruntime.New(ctx, env, processOwner(), awsconfig.WithAPIOptions(clock.APIOptions()))
	if err != nil {
		return nil, fmt.Errorf("open the stack's store: %w", err)
	}
	rt.Now = clock.Now
	// The CLI's stdout is the operator's: no log or metric lines on it.
	rt.Logger = discardLogger()
	rt.Metrics = &emf.Emitter{W: io.Discard, Namespace: env.MetricsNS, Dimensions: map[string]string{"Runtime": "aws"}}
	refused := func(err error) error { return usageError(src, "the stack's outputs are refused: %v", err) }
	queue, err := rt.Queue()
	if err != nil {
		return nil, refused(err)
	}
	flows, err := rt.Workflows()
	if err != nil {
		return nil, refused(err)
	}
	media, err := rt.Media()
	if err != nil {
		return nil, refused(err)
	}
	schedules, err := rt.PostScheduler()
	if err != nil {
		return nil, refused(err)
	}
	var webhookDead deadLetterQueue
	webhooks := stackWebhooks{awswebhooks.New(rt.Store, nil)}
	if env.WebhookQueueURL != "" || env.WebhookDeadLetterURL != "" {
		wq, err := rt.WebhookQueue()
		if err != nil {
			return nil, refused(err)
		}
		webhookDead, webhooks = wq, stackWebhooks{awswebhooks.New(rt.Store, wq)}
	}
	creds := rt.Credentials(cfg.CallTimeout)
	platforms := rt.Platforms()
	confirmer := &publishing.Confirmer{
		Ledger: rt.Store, Posts: rt.Store, Accounts: rt.Store, Platforms: platforms, Queue: queue, Tasks: flows,
		Credentials: creds, Metrics: rt.Metrics, CallTimeout: cfg.LookTimeout, Logger: rt.Logger,
	}
	deleter := &publishing.Deleter{
		Ledger: rt.Store, Posts: rt.Store, Accounts: rt.Store, Platforms: platforms, Credentials: creds, Metrics: rt.Metrics,
		Owner: rt.Owner, CallTimeout: cfg.CallTimeout, RecordMargin: cfg.RecordMargin, Lease: cfg.Lease, Logger: rt.Logger,
	}
	return &backend{
		kind: backendAWS, ledger: rt.Store, posts: rt.Store, accounts: rt.Store, admin: rt.Store,
		views:       dynamoViews{rt.Store},
		lister:      rt.Store,
		queue:       rt.Store,
		keys:        rt.Store,
		rules:       rt.Store,
		schedules:   schedules,
		deadLetters: queue,
		depth:       sqsDepth{queue},
		looks:       sfnLooks{client: sfn.NewFromConfig(rt.AWS), execPrefix: executionPrefix(outs[outStateMachineARN])},
		operator:    &publishing.Operator{Ledger: rt.Store, Confirmer: confirmer, Tasks: flows, Logger: rt.Logger},
		deleter:     deleter,
		media:       mediaBucket{media},

		webhooks:           webhooks,
		webhookDeadLetters: webhookDead,
	}, nil
}

// executionPrefix is the prefix of the ARNs of a state machine's
// executions: arn:P:states:R:A:stateMachine:N → arn:P:states:R:A:execution:N:.
func executionPrefix(machineARN string) string {
	p := strings.Split(machineARN, ":")
	if len(p) == 7 {
		p[5] = "execution"
	}
	return strings.Join(p, ":") + ":"
}

// sqsDepth is the stack's publish queue's depth.
type sqsDepth struct{ q *sqsqueue.Queue }

// Depth counts the queue's messages, approximately (sqsqueue.Queue.Depth).
func (d sqsDepth) Depth(ctx context.Context) (queueDepth, error) {
	qd, err := d.q.Depth(ctx)
	return queueDepth{Visible: qd.Visible, InFlight: qd.InFlight, Delayed: qd.Delayed, DeadLetters: qd.DeadLetters, Approximate: true}, err
}

// dynamoViews are the operator's lists on DynamoDB.
type dynamoViews struct{ s *dynamostore.Store }

// Waiting lists waiting targets through StatusIndex.
func (v dynamoViews) Waiting(ctx context.Context, limit int) ([]waitingTarget, error) {
	ws, err := v.s.Waiting(ctx, limit)
	if err != nil {
		return nil, err
	}
	out := make([]waitingTarget, len(ws))
	for i, w := range ws {
		out[i] = waitingTarget(w)
	}
	return out, nil
}

// Counts counts targets by status through the status index, and the
// ledger's open and held entries through their sparse indexes: the other
// states have no index, and counting them would read the whole ledger.
func (v dynamoViews) Counts(ctx context.Context) (storeCounts, error) {
	targets, err := v.s.CountTargets(ctx)
	if err != nil {
		return storeCounts{}, err
	}
	c := storeCounts{Targets: targets, Ledger: map[ledger.State]int{ledger.Pending: 0, ledger.Unknown: 0, ledger.Held: 0}}
	open, err := v.s.Open(ctx, time.Now().Add(time.Hour), 0)
	if err != nil {
		return storeCounts{}, err
	}
	held, err := v.s.Held(ctx, 0)
	if err != nil {
		return storeCounts{}, err
	}
	for _, e := range append(open, held...) {
		c.Ledger[e.State]++
	}
	return c, nil
}

// sfnLooks counts looks in the Step Functions executions' histories.
type sfnLooks struct {
	client     *sfn.Client
	execPrefix string
}

// Looks counts the Look states the attempt's confirm workflows (the name
// and its replacements -r2 …) entered, reading their histories with
// GetExecutionHistory (1,000 events a page, without data).
func (l sfnLooks) Looks(ctx context.Context, e ledger.Entry) (int, error) {
	n := 0
	base := publishing.ConfirmName(e.Key, e.Attempt)
	for run := 1; run <= publishing.MaxConfirmRuns; run++ {
		name := base
		if run > 1 {
			name = fmt.Sprintf("%s-r%d", base, run)
		}
		pages := sfn.NewGetExecutionHistoryPaginator(l.client, &sfn.GetExecutionHistoryInput{
			ExecutionArn: aws.String(l.execPrefix + name), IncludeExecutionData: aws.Bool(false), MaxResults: 1000,
		})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if errors.As(err, new(*sfntypes.ExecutionDoesNotExist)) {
				return n, nil
			}
			if err != nil {
				return n, fmt.Errorf("read the history of confirm workflow %s: %w", name, err)
			}
			for _, ev := range page.Events {
				if ev.Type == sfntypes.HistoryEventTypeTaskStateEntered && ev.StateEnteredEventDetails != nil &&
					aws.ToString(ev.StateEnteredEventDetails.Name) == "Look" {
					n++
				}
			}
		}
	}
	return n, nil
}
