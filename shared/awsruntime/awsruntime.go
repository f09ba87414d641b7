// Package awsruntime builds oncepost's use cases on AWS from a Lambda
// function's environment: the DynamoDB store, the SQS publish queue, the
// Step Functions confirm workflow and the Mastodon connector, so that each
// function's main.go is wiring only.
//
// Every setting is an environment variable (Env* below); the SAM
// template sets them, and a missing or malformed one is an error naming
// the variable. The AWS SDK reads its own configuration the standard way,
// so AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS and
// AWS_ENDPOINT_URL_SFN point a function at local emulators.
package awsruntime

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"
	// Zone data in the binary: provided.al2023 is not promised to carry
	// /usr/share/zoneinfo, and an account's posting slots, a recurring
	// rule and a time read in an account's zone need its IANA zone.
	_ "time/tzdata"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"oncepost/shared/awsclient"
	"oncepost/shared/awsschedule"
	"oncepost/shared/dynamostore"
	"oncepost/shared/ebschedule"
	"oncepost/shared/emf"
	"oncepost/shared/platform/catalog"
	"oncepost/shared/platform/mastodon"
	"oncepost/shared/publishing"
	"oncepost/shared/s3media"
	"oncepost/shared/sfnflow"
	"oncepost/shared/slotcontinue"
	"oncepost/shared/sqsqueue"
)

// The environment variables a function reads. Which function needs which
// is in Needs.
const (
	EnvTablePrefix     = "ONCEPOST_TABLE_PREFIX"
	EnvKMSKeyID        = "ONCEPOST_KMS_KEY_ID"
	EnvStaticKey       = "ONCEPOST_STATIC_CREDENTIAL_KEY" // hex; emulators and local runs only
	EnvQueueURL        = "ONCEPOST_QUEUE_URL"
	EnvDeadLetterURL   = "ONCEPOST_DEAD_LETTER_URL"
	EnvStateMachineARN = "ONCEPOST_STATE_MACHINE_ARN"
	EnvMaxReceives     = "ONCEPOST_MAX_RECEIVES"
	EnvOAuthClientID   = "ONCEPOST_OAUTH_CLIENT_ID"
	EnvOAuthSecret     = "ONCEPOST_OAUTH_CLIENT_SECRET"
	EnvMetricsNS       = "ONCEPOST_METRICS_NAMESPACE"
	EnvMediaBucket     = "ONCEPOST_MEDIA_BUCKET"
	// The slot schedules' settings (ebschedule.Config), for a function
	// that schedules posts (the api function's PostScheduler).
	EnvScheduleGroup         = "ONCEPOST_SCHEDULE_GROUP"
	EnvTriggerFunctionARN    = "ONCEPOST_TRIGGER_FUNCTION_ARN"
	EnvSchedulerRoleARN      = "ONCEPOST_SCHEDULER_ROLE_ARN"
	EnvScheduleDeadLetterARN = "ONCEPOST_SCHEDULE_DEAD_LETTER_ARN"
)

// Env is a function's settings, read from the environment.
type Env struct {
	TablePrefix     string
	KMSKeyID        string
	StaticKey       []byte
	QueueURL        string
	DeadLetterURL   string
	StateMachineARN string
	MaxReceives     int
	OAuthClientID   string
	OAuthSecret     string
	MetricsNS       string
	MediaBucket     string
	// ScheduleGroup, TriggerFunctionARN, SchedulerRoleARN and
	// ScheduleDeadLetterARN are the slot schedules' (ebschedule.Config).
	ScheduleGroup         string
	TriggerFunctionARN    string
	SchedulerRoleARN      string
	ScheduleDeadLetterARN string
	// The notifier's and the webhooks function's (webhooks.go).
	EventBusName         string
	WebhookQueueURL      string
	WebhookDeadLetterURL string
}

// ReadEnv reads the settings from the environment; lookup is os.LookupEnv
// in a function, a map in tests.
func ReadEnv(lookup func(string) (string, bool)) (Env, error) {
	get := func(name string) string { v, _ := lookup(name); return v }
	e := Env{
		TablePrefix: get(EnvTablePrefix), KMSKeyID: get(EnvKMSKeyID), QueueURL: get(EnvQueueURL),
		DeadLetterURL: get(EnvDeadLetterURL), StateMachineARN: get(EnvStateMachineARN),
		OAuthClientID: get(EnvOAuthClientID), OAuthSecret: get(EnvOAuthSecret), MetricsNS: get(EnvMetricsNS),
		MediaBucket: get(EnvMediaBucket), ScheduleGroup: get(EnvScheduleGroup), TriggerFunctionARN: get(EnvTriggerFunctionARN),
		SchedulerRoleARN: get(EnvSchedulerRoleARN), ScheduleDeadLetterARN: get(EnvScheduleDeadLetterARN),
		EventBusName: get(EnvEventBusName), WebhookQueueURL: get(EnvWebhookQueueURL),
		WebhookDeadLetterURL: get(EnvWebhookDeadLetterURL),
	}
	if e.MetricsNS == "" {
		e.MetricsNS = "oncepost"
	}
	if v := get(EnvStaticKey); v != "" {
		k, err := hex.DecodeString(v)
		if err != nil || len(k) != 32 {
			return Env{}, fmt.Errorf("%s: want 64 hex digits (a 32-byte key), got %d characters", EnvStaticKey, len(v))
		}
		e.StaticKey = k
	}
	if v := get(EnvMaxReceives); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return Env{}, fmt.Errorf("%s: %q is not a positive number", EnvMaxReceives, v)
		}
		e.MaxReceives = n
	}
	return e, nil
}

// require returns an error naming every variable that is empty.
func require(pairs ...string) error {
	var errs []error
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i+1] == "" {
			errs = append(errs, fmt.Errorf("%s is not set", pairs[i]))
		}
	}
	return errors.Join(errs...)
}

// Runtime holds the AWS clients and adapters a function uses.
type Runtime struct {
	Env     Env
	AWS     aws.Config
	Store   *dynamostore.Store
	Logger  *slog.Logger
	Metrics *emf.Emitter
	// Owner names this function instance in leases.
	Owner string
	// Accounts and Blocklist are the store's, read through an instance
	// cache (CacheFor).
	Accounts  publishing.Accounts
	Blocklist publishing.Blocklist
	// Now is the clock; time.Now.
	Now func() time.Time

	creds *publishing.Credentials
	subs  *CachedSubscriptions
}

// New loads the AWS configuration and builds the store every function
// needs. The credential key comes from KMS (EnvKMSKeyID) or, for
// emulators, a static key (EnvStaticKey). opts are added to the SDK's
// loading (the CLI's measure AWS's clock, awsclock).
func New(ctx context.Context, env Env, owner string, opts ...func(*config.LoadOptions) error) (*Runtime, error) {
	if err := require(EnvTablePrefix, env.TablePrefix); err != nil {
		return nil, err
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	cfg.HTTPClient = awsclient.Wrap(cfg.HTTPClient)
	rt := &Runtime{Env: env, AWS: cfg, Owner: owner, Logger: slog.New(slog.NewJSONHandler(os.Stderr, nil)), Now: time.Now}
	var keys dynamostore.DataKeys
	switch {
	case env.KMSKeyID != "":
		keys = &dynamostore.KMSKeys{Client: kms.NewFromConfig(cfg), KeyID: env.KMSKeyID}
	case env.StaticKey != nil:
		keys = dynamostore.StaticKey(env.StaticKey)
	default:
		return nil, fmt.Errorf("neither %s nor %s is set: credentials cannot be read", EnvKMSKeyID, EnvStaticKey)
	}
	rt.Store, err = dynamostore.New(dynamodb.NewFromConfig(cfg), dynamostore.Options{Prefix: env.TablePrefix, Keys: keys})
	if err != nil {
		return nil, err
	}
	rt.Accounts = newCachedAccounts(rt.Store, rt.Now)
	rt.Blocklist = &cachedBlocklist{list: rt.Store, now: rt.Now}
	rt.Metrics = &emf.Emitter{W: os.Stdout, Namespace: env.MetricsNS, Dimensions: map[string]string{"Runtime": "aws"}}
	return rt, nil
}

// Queue is the publish queue.
func (rt *Runtime) Queue() (*sqsqueue.Queue, error) {
	if err := require(EnvQueueURL, rt.Env.QueueURL, EnvDeadLetterURL, rt.Env.DeadLetterURL); err != nil {
		return nil, err
	}
	return sqsqueue.New(sqs.NewFromConfig(rt.AWS), rt.Env.QueueURL, rt.Env.DeadLetterURL, sqsqueue.Options{MaxReceives: rt.Env.MaxReceives, Logger: rt.Logger})
}

// Workflows is the confirm state machine.
func (rt *Runtime) Workflows() (*sfnflow.StateMachine, error) {
	if err := require(EnvStateMachineARN, rt.Env.StateMachineARN); err != nil {
		return nil, err
	}
	return sfnflow.New(sfn.NewFromConfig(rt.AWS), rt.Env.StateMachineARN)
}

// Media is the attachments' bucket. With AWS_ENDPOINT_URL_S3 set (an
// emulator) it addresses the bucket in the path, not the host name.
func (rt *Runtime) Media() (*s3media.Store, error) {
	if err := require(EnvMediaBucket, rt.Env.MediaBucket); err != nil {
		return nil, err
	}
	pathStyle := os.Getenv("AWS_ENDPOINT_URL_S3") != ""
	client := s3.NewFromConfig(rt.AWS, func(o *s3.Options) { o.UsePathStyle = pathStyle })
	return s3media.New(client, s3.NewPresignClient(client), rt.Env.MediaBucket)
}

// Platforms reaches every account through its platform's adapter; the
// deployment's OAuth app is Mastodon's (the other platforms' credentials
// name their app).
func (rt *Runtime) Platforms() publishing.Platforms {
	return catalog.Connector{Mastodon: mastodon.Connector{ClientID: rt.Env.OAuthClientID, ClientSecret: rt.Env.OAuthSecret}}
}

// Credentials is the credential reader and refresher shared by the use
// cases of one function instance (one per Runtime: a rotated credential
// that could not be saved is kept in it).
func (rt *Runtime) Credentials(callTimeout time.Duration) *publishing.Credentials {
	if rt.creds == nil {
		rt.creds = &publishing.Credentials{Accounts: rt.Accounts, Owner: rt.Owner, CallTimeout: callTimeout, Metrics: rt.Metrics, Logger: rt.Logger}
	}
	return rt.creds
}

// Confirmer runs the confirm workflow's steps.
func (rt *Runtime) Confirmer(lookTimeout time.Duration) (*publishing.Confirmer, error) {
	q, err := rt.Queue()
	if err != nil {
		return nil, err
	}
	flows, err := rt.Workflows()
	if err != nil {
		return nil, err
	}
	return &publishing.Confirmer{
		Ledger: rt.Store, Posts: rt.Store, Accounts: rt.Accounts, Platforms: rt.Platforms(), Queue: q, Tasks: flows,
		Credentials: rt.Credentials(lookTimeout), Metrics: rt.Metrics, CallTimeout: lookTimeout, Logger: rt.Logger,
	}, nil
}

// Publisher runs the publish use case; callTimeout bounds one platform
// call (the function's timeout must leave room for a batch of them).
func (rt *Runtime) Publisher(callTimeout time.Duration) (*publishing.Publisher, error) {
	flows, err := rt.Workflows()
	if err != nil {
		return nil, err
	}
	media, err := rt.Media()
	if err != nil {
		return nil, err
	}
	return &publishing.Publisher{
		Ledger: rt.Store, Posts: rt.Store, Accounts: rt.Accounts, Pacer: rt.Store, Flows: flows, Platforms: rt.Platforms(), Media: media, MediaURLs: media,
		Credentials: rt.Credentials(callTimeout), Blocklist: rt.Blocklist, Metrics: rt.Metrics,
		Owner: rt.Owner, CallTimeout: callTimeout, Logger: rt.Logger,
	}, nil
}

// Trigger enqueues due targets. Slot firings are claimed and recorded in
// the store under the instance's name; in a Lambda function
// (AWS_LAMBDA_FUNCTION_NAME set) a slot too large for one invocation is
// continued by invoking the function itself (slotcontinue).
func (rt *Runtime) Trigger() (*publishing.Trigger, error) {
	q, err := rt.Queue()
	if err != nil {
		return nil, err
	}
	tr := &publishing.Trigger{Posts: rt.Store, Queue: q, Owner: rt.Owner, Logger: rt.Logger}
	if fn := os.Getenv("AWS_LAMBDA_FUNCTION_NAME"); fn != "" {
		c, err := slotcontinue.New(lambda.NewFromConfig(rt.AWS), fn)
		if err != nil {
			return nil, err
		}
		tr.Continuer = c
	}
	return tr, nil
}

// PostScheduler writes posts and their slots' schedules
// (awsschedule.PostScheduler): the store, the slot schedules of
// EnvScheduleGroup invoking EnvTriggerFunctionARN as EnvSchedulerRoleARN
// (dead letters to EnvScheduleDeadLetterARN), and a trigger for slots too
// near to schedule, all on the runtime's clock (Now).
func (rt *Runtime) PostScheduler() (*awsschedule.PostScheduler, error) {
	if err := require(EnvScheduleGroup, rt.Env.ScheduleGroup, EnvTriggerFunctionARN, rt.Env.TriggerFunctionARN,
		EnvSchedulerRoleARN, rt.Env.SchedulerRoleARN, EnvScheduleDeadLetterARN, rt.Env.ScheduleDeadLetterARN); err != nil {
		return nil, err
	}
	q, err := rt.Queue()
	if err != nil {
		return nil, err
	}
	slots, err := ebschedule.New(scheduler.NewFromConfig(rt.AWS), ebschedule.Config{
		Group: rt.Env.ScheduleGroup, FunctionARN: rt.Env.TriggerFunctionARN, RoleARN: rt.Env.SchedulerRoleARN,
		DeadLetterARN: rt.Env.ScheduleDeadLetterARN, Now: rt.Now,
	})
	if err != nil {
		return nil, err
	}
	return &awsschedule.PostScheduler{
		Store: rt.Store, Slots: slots, Now: rt.Now,
		Trigger: &publishing.Trigger{Posts: rt.Store, Queue: q, Now: rt.Now, Owner: rt.Owner, Logger: rt.Logger},
	}, nil
}

// SweeperMissedAfter is how late a scheduled target may be before the
// sweeper on AWS triggers it (awsschedule.SweeperMissedAfter: why two
// minutes is a slot schedule's matter).
const SweeperMissedAfter = awsschedule.SweeperMissedAfter

// Sweeper finds what is not progressing and repairs it by re-enqueueing
// or starting confirm workflows; stale delete entries are read back, and
// operators' recorded decisions that did not take effect are delivered
// again or applied.
func (rt *Runtime) Sweeper(callTimeout time.Duration) (*publishing.Sweeper, error) {
	pub, err := rt.Publisher(callTimeout)
	if err != nil {
		return nil, err
	}
	conf, err := rt.Confirmer(callTimeout)
	if err != nil {
		return nil, err
	}
	tr, err := rt.Trigger()
	if err != nil {
		return nil, err
	}
	del := &publishing.Deleter{
		Ledger: rt.Store, Posts: rt.Store, Accounts: rt.Accounts, Platforms: rt.Platforms(), Credentials: rt.Credentials(callTimeout),
		Metrics: rt.Metrics, Owner: rt.Owner, CallTimeout: callTimeout, Logger: rt.Logger,
	}
	sw := &publishing.Sweeper{
		Ledger: rt.Store, Posts: rt.Store, Queue: tr.Queue, Trigger: tr, Publisher: pub, Deleter: del, Metrics: rt.Metrics,
		Operator:    &publishing.Operator{Ledger: rt.Store, Confirmer: conf, Tasks: conf.Tasks, Logger: rt.Logger},
		MissedAfter: SweeperMissedAfter, Logger: rt.Logger,
	}
	// The sweeper creates recurring rules' occurrences and schedules
	// them, with the slot schedules' settings (the template sets them).
	if rt.Env.ScheduleGroup == "" {
		rt.Logger.Warn("recurring rules are not materialized here: " + EnvScheduleGroup + " is not set")
		return sw, nil
	}
	if sw.Recurring, err = rt.Recurring(callTimeout); err != nil {
		return nil, err
	}
	return sw, nil
}
