package ebschedule

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	"github.com/aws/smithy-go"

	"oncepost/shared/localcron"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// Errors of the package. Scheduler's exceptions are translated to them at
// the edge (wrapped, with the service's message); other failures (network,
// InternalServerException, a cancelled context) are wrapped as they are.
var (
	// ErrConflict is Scheduler's ConflictException on an update or delete
	// ("Updating or deleting the resource can cause an inconsistent
	// state"). A create of an existing name never surfaces it: Put and
	// PutRecurring update the schedule instead.
	ErrConflict = errors.New("schedule conflict")
	// ErrNotFound is ResourceNotFoundException where it is a failure: a
	// create or update into a schedule group that does not exist. A delete
	// of a missing schedule is success.
	ErrNotFound = errors.New("schedule or schedule group not found")
	// ErrThrottled is ThrottlingException, after the SDK's own retries.
	ErrThrottled = errors.New("scheduler throttled the request")
	// ErrInvalid is ValidationException, and the same refusals made here
	// before anything is sent (a bad name, expression, zone or input).
	ErrInvalid = errors.New("invalid schedule")
	// ErrQuotaExceeded is ServiceQuotaExceededException (too many
	// schedules in the Region).
	ErrQuotaExceeded = errors.New("scheduler quota exceeded")
	// ErrDue is returned by Put (and Move) for a slot too close to
	// schedule: its FireTime is less than MinLead from now. Nothing was
	// written; the caller triggers the target itself, enqueueing its job
	// with Delay(slot, now), which is then under 3 minutes.
	ErrDue = errors.New("slot is too close to schedule: trigger it now")
)

// Defaults of RetryPolicy when Config.Retry is nil.
const (
	// DefaultMaxEventAge keeps retrying, for an hour, an invocation Lambda
	// did not accept (throttled, the service failing). Scheduler invokes
	// Lambda asynchronously: once Lambda queued the event, a function
	// error or timeout is Lambda's to retry (the trigger's
	// EventInvokeConfig in template.yaml: twice, then its on-failure
	// destination, which alarms), never Scheduler's. The sweeper triggers
	// a target its schedule missed well before either gives up.
	DefaultMaxEventAge = time.Hour
	// DefaultMaxAttempts is Scheduler's largest MaximumRetryAttempts.
	DefaultMaxAttempts = 185
)

// Targets is the port for one-time target schedules: what the embedded
// runtime does with localcron (scheduleTx, the reschedule and cancel
// paths), on EventBridge Scheduler.
type Targets interface {
	// Put makes sure the target has its schedule, firing at
	// FireTime(ref.Slot). Putting the same target again is a no-op. A
	// slot too close to schedule is ErrDue: the caller enqueues the job
	// itself with Delay.
	Put(ctx context.Context, ref publishing.TargetRef) error
	// Move reschedules a target from one slot to another: the new slot's
	// schedule is created, then the old one deleted.
	Move(ctx context.Context, from, to publishing.TargetRef) error
	// Delete removes the target's schedule; a missing one is success.
	Delete(ctx context.Context, ref publishing.TargetRef) error
}

// Recurring is the port for recurring (cron or rate) schedules evaluated
// in an IANA time zone.
type Recurring interface {
	// PutRecurring creates the named schedule or replaces it.
	PutRecurring(ctx context.Context, name, expression, zone string, input json.RawMessage) error
	// DeleteRecurring removes the named schedule; a missing one is
	// success.
	DeleteRecurring(ctx context.Context, name string) error
}

// API is the part of the EventBridge Scheduler client this package calls;
// *scheduler.Client satisfies it.
type API interface {
	// CreateSchedule is POST /schedules/{Name}.
	CreateSchedule(ctx context.Context, in *scheduler.CreateScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error)
	// UpdateSchedule is PUT /schedules/{Name}.
	UpdateSchedule(ctx context.Context, in *scheduler.UpdateScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.UpdateScheduleOutput, error)
	// DeleteSchedule is DELETE /schedules/{Name}.
	DeleteSchedule(ctx context.Context, in *scheduler.DeleteScheduleInput, optFns ...func(*scheduler.Options)) (*scheduler.DeleteScheduleOutput, error)
}

var (
	_ API       = (*scheduler.Client)(nil)
	_ Targets   = (*Client)(nil)
	_ Recurring = (*Client)(nil)
)

// RetryPolicy is the schedule's RetryPolicy: how long and how often
// Scheduler retries an invocation Lambda did not accept
// (https://docs.aws.amazon.com/scheduler/latest/APIReference/API_RetryPolicy.html).
// It never sees the function fail: Scheduler invokes Lambda
// asynchronously, and the function's own errors are retried, and then
// dropped to the on-failure destination, by Lambda's asynchronous
// invocation (the function's EventInvokeConfig).
type RetryPolicy struct {
	// MaxEventAge is MaximumEventAgeInSeconds: 60 s to 24 h, whole seconds.
	MaxEventAge time.Duration
	// MaxAttempts is MaximumRetryAttempts: 0 to 185.
	MaxAttempts int32
}

// Config configures a Client. Everything but Group, Retry and Now is
// required.
type Config struct {
	// Group is the schedule group every schedule is written to; "" is the
	// account's "default" group. A deployment names its own group (and
	// creates it) so that the execution role and IAM policies can be
	// scoped to it.
	Group string
	// FunctionARN is the trigger Lambda function every schedule invokes (a
	// templated Lambda Invoke target):
	// arn:aws:lambda:<region>:<account>:function:<name>[:<qualifier>].
	FunctionARN string
	// RoleARN is the execution role Scheduler assumes to invoke the
	// function and to send to the dead-letter queue (lambda:InvokeFunction
	// and sqs:SendMessage).
	RoleARN string
	// DeadLetterARN is the standard SQS queue receiving invocations
	// Lambda did not accept past the retry policy (Scheduler does not
	// support FIFO dead-letter queues; the API's ARN pattern refuses
	// ".fifo"). A function that fails is not among them: its events go to
	// its EventInvokeConfig's on-failure destination.
	DeadLetterARN string
	// Retry is the invocation retry policy; nil is DefaultMaxEventAge and
	// DefaultMaxAttempts.
	Retry *RetryPolicy
	// Now is the clock Put compares FireTime with (ErrDue) and
	// PutRecurring anchors expression checks to; nil is time.Now. It
	// should be Scheduler's: the operator CLI gives AWS's time as measured
	// on the stack's answers (awsclock), so that a skewed local clock
	// cannot schedule a firing that AWS already has behind it.
	Now func() time.Time
}

// Client writes target and recurring schedules to EventBridge Scheduler.
// It is safe for concurrent use.
type Client struct {
	api     API
	group   string
	fn      string
	role    string
	dlq     string
	maxAge  int32
	retries int32
	now     func() time.Time
}

// ARN shapes the configuration must have: a Lambda function (optionally
// qualified), an IAM role and an SQS queue as the API's RoleArn and
// DeadLetterConfig patterns give them
// (https://docs.aws.amazon.com/scheduler/latest/APIReference/API_Target.html,
// https://docs.aws.amazon.com/scheduler/latest/APIReference/API_DeadLetterConfig.html).
var (
	functionARN = regexp.MustCompile(`^arn:aws(-[a-z]+)?:lambda:[a-z0-9-]+:\d{12}:function:[a-zA-Z0-9_-]{1,64}(:(\$LATEST|[a-zA-Z0-9_-]+))?$`)
	roleARN     = regexp.MustCompile(`^arn:aws(-[a-z]+)?:iam::\d{12}:role/[\w+=,.@/-]+$`)
	queueARN    = regexp.MustCompile(`^arn:aws(-[a-z]+)?:sqs:[a-z0-9-]+:\d{12}:[a-zA-Z0-9_-]+$`)
)

// New returns a Client writing through api with cfg, or an error naming
// the first bad field (wrapping ErrInvalid).
func New(api API, cfg Config) (*Client, error) {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("ebschedule: %s: %s: %w", field, fmt.Sprintf(format, args...), ErrInvalid)
	}
	if api == nil {
		return nil, bad("api", "is nil")
	}
	c := &Client{api: api, group: cfg.Group, fn: cfg.FunctionARN, role: cfg.RoleARN, dlq: cfg.DeadLetterARN, now: cfg.Now}
	if c.group == "" {
		c.group = "default"
	}
	if !validName(c.group) {
		return nil, bad("Group", "%q is not 1-%d of [0-9a-zA-Z-_.]", cfg.Group, MaxNameLen)
	}
	if len(c.fn) > 1600 || !functionARN.MatchString(c.fn) {
		return nil, bad("FunctionARN", "%q is not a Lambda function ARN", cfg.FunctionARN)
	}
	if len(c.role) > 1600 || !roleARN.MatchString(c.role) {
		return nil, bad("RoleARN", "%q is not an IAM role ARN", cfg.RoleARN)
	}
	if strings.HasSuffix(c.dlq, ".fifo") {
		return nil, bad("DeadLetterARN", "%q is a FIFO queue: Scheduler needs a standard queue", cfg.DeadLetterARN)
	}
	if len(c.dlq) > 1600 || !queueARN.MatchString(c.dlq) {
		return nil, bad("DeadLetterARN", "%q is not an SQS queue ARN", cfg.DeadLetterARN)
	}
	r := RetryPolicy{MaxEventAge: DefaultMaxEventAge, MaxAttempts: DefaultMaxAttempts}
	if cfg.Retry != nil {
		r = *cfg.Retry
	}
	if r.MaxEventAge < time.Minute || r.MaxEventAge > 24*time.Hour || r.MaxEventAge%time.Second != 0 {
		return nil, bad("Retry.MaxEventAge", "%s: want whole seconds from 60s to 24h", r.MaxEventAge)
	}
	if r.MaxAttempts < 0 || r.MaxAttempts > 185 {
		return nil, bad("Retry.MaxAttempts", "%d: want 0 to 185", r.MaxAttempts)
	}
	c.maxAge, c.retries = int32(r.MaxEventAge/time.Second), r.MaxAttempts
	if c.now == nil {
		c.now = time.Now
	}
	return c, nil
}

// Group is the schedule group the client writes to.
func (c *Client) Group() string { return c.group }

// schedule is what one schedule is made of, apart from the client's
// target configuration.
type schedule struct {
	name, expression, zone, description, input string
	action                                     types.ActionAfterCompletion
}

// Put creates the target's one-time schedule: at(FireTime(ref.Slot)) in
// UTC, in the client's group, ActionAfterCompletion DELETE, no flexible
// window, invoking the trigger function with the target's Input. The
// create carries a ClientToken derived from the whole request, so a
// retried create (by the SDK, or by a caller that did not see the answer)
// is a no-op. A schedule that already exists under the name (the same
// target and slot: the content is the same, unless the configuration
// changed) is rewritten with UpdateSchedule; one that disappeared
// meanwhile (it fired, or a Delete took it) is left gone.
//
// A slot whose FireTime is less than MinLead away is ErrDue and nothing
// is written.
func (c *Client) Put(ctx context.Context, ref publishing.TargetRef) error {
	s, err := c.targetSchedule(ref)
	if err != nil {
		return err
	}
	if fire := FireTime(ref.Slot); fire.Before(c.now().Add(MinLead)) {
		return fmt.Errorf("ebschedule: put %s: fires at %s, less than %s from now: %w", s.name, fire.Format(time.RFC3339), MinLead, ErrDue)
	}
	return c.write(ctx, s, true)
}

// Move reschedules a target by creating the new slot's schedule and then
// deleting the old slot's, never by updating in place: names carry the
// slot, so an older request that arrives late can only (re)create the old
// slot's schedule, never overwrite the new one, and a schedule for an old
// slot that fires anyway is dropped by the trigger (the target's slot no
// longer matches). Create first, so no crash between the two calls leaves
// the target without a schedule.
//
// If the new slot is ErrDue, the old schedule is still deleted and ErrDue
// returned: the caller triggers the target itself. If creating fails
// otherwise, the old schedule is kept and the error returned.
func (c *Client) Move(ctx context.Context, from, to publishing.TargetRef) error {
	if Name(from) == Name(to) {
		return c.Put(ctx, to)
	}
	putErr := c.Put(ctx, to)
	if putErr != nil && !errors.Is(putErr, ErrDue) {
		return putErr
	}
	return errors.Join(putErr, c.Delete(ctx, from))
}

// Delete deletes the target's schedule (cancel). A schedule that does not
// exist (never created, already fired, deleted before) is success. The
// ClientToken is left to the SDK (one random token per call, reused by its
// retries): a deterministic one could make a later delete of a re-created
// schedule look like a replay of the first.
func (c *Client) Delete(ctx context.Context, ref publishing.TargetRef) error {
	return c.delete(ctx, Name(ref))
}

// PutRecurring creates or replaces the named recurring schedule:
// expression is a cron() or rate() expression evaluated in the IANA time
// zone zone ("" is UTC), checked with localcron's parser before anything
// is sent; input is the JSON handed to the trigger function as is. The
// name may not start with "post." or "post-" (target schedules' names).
// ActionAfterCompletion is NONE: a recurring schedule without an end
// never completes. A replaced schedule takes the last write (recurring
// schedules are configuration, not per-post slots).
func (c *Client) PutRecurring(ctx context.Context, name, expression, zone string, input json.RawMessage) error {
	if err := checkRecurringName(name); err != nil {
		return err
	}
	if strings.HasPrefix(strings.TrimSpace(expression), "at(") {
		return fmt.Errorf("ebschedule: put %s: %q is a one-time expression: use Put: %w", name, expression, ErrInvalid)
	}
	if zone == "" {
		zone = "UTC"
	}
	if len(zone) > 50 {
		return fmt.Errorf("ebschedule: put %s: time zone %q is longer than 50 bytes: %w", name, zone, ErrInvalid)
	}
	if _, err := localcron.Parse(expression, zone, c.now()); err != nil {
		return fmt.Errorf("ebschedule: put %s: %w: %w", name, ErrInvalid, err)
	}
	if len(input) == 0 || !json.Valid(input) {
		return fmt.Errorf("ebschedule: put %s: input is not JSON (Lambda targets need well-formed JSON): %w", name, ErrInvalid)
	}
	s := schedule{name: name, expression: expression, zone: zone, input: string(input), action: types.ActionAfterCompletionNone,
		description: "oncepost recurring schedule " + name}
	return c.write(ctx, s, false)
}

// DeleteRecurring deletes the named recurring schedule; a missing one is
// success.
func (c *Client) DeleteRecurring(ctx context.Context, name string) error {
	if err := checkRecurringName(name); err != nil {
		return err
	}
	return c.delete(ctx, name)
}

func checkRecurringName(name string) error {
	if !validName(name) {
		return fmt.Errorf("ebschedule: name %q is not 1-%d of [0-9a-zA-Z-_.]: %w", name, MaxNameLen, ErrInvalid)
	}
	if strings.HasPrefix(name, readablePrefix) || strings.HasPrefix(name, hashedPrefix) || strings.HasPrefix(name, SlotPrefix) {
		return fmt.Errorf("ebschedule: name %q starts like a target or slot schedule's (%q, %q, %q): %w", name, readablePrefix, hashedPrefix, SlotPrefix, ErrInvalid)
	}
	return nil
}

// targetSchedule builds a target's schedule and checks its expression
// with localcron, so every at() written here is one the embedded runtime
// would accept too.
func (c *Client) targetSchedule(ref publishing.TargetRef) (schedule, error) {
	name := Name(ref)
	switch {
	case ref.Post == "":
		return schedule{}, fmt.Errorf("ebschedule: target: post id is empty: %w", ErrInvalid)
	case ref.Account == "":
		return schedule{}, fmt.Errorf("ebschedule: target: account id is empty: %w", ErrInvalid)
	case ref.Slot.IsZero():
		return schedule{}, fmt.Errorf("ebschedule: target: slot is zero: %w", ErrInvalid)
	}
	if y := ref.Slot.UTC().Year(); y < post.MinSlotYear || y > post.MaxSlotYear {
		return schedule{}, fmt.Errorf("ebschedule: put %s: slot year %d is outside %d-%d: %w", name, y, post.MinSlotYear, post.MaxSlotYear, ErrInvalid)
	}
	fire := FireTime(ref.Slot)
	expr := AtExpression(fire)
	sched, err := localcron.Parse(expr, "UTC", time.Time{})
	if err != nil {
		return schedule{}, fmt.Errorf("ebschedule: put %s: %w: %w", name, ErrInvalid, err)
	}
	if next, ok := sched.Next(fire.Add(-time.Nanosecond)); !ok || !next.Equal(fire) {
		return schedule{}, fmt.Errorf("ebschedule: put %s: %s does not fire at %s: %w", name, expr, fire.Format(time.RFC3339), ErrInvalid)
	}
	input, err := encodeInput(ref)
	if err != nil {
		return schedule{}, fmt.Errorf("ebschedule: put %s: %w", name, err)
	}
	desc := fmt.Sprintf("oncepost target post=%s account=%s slot=%s", ref.Post, ref.Account, ref.Slot.UTC().Format(time.RFC3339Nano))
	if len(desc) > 512 {
		desc = desc[:512]
	}
	return schedule{name: name, expression: expr, zone: "UTC", input: input, description: desc, action: types.ActionAfterCompletionDelete}, nil
}

// AtExpression is the one-time expression firing at t (whole seconds, in
// UTC): at(yyyy-mm-ddThh:mm:ss), written with ScheduleExpressionTimezone
// "UTC".
func AtExpression(t time.Time) string {
	return "at(" + t.UTC().Format("2006-01-02T15:04:05") + ")"
}

// write creates s, or updates it when the name exists. goneOK says a
// schedule that vanished between the two calls is success (a target's:
// it fired or was deleted; re-creating it would undo a cancel).
func (c *Client) write(ctx context.Context, s schedule, goneOK bool) error {
	_, err := c.api.CreateSchedule(ctx, &scheduler.CreateScheduleInput{
		Name:                       aws.String(s.name),
		GroupName:                  aws.String(c.group),
		ScheduleExpression:         aws.String(s.expression),
		ScheduleExpressionTimezone: aws.String(s.zone),
		FlexibleTimeWindow:         &types.FlexibleTimeWindow{Mode: types.FlexibleTimeWindowModeOff},
		Target:                     c.target(s.input),
		ActionAfterCompletion:      s.action,
		Description:                aws.String(s.description),
		State:                      types.ScheduleStateEnabled,
		ClientToken:                aws.String(c.token("create", s)),
	})
	if err == nil {
		return nil
	}
	if !errors.As(err, new(*types.ConflictException)) {
		return translate("create", s.name, err)
	}
	// The name exists. UpdateSchedule replaces every field (omitted ones
	// go back to their defaults), so the whole schedule is sent again.
	_, err = c.api.UpdateSchedule(ctx, &scheduler.UpdateScheduleInput{
		Name:                       aws.String(s.name),
		GroupName:                  aws.String(c.group),
		ScheduleExpression:         aws.String(s.expression),
		ScheduleExpressionTimezone: aws.String(s.zone),
		FlexibleTimeWindow:         &types.FlexibleTimeWindow{Mode: types.FlexibleTimeWindowModeOff},
		Target:                     c.target(s.input),
		ActionAfterCompletion:      s.action,
		Description:                aws.String(s.description),
		State:                      types.ScheduleStateEnabled,
		ClientToken:                aws.String(c.token("update", s)),
	})
	if err != nil && goneOK && errors.As(err, new(*types.ResourceNotFoundException)) {
		return nil
	}
	if err != nil {
		return translate("update", s.name, err)
	}
	return nil
}

func (c *Client) delete(ctx context.Context, name string) error {
	_, err := c.api.DeleteSchedule(ctx, &scheduler.DeleteScheduleInput{Name: aws.String(name), GroupName: aws.String(c.group)})
	if err == nil || errors.As(err, new(*types.ResourceNotFoundException)) {
		return nil
	}
	return translate("delete", name, err)
}

// target is the templated Lambda Invoke target with the client's role,
// retry policy and dead-letter queue.
func (c *Client) target(input string) *types.Target {
	return &types.Target{
		Arn:              aws.String(c.fn),
		RoleArn:          aws.String(c.role),
		Input:            aws.String(input),
		RetryPolicy:      &types.RetryPolicy{MaximumEventAgeInSeconds: aws.Int32(c.maxAge), MaximumRetryAttempts: aws.Int32(c.retries)},
		DeadLetterConfig: &types.DeadLetterConfig{Arn: aws.String(c.dlq)},
	}
}

// token is the ClientToken of a create or update of s: SHA-256 over the
// operation and every field sent, in hex (64 of [a-zA-Z0-9-_], the API's
// limit). The same request always carries the same token; a request that
// differs in anything (another slot, a new function ARN) carries another.
func (c *Client) token(op string, s schedule) string {
	h := sha256.New()
	for _, f := range []string{op, c.group, s.name, s.expression, s.zone, s.input, s.description, string(s.action),
		c.fn, c.role, c.dlq, strconv.Itoa(int(c.maxAge)), strconv.Itoa(int(c.retries))} {
		h.Write([]byte(strconv.Itoa(len(f))))
		h.Write([]byte{':'})
		h.Write([]byte(f))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// translate maps Scheduler's exceptions to the package's errors, keeping
// the service's message; anything else is wrapped as it is.
func translate(op, name string, err error) error {
	var kind error
	switch {
	case errors.As(err, new(*types.ConflictException)):
		kind = ErrConflict
	case errors.As(err, new(*types.ResourceNotFoundException)):
		kind = ErrNotFound
	case errors.As(err, new(*types.ThrottlingException)):
		kind = ErrThrottled
	case errors.As(err, new(*types.ValidationException)):
		kind = ErrInvalid
	case errors.As(err, new(*types.ServiceQuotaExceededException)):
		kind = ErrQuotaExceeded
	default:
		return fmt.Errorf("ebschedule: %s %s: %w", op, name, err)
	}
	msg := ""
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		msg = apiErr.ErrorCode() + ": " + apiErr.ErrorMessage()
	}
	return fmt.Errorf("ebschedule: %s %s: %w (%s)", op, name, kind, msg)
}
