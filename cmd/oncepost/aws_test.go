package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/google/go-cmp/cmp"

	"oncepost/shared/dynamostore"
	"oncepost/shared/ebschedule"
	"oncepost/shared/emulatortest"
	"oncepost/shared/ledger"
	"oncepost/shared/platform/sandbox"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
	"oncepost/shared/s3media"
	"oncepost/shared/sqsqueue"
)

// The names the test stack's resources have.
const (
	testStackName     = "oncepost-test"
	testTablePrefix   = "oncepost-test-"
	testScheduleGroup = "oncepost-test-slots"
	testMediaBucket   = "oncepost-test-media"
	testTriggerARN    = "arn:aws:lambda:us-east-1:000000000000:function:oncepost-test-trigger"
	testSchedulerRole = "arn:aws:iam::000000000000:role/oncepost-test-scheduler"
	testScheduleDLQ   = "arn:aws:sqs:us-east-1:000000000000:oncepost-test-schedule-dlq"
	testMachineARN    = "arn:aws:states:us-east-1:000000000000:stateMachine:oncepost-test-confirm"
)

// awsStack is an oncepost stack on this machine: its tables on dynalite,
// its queues on fauxqs (both emulatortest processes, stopped by PID), and
// fakes for Scheduler, Step Functions and CloudFormation; the CLI runs as
// child processes pointed at them by the standard AWS_ENDPOINT_URL_*
// variables, with the stack's Outputs in a file.
type awsStack struct {
	t           *testing.T
	outputs     stackOutputs
	outputsFile string
	// env is the child processes' AWS and oncepost settings.
	env       []string
	store     *dynamostore.Store
	sqs       *sqs.Client
	queue     *sqsqueue.Queue
	media     *s3media.Store
	scheduler *fakeScheduler
	flows     *fakeStepFunctions
	cfn       *fakeCloudFormation

	mu sync.Mutex
	// printed is every command's output, checked for tokens.
	printed []string
}

// childEnv is the environment of a child process against endpoints:
// the parent's without its AWS settings, plus static test credentials and
// the endpoints given (service id → URL).
func childEnv(dir string, endpoints map[string]string, extra ...string) []string {
	env := []string{
		"AWS_REGION=" + emulatortest.Region,
		"AWS_ACCESS_KEY_ID=AKIDEMULATOR", "AWS_SECRET_ACCESS_KEY=emulator-secret",
		"AWS_CONFIG_FILE=" + filepath.Join(dir, "no-aws-config"), "AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(dir, "no-aws-credentials"),
		"AWS_EC2_METADATA_DISABLED=true", "AWS_MAX_ATTEMPTS=3",
	}
	for service, url := range endpoints {
		env = append(env, "AWS_ENDPOINT_URL_"+service+"="+url)
	}
	return append(env, extra...)
}

func newAWSStack(t *testing.T) *awsStack {
	t.Helper()
	ctx := t.Context()
	ddbURL, sqsURL := emulatortest.Dynalite(t), emulatortest.Fauxqs(t)
	ddb := dynamodb.NewFromConfig(emulatortest.AWSConfig(t, ddbURL))
	if err := dynamostore.CreateTables(ctx, ddb, testTablePrefix); err != nil {
		t.Fatal(err)
	}
	sq := sqs.NewFromConfig(emulatortest.AWSConfig(t, sqsURL))
	queueURL, dlqURL := createTestQueue(t, sq, "oncepost-test-publish"), createTestQueue(t, sq, "oncepost-test-publish-dlq")
	key := dynamostore.NewStaticKey()
	store, err := dynamostore.New(ddb, dynamostore.Options{Prefix: testTablePrefix, Keys: key})
	if err != nil {
		t.Fatal(err)
	}
	queue, err := sqsqueue.New(sq, queueURL, dlqURL, sqsqueue.Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	// fauxqs serves S3 too: the attachments' bucket.
	s3client := s3.NewFromConfig(emulatortest.AWSConfig(t, sqsURL), func(o *s3.Options) { o.UsePathStyle = true })
	if _, err := s3client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(testMediaBucket)}); err != nil {
		t.Fatal(err)
	}
	media, err := s3media.New(s3client, s3.NewPresignClient(s3client), testMediaBucket)
	if err != nil {
		t.Fatal(err)
	}
	st := &awsStack{t: t, store: store, sqs: sq, queue: queue, media: media, scheduler: newFakeScheduler(t, testScheduleGroup), flows: newFakeStepFunctions(t)}
	st.outputs = stackOutputs{
		outTablePrefix: testTablePrefix, outQueueURL: queueURL, outDeadLetterQueueURL: dlqURL, outStateMachineARN: testMachineARN,
		outScheduleGroupName: testScheduleGroup, outSchedulerRoleARN: testSchedulerRole, outScheduleDLQARN: testScheduleDLQ,
		outTriggerFunctionARN: testTriggerARN, outMetricsNamespace: "oncepost-test", outMediaBucketName: testMediaBucket,
		// No KmsKeyId: the credentials' data key is the static key, as the
		// stack's functions on emulators have it.
	}
	st.cfn = newFakeCloudFormation(t, map[string]stackOutputs{testStackName: st.outputs})
	dir := t.TempDir()
	st.outputsFile = filepath.Join(dir, "outputs.json")
	raw, err := json.Marshal(st.outputs)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(st.outputsFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	st.env = childEnv(dir, map[string]string{
		"DYNAMODB": ddbURL, "SQS": sqsURL, "S3": sqsURL, "SFN": st.flows.url, "SCHEDULER": st.scheduler.url, "CLOUDFORMATION": st.cfn.url,
	}, "ONCEPOST_STATIC_CREDENTIAL_KEY="+hex.EncodeToString(key))
	return st
}

func createTestQueue(t *testing.T, client *sqs.Client, name string) string {
	t.Helper()
	out, err := client.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: &name,
		Attributes: map[string]string{"MaximumMessageSize": strconv.Itoa(1 << 20)}})
	if err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
	return *out.QueueUrl
}

// runChild runs one oncepost command as a child process with env added to
// the parent's environment minus its AWS settings.
func runChild(t *testing.T, env []string, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := oncepostCmd(t, args...)
	cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "AWS_") || strings.HasPrefix(kv, "ONCEPOST_STATIC") })
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("oncepost %q: %v", args, err)
	}
	return code, out.String(), errOut.String()
}

// cli runs `oncepost ARGS --backend aws --outputs FILE`.
func (st *awsStack) cli(stdin string, args ...string) (code int, stdout, stderr string) {
	st.t.Helper()
	code, stdout, stderr = runChild(st.t, st.env, stdin, append(args, "--backend", "aws", "--outputs", st.outputsFile)...)
	st.mu.Lock()
	st.printed = append(st.printed, stdout, stderr)
	st.mu.Unlock()
	return code, stdout, stderr
}

// ok runs a command that must succeed and returns its stdout.
func (st *awsStack) ok(stdin string, args ...string) string {
	st.t.Helper()
	code, out, errOut := st.cli(stdin, args...)
	if code != exitOK {
		st.t.Fatalf("oncepost %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// okJSON runs a command with --json that must succeed and decodes its output.
func (st *awsStack) okJSON(v any, args ...string) {
	st.t.Helper()
	out := st.ok("", append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		st.t.Fatalf("oncepost %s --json printed %q: %v", strings.Join(args, " "), out, err)
	}
}

// received drains the publish queue (as the publisher would receive it)
// and returns the jobs' posts, sorted.
func (st *awsStack) received() []post.ID {
	st.t.Helper()
	var out []post.ID
	for {
		msgs, err := st.queue.Receive(st.t.Context(), 10, time.Minute)
		if err != nil {
			st.t.Fatal(err)
		}
		if len(msgs) == 0 {
			break
		}
		for _, m := range msgs {
			job, err := publishing.DecodeJob(m.Body)
			if err != nil {
				st.t.Fatalf("a queued body is not a job: %q: %v", m.Body, err)
			}
			out = append(out, job.Post)
			if err := st.queue.Ack(st.t.Context(), m.Receipt); err != nil {
				st.t.Fatal(err)
			}
		}
	}
	slices.Sort(out)
	return out
}

// delayed is how many messages of the publish queue are delayed.
func (st *awsStack) delayed() int {
	st.t.Helper()
	attr := sqstypes.QueueAttributeNameApproximateNumberOfMessagesDelayed
	out, err := st.sqs.GetQueueAttributes(st.t.Context(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(st.outputs[outQueueURL]), AttributeNames: []sqstypes.QueueAttributeName{attr}})
	if err != nil {
		st.t.Fatal(err)
	}
	n, err := strconv.Atoi(out.Attributes[string(attr)])
	if err != nil {
		st.t.Fatalf("%s %q: %v", attr, out.Attributes[string(attr)], err)
	}
	return n
}

// target reads a post's only target from the stack's table.
func (st *awsStack) target(id post.ID) post.Target {
	st.t.Helper()
	p, err := st.store.GetPost(st.t.Context(), id)
	if err != nil || len(p.Targets) != 1 {
		st.t.Fatalf("post %s: %v, %+v", id, err, p)
	}
	return p.Targets[0]
}

// heldEntry writes post id with one held target on news and its publish
// entry moved from pending by steps, as the pipeline leaves them.
func (st *awsStack) heldEntry(id post.ID, slot time.Time, steps ...func(ledger.Entry) (ledger.Entry, error)) ledger.Key {
	st.t.Helper()
	ctx := st.t.Context()
	now := time.Now().UTC()
	p := post.Post{ID: id, Body: "Held on AWS: " + string(id) + ".", CreatedAt: now,
		Targets: []post.Target{{Account: "news", Slot: slot, Status: post.Held, Reason: "held", UpdatedAt: now}}}
	if err := st.store.CreatePost(ctx, p); err != nil {
		st.t.Fatal(err)
	}
	key := ledger.PublishKey("news", string(id), slot)
	e := ledger.NewEntry(key, ledger.Publish, "news", string(id), slot, "fp-"+string(id), "worker", now, time.Minute)
	if err := st.store.Create(ctx, e); err != nil {
		st.t.Fatal(err)
	}
	for _, step := range steps {
		next, err := step(e)
		if err != nil {
			st.t.Fatal(err)
		}
		if err := st.store.Update(ctx, e, next); err != nil {
			st.t.Fatal(err)
		}
		e = next
	}
	return key
}

// The operator's commands with --backend aws --outputs FILE, each its own
// process, against a stack on dynalite and fauxqs with fakes for
// Scheduler, Step Functions and CloudFormation: an account added with its
// token on stdin (verified on a sandbox, sealed with the stack's key),
// posts added (one schedule per distinct slot; a slot too near is
// triggered at once), listed, shown, cancelled and rescheduled, held
// entries listed with their looks and approved (through the workflow's
// task token, or applied and re-queued), a dead letter listed and
// redriven, the status page, and the stack read with --stack through
// DescribeStacks.
func TestOperatorCommandsOnAWS(t *testing.T) {
	if testing.Short() {
		t.Skip("runs emulators and a few dozen processes")
	}
	st := newAWSStack(t)
	ctx := t.Context()
	sb := sandbox.New(sandbox.Options{})
	if err := sb.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	acct := sb.AddAccount("news")

	// An account: the token on stdin, checked on the instance, sealed in
	// the stack's credentials table with its key.
	if code, _, errOut := st.cli("not-a-token\n", "account", "add", "--id", "news", "--url", sb.URL(), "--token-file", "-"); code != exitUsage ||
		!strings.Contains(errOut, "--token-file: the instance refused the token") {
		t.Fatalf("a refused token: exit %d, %q", code, errOut)
	}
	if _, err := st.store.GetAccount(ctx, "news"); !errors.Is(err, post.ErrNotFound) {
		t.Fatalf("a refused token left an account behind: %v", err)
	}
	if out := st.ok(acct.AccessToken+"\n", "account", "add", "--id", "news", "--url", sb.URL(), "--token-file", "-"); !strings.Contains(out, "added news: @news@") {
		t.Errorf("account add: %q", out)
	}
	if c, err := st.store.Credential(ctx, "news"); err != nil || c.AccessToken != acct.AccessToken {
		t.Errorf("the stored credential does not open with the stack's key to the token: %v", err)
	}
	var accounts []accountView
	st.okJSON(&accounts, "account", "list")
	if len(accounts) != 1 || accounts[0].ID != "news" || accounts[0].Credential != "stored, encrypted" {
		t.Errorf("account list: %+v", accounts)
	}

	// Posts: one schedule per distinct slot, in the stack's group,
	// invoking the trigger with the scheduler's role.
	now := time.Now().UTC()
	slotA, slotB, slotC := now.Add(2*time.Hour).Truncate(time.Minute), now.Add(3*time.Hour).Truncate(time.Minute), now.Add(4*time.Hour).Truncate(time.Minute)
	for _, p := range []struct {
		id   string
		slot time.Time
	}{{"a", slotA}, {"b", slotA}, {"c", slotB}} {
		if out := st.ok("", "post", "add", "--id", p.id, "--account", "news", "--at", p.slot.Format(time.RFC3339), "--body", "Post "+p.id+" on AWS."); !strings.Contains(out, "scheduled "+p.id+" for news") {
			t.Errorf("post add %s: %q", p.id, out)
		}
	}
	if diff := cmp.Diff([]string{ebschedule.SlotName(slotA), ebschedule.SlotName(slotB)}, st.scheduler.names()); diff != "" {
		t.Errorf("schedules (-want +got):\n%s", diff)
	}
	s, _ := st.scheduler.get(ebschedule.SlotName(slotA))
	if s.Target.Arn != testTriggerARN || s.Target.RoleArn != testSchedulerRole || s.Target.DeadLetterConfig.Arn != testScheduleDLQ || s.ActionAfterCompletion != "DELETE" ||
		s.ScheduleExpression != ebschedule.AtExpression(ebschedule.FireTime(slotA)) || !strings.Contains(s.Target.Input, slotA.Format(time.RFC3339)) {
		t.Errorf("slot schedule %+v", s)
	}
	// A slot too near for a schedule is triggered now: the job is queued,
	// delayed to its slot.
	soon := time.Now().UTC().Add(10 * time.Second).Truncate(time.Second)
	st.ok("", "post", "add", "--id", "soon", "--account", "news", "--at", soon.Format(time.RFC3339), "--body", "Due in ten seconds.")
	if got := st.target("soon").Status; got != post.Triggered {
		t.Errorf("the near post is %s, want triggered", got)
	}
	if n := st.delayed(); n != 1 {
		t.Errorf("%d jobs delayed on the queue, want the near post's", n)
	}
	if len(st.scheduler.names()) != 2 {
		t.Errorf("the near post got a schedule: %v", st.scheduler.names())
	}
	// An attachment goes to the stack's bucket, under its content hash.
	img := filepath.Join(t.TempDir(), "photo.png")
	writePNG(t, img)
	st.ok("", "post", "add", "--id", "img", "--account", "news", "--at", slotA.Format(time.RFC3339), "--body", "With a photo.", "--media", img, "--alt", "a photo")
	withImage, err := st.store.GetPost(ctx, "img")
	if err != nil || len(withImage.Media) != 1 {
		t.Fatalf("post with an image: %+v, %v", withImage, err)
	}
	stored, err := st.media.ReadMedia(ctx, withImage.Media[0].Ref)
	raw, rerr := os.ReadFile(img)
	if err != nil || rerr != nil || !bytes.Equal(stored, raw) {
		t.Errorf("the bucket holds %d bytes for %s (%v), want the file's %d", len(stored), withImage.Media[0].Ref, err, len(raw))
	}
	if code, _, errOut := st.cli("", "post", "add", "--id", "a", "--account", "news", "--at", slotA.Format(time.RFC3339), "--body", "Again."); code != exitUsage ||
		!strings.Contains(errOut, `id: post "a" exists already`) {
		t.Errorf("post add of an id taken: exit %d, %q", code, errOut)
	}

	// One post for two accounts at one slot: one schedule, written once.
	spare := sb.AddAccount("spare")
	st.ok(spare.AccessToken+"\n", "account", "add", "--id", "spare", "--url", sb.URL(), "--token-file", "-")
	slotD := now.Add(5 * time.Hour).Truncate(time.Minute)
	st.ok("", "post", "add", "--id", "d", "--account", "news", "--account", "spare", "--at", slotD.Format(time.RFC3339), "--body", "Once on each account.")
	if diff := cmp.Diff([]string{"POST"}, st.scheduler.writes(ebschedule.SlotName(slotD))); diff != "" {
		t.Errorf("calls for the two targets' slot (-want +got):\n%s", diff)
	}

	// The blocklist is the stack's: a post naming a term is refused.
	st.ok("", "blocklist", "add", "spoiler")
	if code, _, errOut := st.cli("", "post", "add", "--id", "x", "--account", "news", "--at", slotD.Format(time.RFC3339), "--body", "A SPOILER."); code != exitUsage ||
		!strings.Contains(errOut, `contains the blocked term "spoiler"`) {
		t.Errorf("post add with a blocked term: exit %d, %q", code, errOut)
	}
	if out := st.ok("", "blocklist", "remove", "Spoiler"); !strings.Contains(out, `unblocked "Spoiler"`) {
		t.Errorf("blocklist remove: %q", out)
	}
	// An account with a post to go out is not removed.
	if code, _, errOut := st.cli("", "account", "remove", "spare"); code != exitFailure || !strings.Contains(errOut, "1 posts that have not gone out") {
		t.Errorf("account remove with a scheduled post: exit %d, %q", code, errOut)
	}

	// Listing and showing.
	var listed postListing
	st.okJSON(&listed, "post", "list")
	if diff := cmp.Diff([]post.ID{"soon", "a", "b", "img", "c", "d"}, postIDs(listed.Posts)); diff != "" || listed.Next != "" {
		t.Errorf("post list (-want +got):\n%s, next %q", diff, listed.Next)
	}
	st.okJSON(&listed, "post", "list", "--status", "scheduled", "--account", "spare")
	if diff := cmp.Diff([]post.ID{"d"}, postIDs(listed.Posts)); diff != "" {
		t.Errorf("post list --account spare (-want +got):\n%s", diff)
	}
	st.okJSON(&listed, "post", "list", "--status", "scheduled", "--account", "news", "--limit", "3")
	if diff := cmp.Diff([]post.ID{"a", "b", "img"}, postIDs(listed.Posts)); diff != "" || listed.Next == "" {
		t.Errorf("post list --status scheduled --limit 3 (-want +got):\n%s, next %q; want a cursor", diff, listed.Next)
	}
	// The next page, from the cursor; the text output says a listing is cut.
	next := listed.Next
	listed = postListing{}
	st.okJSON(&listed, "post", "list", "--status", "scheduled", "--account", "news", "--limit", "3", "--after", next)
	if diff := cmp.Diff([]post.ID{"c", "d"}, postIDs(listed.Posts)); diff != "" || listed.Next != "" {
		t.Errorf("post list --after (-want +got):\n%s, next %q", diff, listed.Next)
	}
	if code, _, errOut := st.cli("", "post", "list", "--limit", "2"); code != exitOK || !strings.Contains(errOut, "more posts: 2 listed; the next page: oncepost post list") {
		t.Errorf("post list --limit 2: exit %d, stderr %q; want the next page's command", code, errOut)
	}
	if code, _, errOut := st.cli("", "post", "list", "--after", "sq1.e30"); code != exitUsage || !strings.Contains(errOut, "--after") {
		t.Errorf("post list with an embedded cursor on AWS: exit %d, %q; want --after refused", code, errOut)
	}
	var shown publishing.PostView
	st.okJSON(&shown, "post", "show", "c")
	if shown.Post.Body != "Post c on AWS." || len(shown.Targets) != 1 || !shown.Targets[0].Slot.Equal(slotB) {
		t.Errorf("post show c: %+v", shown)
	}

	// Cancel: the target is cancelled; the slot's schedule stays (a shares it).
	if out := st.ok("", "post", "cancel", "b"); !strings.Contains(out, "cancelled; it will not be sent") {
		t.Errorf("post cancel: %q", out)
	}
	if got := st.target("b").Status; got != post.Cancelled {
		t.Errorf("b is %s after the cancel", got)
	}
	if d := st.scheduler.deletes(); len(d) != 0 {
		t.Errorf("cancel deleted schedules: %v", d)
	}
	// Reschedule: moved, and its new slot has its schedule.
	if out := st.ok("", "post", "reschedule", "a", "--at", slotC.Format(time.RFC3339)); !strings.Contains(out, "rescheduled for") {
		t.Errorf("post reschedule: %q", out)
	}
	if got := st.target("a"); !got.Slot.Equal(slotC) || got.Status != post.Scheduled {
		t.Errorf("a after the reschedule: %+v", got)
	}
	if _, ok := st.scheduler.get(ebschedule.SlotName(slotC)); !ok {
		t.Errorf("no schedule for the new slot; schedules %v", st.scheduler.names())
	}
	// A send under c's slot may be in flight: c is not moved.
	cKey := ledger.PublishKey("news", "c", slotB)
	if err := st.store.Create(ctx, ledger.NewEntry(cKey, ledger.Publish, "news", "c", slotB, "fp", "worker", time.Now(), time.Hour)); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := st.cli("", "post", "reschedule", "c", "--at", slotC.Format(time.RFC3339)); code != exitFailure ||
		!strings.Contains(errOut, "not rescheduled") || !strings.Contains(errOut, "may have reached the platform") {
		t.Errorf("reschedule with a send in flight: exit %d, %q", code, errOut)
	}
	if got := st.target("c"); !got.Slot.Equal(slotB) {
		t.Errorf("c moved to %s although a send may be in flight", got.Slot)
	}

	// Held entries: one held by its confirm workflow (a task waits on its
	// token, three looks made), one held by pre-publish dedup (no workflow).
	stamp := time.Now()
	lookedFor := st.heldEntry("h1", slotA,
		func(e ledger.Entry) (ledger.Entry, error) { return e.MarkUnknown("ambiguous: timeout", stamp) },
		func(e ledger.Entry) (ledger.Entry, error) { return e.Hold("not found after 3 looks", "", stamp) },
		func(e ledger.Entry) (ledger.Entry, error) { return e.Retoken("token-h1", stamp) })
	dedup := st.heldEntry("h2", slotA,
		func(e ledger.Entry) (ledger.Entry, error) {
			return e.Hold(publishing.ReasonDuplicateOnAccount, "remote-9", stamp)
		})
	st.flows.mu.Lock()
	st.flows.waiting["token-h1"] = true
	st.flows.executions[executionPrefix(testMachineARN)+publishing.ConfirmName(lookedFor, 1)] = []sfnEvent{
		{"ExecutionStarted", ""}, {"TaskStateEntered", "Look"}, {"TaskStateExited", "Look"}, {"TaskStateEntered", "Look"},
		{"TaskStateEntered", "Look"}, {"TaskStateEntered", "Hold"},
	}
	st.flows.mu.Unlock()
	var held []heldRow
	st.okJSON(&held, "held")
	byKey := map[ledger.Key]heldRow{}
	for _, h := range held {
		byKey[h.Key] = h
	}
	if h := byKey[lookedFor]; h.Post != "h1" || h.State != ledger.Held || h.Looks != 3 || h.MaybeSent != 1 {
		t.Errorf("held lists h1 as %+v, want held with 3 looks and 1 send that may have landed", h)
	}
	if h := byKey[dedup]; h.Post != "h2" || h.RemoteID != "remote-9" || h.Looks != 0 {
		t.Errorf("held lists h2 as %+v, want its evidence remote-9", h)
	}
	if h := byKey[cKey]; h.State != ledger.Pending {
		t.Errorf("held lists c's open entry as %+v", h)
	}
	if out := st.ok("", "approve", string(lookedFor)[:10]); !strings.Contains(out, "delivered to the waiting confirm workflow") {
		t.Errorf("approve h1: %q", out)
	}
	st.flows.mu.Lock()
	output, delivered := st.flows.successes["token-h1"]
	st.flows.mu.Unlock()
	if !delivered || output != `{"decision":"release"}` {
		t.Errorf("SendTaskSuccess: delivered %t with %q", delivered, output)
	}
	if e, err := st.store.Get(ctx, lookedFor); err != nil || e.Decision == "" {
		t.Errorf("the decision is not recorded on h1's entry: %+v, %v", e, err)
	}
	if out := st.ok("", "approve", string(dedup)); !strings.Contains(out, "decision applied: the entry is released") {
		t.Errorf("approve h2: %q", out)
	}
	time.Sleep(time.Until(soon.Add(time.Second)))
	if diff := cmp.Diff([]post.ID{"h2", "soon"}, st.received()); diff != "" {
		t.Errorf("queued after the approval and the near post's slot (-want +got):\n%s", diff)
	}
	if out := st.ok("", "approve", string(dedup)); !strings.Contains(out, "already decided") {
		t.Errorf("approve h2 twice: %q", out)
	}
	if code, _, errOut := st.cli("", "approve", "zzzzzzzzzz"); code != exitUsage || !strings.Contains(errOut, "no held or unresolved entry") {
		t.Errorf("approve of an unknown key: exit %d, %q", code, errOut)
	}

	// A dead letter: listed with its reason, redriven onto the queue.
	if _, err := st.queue.Send(ctx, []byte(`{"post_id":"orphan","account_id":"spare","slot":"2031-01-01T00:00:00Z"}`), 0); err != nil {
		t.Fatal(err)
	}
	msgs, err := st.queue.Receive(ctx, 1, time.Minute)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("receive: %v, %d messages", err, len(msgs))
	}
	if err := st.queue.DeadLetter(ctx, msgs[0].Receipt, "account spare does not exist"); err != nil {
		t.Fatal(err)
	}
	var dls []deadLetterView
	st.okJSON(&dls, "dlq", "list")
	if len(dls) != 1 || dls[0].Reason != "account spare does not exist" || dls[0].Job == nil || dls[0].Job.Post != "orphan" {
		t.Fatalf("dlq list: %+v", dls)
	}

	// The status page, with a waiting target.
	if err := st.store.CreatePost(ctx, post.Post{ID: "w", Body: "Throttled.", CreatedAt: now,
		Targets: []post.Target{{Account: "news", Slot: slotA, Status: post.Scheduled, UpdatedAt: now}}}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []post.TargetUpdate{{Status: post.Triggered, At: now}, {Status: post.Waiting, Reason: "throttled (429)", NextTry: now.Add(time.Hour), At: now}} {
		if _, err := st.store.UpdateTarget(ctx, "w", "news", u); err != nil {
			t.Fatal(err)
		}
	}
	var rep statusReport
	st.okJSON(&rep, "status")
	wantTargets := map[post.TargetStatus]int{post.Scheduled: 5, post.Triggered: 2, post.Cancelled: 1, post.Held: 1, post.Waiting: 1}
	if diff := cmp.Diff(wantTargets, rep.Targets); diff != "" {
		t.Errorf("status targets (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[ledger.State]int{ledger.Pending: 1, ledger.Unknown: 0, ledger.Held: 1}, rep.Ledger); diff != "" {
		t.Errorf("status ledger (-want +got):\n%s", diff)
	}
	if len(rep.Open) != 1 || rep.Open[0].Key != cKey || len(rep.Waiting) != 1 || rep.Waiting[0].Post != "w" || rep.Waiting[0].Reason != "throttled (429)" ||
		len(rep.DeadLetters) != 1 {
		t.Errorf("status: open %+v, waiting %+v, dead letters %+v", rep.Open, rep.Waiting, rep.DeadLetters)
	}
	if rep.Queue.DeadLetters != 1 || !rep.Queue.Approximate {
		t.Errorf("status queue %+v, want the dead letter counted, approximately", rep.Queue)
	}
	if out := st.ok("", "status"); !strings.Contains(out, "WAITING") || !strings.Contains(out, "1 dead letters") ||
		!strings.Contains(out, "1 dead letters (SQS's approximate counts)") {
		t.Errorf("status: %q", out)
	}

	if out := st.ok("", "dlq", "redrive", dls[0].ID[:8]); !strings.Contains(out, "redriven "+dls[0].ID) {
		t.Errorf("dlq redrive: %q", out)
	}
	if diff := cmp.Diff([]post.ID{"orphan"}, st.received()); diff != "" {
		t.Errorf("queued after the redrive (-want +got):\n%s", diff)
	}
	if out := st.ok("", "dlq", "list"); !strings.Contains(out, "no dead letters") {
		t.Errorf("dlq list after the redrive: %q", out)
	}

	// A delete: a published post, deleted on the platform through the
	// stack's ledger after an approval, and a no-op the second time.
	onPlatform := sb.InjectStatus(acct.ID, "Published on AWS, then deleted.")
	delSlot := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	if err := st.store.CreatePost(ctx, post.Post{ID: "del", Body: "Published on AWS, then deleted.", CreatedAt: delSlot,
		Targets: []post.Target{{Account: "news", Slot: delSlot, Status: post.Scheduled, UpdatedAt: delSlot}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.store.UpdateTarget(ctx, "del", "news", post.TargetUpdate{Status: post.Published, RemoteID: onPlatform.ID, At: delSlot}); err != nil {
		t.Fatal(err)
	}
	out := st.ok("", "post", "delete", "del")
	_, keyText, found := strings.Cut(out, "waits for approval: oncepost approve ")
	if !found || sb.Stats().Deleted != 0 {
		t.Fatalf("post delete: %q (%d deleted); want it to wait for approval", out, sb.Stats().Deleted)
	}
	if out := st.ok("", "approve", strings.TrimSpace(keyText)); !strings.Contains(out, "is deleted") || sb.Stats().Deleted != 1 {
		t.Errorf("approve the delete: %q, %d deleted on the platform; want 1", out, sb.Stats().Deleted)
	}
	if out := st.ok("", "post", "delete", "del"); !strings.Contains(out, "already deleted") || sb.Stats().Deleted != 1 {
		t.Errorf("post delete twice: %q, %d deleted on the platform", out, sb.Stats().Deleted)
	}
	if got := st.target("del").Status; got != post.Deleted {
		t.Errorf("post del is %s, want deleted", got)
	}

	// The stack by name: its Outputs read with DescribeStacks.
	code, out, errOut := runChild(t, st.env, "", "post", "list", "--backend", "aws", "--stack", testStackName, "--status", "cancelled", "--json")
	if err := json.Unmarshal([]byte(out), &listed); code != exitOK || err != nil || len(listed.Posts) != 1 || listed.Posts[0].ID != "b" {
		t.Errorf("post list --stack: exit %d, %q, %q", code, out, errOut)
	}
	if code, _, errOut := runChild(t, st.env, "", "status", "--backend", "aws", "--stack", "ghost"); code != exitUsage || !strings.Contains(errOut, `--stack: there is no stack "ghost"`) {
		t.Errorf("status --stack ghost: exit %d, %q", code, errOut)
	}

	st.mu.Lock()
	defer st.mu.Unlock()
	for _, o := range st.printed {
		if strings.Contains(o, acct.AccessToken) {
			t.Errorf("a command printed the token: %q", o)
		}
	}
}

func postIDs(ps []post.Post) []post.ID {
	out := []post.ID{}
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return out
}

// Bad --backend, --stack and --outputs input: exit 2, the error names the
// flag, before anything is read or written. Every command is its own
// process, with no AWS endpoint reachable.
func TestBadBackendInputNamesTheFlag(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	full := map[string]string{
		outTablePrefix: "oncepost-x-", outQueueURL: "https://sqs.us-east-1.amazonaws.com/000000000000/q", outDeadLetterQueueURL: "https://sqs.us-east-1.amazonaws.com/000000000000/dlq",
		outStateMachineARN: testMachineARN, outScheduleGroupName: "g", outSchedulerRoleARN: testSchedulerRole, outScheduleDLQARN: testScheduleDLQ,
		outTriggerFunctionARN: testTriggerARN, outMediaBucketName: testMediaBucket,
	}
	with := func(name string, change map[string]any) string {
		m := map[string]any{}
		for k, v := range full {
			m[k] = v
		}
		for k, v := range change {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return file(name, string(raw))
	}
	key := "ONCEPOST_STATIC_CREDENTIAL_KEY=" + strings.Repeat("ab", 32)
	// Endpoints that refuse connections: a command that got past its
	// checks would fail with exit 1, not 2.
	closed := "http://127.0.0.1:1"
	env := childEnv(dir, map[string]string{"DYNAMODB": closed, "SQS": closed, "SFN": closed, "SCHEDULER": closed, "CLOUDFORMATION": closed})
	tests := []struct {
		name string
		args []string
		env  []string
		want []string
	}{
		{"unknown backend", []string{"post", "list", "--backend", "cloud"}, nil, []string{`--backend: "cloud"`, "embedded", "aws"}},
		{"aws without a stack", []string{"held", "--backend", "aws"}, nil, []string{"--backend: aws needs the stack", "--stack NAME", "--outputs FILE"}},
		{"stack without aws", []string{"status", "--stack", "prod"}, nil, []string{"--stack", "--backend aws"}},
		{"outputs without aws", []string{"dlq", "list", "--outputs", "x.json"}, nil, []string{"--outputs", "--backend aws"}},
		{"stack and outputs", []string{"post", "list", "--backend", "aws", "--stack", "prod", "--outputs", "x.json"}, nil, []string{"--stack and --outputs"}},
		{"bad stack name", []string{"post", "list", "--backend", "aws", "--stack", "prod stack!"}, nil, []string{`--stack: "prod stack!" is not a CloudFormation stack name`}},
		{"db with aws", []string{"post", "list", "--backend", "aws", "--stack", "prod", "--db", "x.db"}, nil, []string{"--db", "embedded workspace"}},
		{"outputs missing", []string{"account", "list", "--backend", "aws", "--outputs", filepath.Join(dir, "missing.json")}, nil, []string{"--outputs: cannot read"}},
		{"outputs not json", []string{"account", "list", "--backend", "aws", "--outputs", file("bad.json", "TablePrefix=x")}, nil, []string{"--outputs", "JSON object"}},
		{"outputs value not a string", []string{"account", "list", "--backend", "aws", "--outputs", with("num.json", map[string]any{outQueueURL: 5})}, []string{key}, []string{"--outputs", `"QueueUrl" must be a string`}},
		{"outputs lacking names", []string{"post", "list", "--backend", "aws", "--outputs", with("short.json", map[string]any{outQueueURL: nil, outStateMachineARN: nil})}, []string{key},
			[]string{"--outputs", "lacks the output(s) QueueUrl, StateMachineArn"}},
		{"bad schedule dead-letter queue", []string{"post", "list", "--backend", "aws", "--outputs", with("sdlq.json", map[string]any{outScheduleDLQARN: "https://sqs.us-east-1.amazonaws.com/000000000000/dlq"})}, []string{key},
			[]string{"--outputs: the stack's outputs are refused", "DeadLetterARN"}},
		{"no key for credentials", []string{"post", "list", "--backend", "aws", "--outputs", with("nokey.json", nil)}, nil, []string{"--outputs", "KmsKeyId (or ONCEPOST_STATIC_CREDENTIAL_KEY"}},
		{"bad static key", []string{"post", "list", "--backend", "aws", "--outputs", with("full.json", nil)}, []string{"ONCEPOST_STATIC_CREDENTIAL_KEY=abcd"}, []string{"ONCEPOST_STATIC_CREDENTIAL_KEY: want 64 hex digits"}},
		{"bad state machine", []string{"held", "--backend", "aws", "--outputs", with("sm.json", map[string]any{outStateMachineARN: "oncepost-confirm"})}, []string{key}, []string{"--outputs: the stack's outputs are refused", "state machine ARN"}},
		{"bad trigger", []string{"post", "list", "--backend", "aws", "--outputs", with("fn.json", map[string]any{outTriggerFunctionARN: "arn:aws:lambda:us-east-1:000000000000:trigger"})}, []string{key}, []string{"--outputs: the stack's outputs are refused", "FunctionARN", "is not a Lambda function ARN"}},
		{"run", []string{"run", "--backend", "aws"}, nil, []string{"--backend: run runs only on the embedded workspace"}},
		{"run --demo", []string{"run", "--demo", "--backend", "aws"}, nil, []string{"--backend: run runs only on the embedded workspace"}},
		{"sandbox", []string{"sandbox", "--backend", "aws"}, nil, []string{"--backend: sandbox runs only on the embedded workspace"}},
		{"chaos", []string{"chaos", "--backend", "aws"}, nil, []string{"--backend: chaos runs only on the embedded workspace"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runChild(t, append(slices.Clone(env), tt.env...), "", tt.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d; stdout %q stderr %q", code, exitUsage, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q does not mention %q", errOut, w)
				}
			}
		})
	}
}

// A stack's Outputs come from a file in either shape describe-stacks can
// give, and from DescribeStacks itself.
func TestStackOutputsSources(t *testing.T) {
	dir := t.TempDir()
	want := stackOutputs{outTablePrefix: "p-", outQueueURL: "https://sqs.us-east-1.amazonaws.com/000000000000/q", outKMSKeyID: "alias/oncepost"}
	tests := []struct {
		name, content string
	}{
		{"object", `{"TablePrefix": "p-", "QueueUrl": "https://sqs.us-east-1.amazonaws.com/000000000000/q", "KmsKeyId": "alias/oncepost"}`},
		{"describe-stacks Outputs list", `[{"OutputKey": "TablePrefix", "OutputValue": "p-", "Description": "tables"},
			{"OutputKey": "QueueUrl", "OutputValue": "https://sqs.us-east-1.amazonaws.com/000000000000/q"},
			{"OutputKey": "KmsKeyId", "OutputValue": "alias/oncepost", "ExportName": "oncepost-kms"}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".json")
			if err := os.WriteFile(p, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := readOutputsFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("outputs (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("DescribeStacks", func(t *testing.T) {
		cfn := newFakeCloudFormation(t, map[string]stackOutputs{"prod": want})
		for _, kv := range os.Environ() {
			if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") {
				t.Setenv(k, "") // restored when the test ends
				os.Unsetenv(k)
			}
		}
		t.Setenv("AWS_ENDPOINT_URL_CLOUDFORMATION", cfn.url)
		for _, kv := range childEnv(dir, nil) {
			k, v, _ := strings.Cut(kv, "=")
			t.Setenv(k, v)
		}
		cfg, err := loadAWSConfig(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got, err := describeStack(context.Background(), cfg, "prod")
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("outputs (-want +got):\n%s", diff)
		}
		if _, err := describeStack(context.Background(), cfg, "ghost"); !errors.Is(err, errUsage) || !strings.Contains(err.Error(), `--stack: there is no stack "ghost" in us-east-1`) {
			t.Errorf("a stack that does not exist: %v", err)
		}
	})
}
