// Package webhook sends oncepost's events to subscribers as Standard
// Webhooks (spec v1): a signed POST per delivery attempt, the same
// webhook-id on every retry (publishing.WebhookSender's adapter).
//
// A receiver URL is an untrusted address. CheckURL refuses a bad one when
// a subscription is made; the Sender checks again on every attempt, and
// its dialer refuses every connection whose resolved address is private,
// loopback, link-local or otherwise not public (unless the subscription
// allows private receivers), so a name that resolves somewhere else later
// (DNS rebinding) is caught where the connection is made. Redirects are
// never followed and proxy environment variables are ignored.
//
// The signer is written here by hand (about a hundred lines) rather than
// taken from the reference Go library: that library's go.mod declares
// github.com/standard-webhooks/libraries, which is not its repository's
// path, and our module proxy does not serve it. The tests check every
// signature with the reference npm verifier (standardwebhooks, installed
// in infra/emulators) as the oracle.
package webhook
