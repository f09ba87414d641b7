package main

import (
	"context"
	"flag"
	"regexp"
	"time"

	"oncepost/shared/ledger"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// The operator commands act on a backend: the embedded workspace (one
// SQLite file with its queue, schedules and workflows, --db) or a
// deployed AWS stack (DynamoDB, SQS, Step Functions, EventBridge
// Scheduler, named by the stack's Outputs: --backend aws --stack NAME or
// --outputs FILE). The commands see it through small interfaces, each
// consumed here and satisfied by both runtimes' adapters; the use cases
// (publishing.Operator, publishing.Deleter) are built on the same ports in
// both.

// Backend names, the values of --backend.
const (
	backendEmbedded = "embedded"
	backendAWS      = "aws"
)

// workspaceAdmin is what only an operator writes besides posts: blocked
// terms, and the removal of an account.
type workspaceAdmin interface {
	publishing.Blocklist
	AddBlockedTerm(ctx context.Context, t post.BlockedTerm) (added bool, err error)
	RemoveBlockedTerm(ctx context.Context, key string) (removed bool, err error)
	DeleteAccount(ctx context.Context, id post.AccountID) error
}

// waitingTarget is a target waiting for its next try, as `status` shows it.
type waitingTarget struct {
	Post    post.ID        `json:"post_id"`
	Account post.AccountID `json:"account_id"`
	NextTry time.Time      `json:"next_try,omitzero"`
	Reason  string         `json:"reason,omitempty"`
}

// storeCounts are the counts `status` prints: targets by status, ledger
// entries by state (the states the store can count without reading every
// entry).
type storeCounts struct {
	Targets map[post.TargetStatus]int
	Ledger  map[ledger.State]int
}

// operatorViews are the lists only an operator reads.
type operatorViews interface {
	// Waiting lists waiting targets, next try first; a limit ≤ 0 means all.
	Waiting(ctx context.Context, limit int) ([]waitingTarget, error)
	Counts(ctx context.Context) (storeCounts, error)
}

// deadLetterQueue is the publish queue's dead letters.
type deadLetterQueue interface {
	// DeadLetters lists them, oldest first; a limit ≤ 0 means all.
	DeadLetters(ctx context.Context, limit int) ([]publishing.DeadLetter, error)
	publishing.DeadLetterAdmin
}

// queueDepth is the publish queue's depth, as `status` shows it.
type queueDepth struct {
	Visible  int `json:"visible"`
	InFlight int `json:"in_flight"`
	Delayed  int `json:"delayed"`
	// Undecodable messages (embedded only) have a visible_at that cannot
	// be read; the next receive dead-letters them.
	Undecodable int `json:"undecodable"`
	DeadLetters int `json:"dead_letters"`
	// Approximate is true on SQS, whose counts lag by up to a minute.
	Approximate bool `json:"approximate,omitempty"`
}

// queueDepths reads the publish queue's depth.
type queueDepths interface {
	Depth(ctx context.Context) (queueDepth, error)
}

// lookCounter counts the looks an entry's confirm workflows made on the
// platform (Look states entered), for `held`.
type lookCounter interface {
	Looks(ctx context.Context, e ledger.Entry) (int, error)
}

// backend is one workspace, embedded or on AWS, as the operator commands
// use it. The status command opens only its store: schedules, looks,
// operator and deleter are nil then.
type backend struct {
	// kind is backendEmbedded or backendAWS.
	kind     string
	ledger   publishing.Ledger
	posts    publishing.Posts
	accounts publishing.Accounts
	admin    workspaceAdmin
	views    operatorViews
	lister   publishing.PostLister
	// queue keeps the posting slots queued posts take.
	queue     publishing.QueueSlots
	schedules publishing.PostScheduler
	// keys reads idempotency records.
	keys publishing.IdempotencyKeys
	// rules are the recurring rules.
	rules       publishing.RecurringRules
	deadLetters deadLetterQueue
	depth       queueDepths
	looks       lookCounter
	operator    *publishing.Operator
	deleter     *publishing.Deleter
	// media keeps imported attachments where the publisher reads them.
	media mediaImporter
	// webhooks are the workspace's subscriptions and their deliveries.
	webhooks webhookStore
	close    func() error

	// webhookDeadLetters are the dead webhook deliveries of a stack (its
	// webhook queue's dead letters); nil on the embedded workspace, whose
	// outbox keeps them, and on a stack without the webhook queue.
	webhookDeadLetters deadLetterQueue
}

// mediaImporter keeps an imported attachment where the runtime's
// publisher reads it: the embedded media directory, or the stack's bucket.
type mediaImporter interface {
	ImportMedia(ctx context.Context, m importedMedia) error
	// MediaSize is the size of a stored attachment, an error wrapping
	// post.ErrNotFound if there is none.
	MediaSize(ctx context.Context, ref string) (int64, error)
	// PublicURLs reports whether the runtime's publisher can give an
	// attachment a public URL (platform.Capabilities.MediaByURL).
	PublicURLs() bool
}

// desk is the operator's use cases on the backend (publishing.Desk):
// the commands parse their flags, call it and print its answer.
func (b *backend) desk() *publishing.Desk {
	d := &publishing.Desk{
		Posts: b.posts, Ledger: b.ledger, Accounts: b.accounts, Blocklist: b.admin, Scheduler: b.schedules, Keys: b.keys, Lister: b.lister,
		Queue: b.queue, Operator: b.operator, Deleter: b.deleter, Limits: limitsOf, Measure: measureText, Capabilities: capabilitiesOf,
		// Generated ids read in the operator's own time.
		NewID: func(t time.Time) string { return publishing.NewPostID(t.Local()) },
	}
	if b.media != nil {
		d.PublicURLs, d.MediaSize = b.media.PublicURLs(), b.media.MediaSize
	}
	return d
}

// Close releases the backend (the SQLite file; nothing on AWS).
func (b *backend) Close() error {
	if b.close == nil {
		return nil
	}
	return b.close()
}

// where is where a workspace command acts, from its --db, --backend,
// --stack and --outputs flags.
type where struct {
	fs      *flag.FlagSet
	db      string
	backend string
	stack   string
	outputs string
}

// workspaceFlags returns the named command's flag set with the flags that
// pick its backend.
func workspaceFlags(name string) (*flag.FlagSet, *where) {
	fs := newFlags(name)
	w := &where{fs: fs}
	fs.StringVar(&w.db, "db", defaultConfig().DBPath, "the embedded workspace's SQLite file (--backend embedded)")
	fs.StringVar(&w.backend, "backend", backendEmbedded, "where the workspace is: embedded (the --db file) or aws (a deployed stack, named by --stack or --outputs)")
	fs.StringVar(&w.stack, "stack", "", "with --backend aws: the CloudFormation stack whose Outputs name the tables, queues, state machine and schedule group (read with DescribeStacks; standard AWS SDK configuration)")
	fs.StringVar(&w.outputs, "outputs", "", `with --backend aws: a JSON file of the stack's Outputs ({"TablePrefix": "…", "QueueUrl": "…", …}, or the Outputs list describe-stacks prints), instead of --stack`)
	return fs, w
}

// stackName is what CloudFormation accepts as a stack name, or a stack id
// (its ARN).
var stackName = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9-]{0,127}|arn:aws[a-z-]*:cloudformation:[a-z0-9-]+:\d{12}:stack/[A-Za-z][A-Za-z0-9-]{0,127}/[A-Za-z0-9-]+)$`)

// check refuses a contradictory or incomplete choice of backend, naming
// the flag.
func (w *where) check() error {
	dbSet := false
	w.fs.Visit(func(f *flag.Flag) { dbSet = dbSet || f.Name == "db" })
	switch w.backend {
	case backendEmbedded:
		switch {
		case w.stack != "":
			return usageError("stack", "names an AWS stack: add --backend aws (or leave --stack out for the embedded workspace)")
		case w.outputs != "":
			return usageError("outputs", "names an AWS stack's outputs: add --backend aws (or leave --outputs out for the embedded workspace)")
		}
		return nil
	case backendAWS:
		switch {
		case dbSet:
			return usageError("db", "names an embedded workspace; with --backend aws leave it out")
		case w.stack == "" && w.outputs == "":
			return usageError("backend", "aws needs the stack: --stack NAME (its Outputs are read with CloudFormation DescribeStacks) or --outputs FILE")
		case w.stack != "" && w.outputs != "":
			return badInput("--stack and --outputs: name the stack one way")
		case w.stack != "" && !stackName.MatchString(w.stack):
			return usageError("stack", "%q is not a CloudFormation stack name (a letter, then up to 127 letters, digits or '-') nor a stack ARN", w.stack)
		}
		return nil
	}
	return usageError("backend", "%q: use embedded (the SQLite workspace, the default) or aws (a deployed stack: --stack NAME or --outputs FILE)", w.backend)
}

// isAWS reports whether the command acts on a stack.
func (w *where) isAWS() bool { return w.backend == backendAWS }

// open opens an existing workspace for a command.
func (w *where) open(ctx context.Context) (*backend, error) {
	if err := w.check(); err != nil {
		return nil, err
	}
	if w.isAWS() {
		return w.openStack(ctx)
	}
	rt, err := openTool(ctx, w.db)
	if err != nil {
		return nil, err
	}
	return embeddedBackend(rt), nil
}

// create opens the workspace, creating an embedded one if it does not
// exist yet (account add, blocklist add). A stack is never created.
func (w *where) create(ctx context.Context) (*backend, error) {
	if err := w.check(); err != nil {
		return nil, err
	}
	if w.isAWS() {
		return w.openStack(ctx)
	}
	rt, err := openWorkspace(ctx, w.db)
	if err != nil {
		return nil, err
	}
	return embeddedBackend(rt), nil
}

// embeddedOnly refuses --backend aws for a command that runs only on the
// embedded workspace (the runtime, the sandbox, the drill).
func embeddedOnly(fs *flag.FlagSet, name string) *string {
	return fs.String("backend", backendEmbedded, "embedded only: "+name+" runs on this machine (on AWS the stack's functions and schedules are the runtime)")
}

// checkEmbeddedOnly is the check of embeddedOnly's flag.
func checkEmbeddedOnly(name, value string) error {
	switch value {
	case backendEmbedded:
		return nil
	case backendAWS:
		return usageError("backend", "%s runs only on the embedded workspace: on AWS the stack's Lambda functions and schedules are the runtime; the operator commands (account, post, blocklist, held, approve, confirm, reject, dlq, status) take --backend aws", name)
	}
	return usageError("backend", "%q: %s runs only on the embedded workspace (--backend embedded)", value, name)
}
