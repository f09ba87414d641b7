// Package httpapi is oncepost's HTTP API (DESIGN §8): thin handlers that
// translate HTTP to the operator use cases (publishing.Desk and the
// operator's ports) and back. No rule lives here: a refusal comes from the
// use case and is translated to an RFC 9457 problem (application/
// problem+json) naming the field and the fix.
//
// The contract is openapi.json in this directory (OpenAPI 3.1), embedded
// and served at GET /v1/openapi.json. The handlers are written by hand on
// net/http's ServeMux patterns; the tests check every request and response
// they make against the document (kin-openapi's openapi3filter), and that
// the routes registered here and the document's operations are the same,
// with the same scopes. A drift between the two fails a test.
//
// Every route is under /v1. Callers authenticate one of two ways, chosen
// by Config.Auth: BearerTokens (one machine: `oncepost token add` makes
// them) or ContextPrincipal (AWS: the adapter in front has verified an
// IAM signature and puts the caller in the request's context with
// WithPrincipal). Each route needs one scope (apitoken.Scope); a request
// without it is refused with 403 before anything is read or changed.
//
// Webhook subscriptions and their deliveries (/v1/webhooks) reach the
// runtime through Config.Webhooks; a runtime without it answers them 501.
// Their rules are webhook.NewSubscription's, which the CLI calls too.
//
// Post creates take an Idempotency-Key (draft-ietf-httpapi-idempotency-key-
// header): the same key and body get the first answer again, byte for
// byte, with Idempotent-Replayed: true; the key with another body is 422;
// a key whose first request is still being written is 409. The key is
// stored with the post in one write (publishing.PostScheduler), so a
// retried create never makes a second post.
package httpapi
