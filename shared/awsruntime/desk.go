package awsruntime

import (
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/platform/catalog"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// Operator decides held entries on the stack: the decision recorded on
// the ledger entry and handed to the confirm workflow waiting on it, or
// applied with the confirm steps when none waits (publishing.Operator).
// It reads platforms only if a decision needs a look, which none does.
func (rt *Runtime) Operator(callTimeout time.Duration) (*publishing.Operator, error) {
	conf, err := rt.Confirmer(callTimeout)
	if err != nil {
		return nil, err
	}
	return &publishing.Operator{Ledger: rt.Store, Confirmer: conf, Tasks: conf.Tasks, Logger: rt.Logger}, nil
}

// Deleter requests deletes of published posts (publishing.Deleter). Its
// Run sends one with the account's credential: a function that may not
// read credentials (the api function) gets an error there, and the
// request stays recorded for an operator to run.
func (rt *Runtime) Deleter(callTimeout time.Duration) *publishing.Deleter {
	return &publishing.Deleter{
		Ledger: rt.Store, Posts: rt.Store, Accounts: rt.Store, Platforms: rt.Platforms(), Credentials: rt.Credentials(callTimeout),
		Metrics: rt.Metrics, Owner: rt.Owner, CallTimeout: callTimeout, Logger: rt.Logger,
	}
}

// Desk is the operator's use cases on the stack (publishing.Desk), as the
// CLI's `--backend aws` builds them: posts scheduled through
// PostScheduler (a key's record with the post), validated with the
// platform catalog's limits and counts, attachments measured in the
// media bucket (whose presigned URLs let platforms that fetch media
// themselves be targeted). Accounts are read from the store, not the
// instance cache: a post may name an account added a moment ago.
func (rt *Runtime) Desk(callTimeout time.Duration) (*publishing.Desk, error) {
	scheduler, err := rt.PostScheduler()
	if err != nil {
		return nil, err
	}
	op, err := rt.Operator(callTimeout)
	if err != nil {
		return nil, err
	}
	media, err := rt.Media()
	if err != nil {
		return nil, err
	}
	return &publishing.Desk{
		Posts: rt.Store, Ledger: rt.Store, Accounts: rt.Store, Blocklist: rt.Blocklist, Scheduler: scheduler,
		Keys: rt.Store, Lister: rt.Store, Queue: rt.Store, Operator: op, Deleter: rt.Deleter(callTimeout),
		Limits: platformLimits, Measure: measureText, Capabilities: platformCapabilities,
		PublicURLs: true, MediaSize: media.MediaSize, Now: rt.Now, Logger: rt.Logger,
	}, nil
}

// platformLimits are a platform's default content limits (the catalog's).
func platformLimits(name string) (post.Limits, bool) {
	k, ok := catalog.Lookup(name)
	if !ok {
		return post.Limits{}, false
	}
	return k.Limits(), true
}

// measureText counts a text as the platform counts it.
func measureText(name, text string) int {
	k, _ := catalog.Lookup(name)
	return k.Measure(text)
}

// platformCapabilities describe a platform of the catalog.
func platformCapabilities(name string) (platform.Capabilities, bool) {
	k, ok := catalog.Lookup(name)
	return k.Capabilities, ok
}
