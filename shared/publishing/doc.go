// Package publishing holds oncepost's use cases and the ports they consume.
//
// Publish turns an at-least-once delivery of a (post, account) job into at
// most one post on the platform:
//
//	acquire ledger entry (conditional put, lease)
//	→ pre-publish dedup against the account's recent posts (found → held)
//	→ re-read the post (cancelled → released, never sent)
//	→ upload media, each upload guarded by its own entry
//	→ send once, with the entry's platform handle, under a deadline shorter than the caller's
//	→ classify: confirmed | released (retry) | failed | unknown (start the confirm workflow)
//
// The confirm workflow (Step Functions, or localflow running the same ASL)
// calls the Confirmer's steps: Look, Confirm, Release, Hold. Only Release
// makes a re-send possible, and only after looking and not finding.
//
// Ports are defined here, by their consumer; adapters live in their own
// packages and pass the publishingtest conformance suites.
package publishing
