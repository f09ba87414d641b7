// Package console is oncepost's web console: server-rendered pages over
// the same operator use cases as the CLI and the HTTP API (DESIGN §8),
// served next to /v1 by the same process.
//
// The layout follows Miniflux's internal/ui: one small file per page or
// action (all methods on Handler), one routes table (routes.go), forms
// parsed in one place (form.go), templates and static assets embedded.
// Pages read the ports directly; the little JavaScript there is (live
// counters, live statuses) calls the /v1 API with the session, so a rule
// is never written twice.
//
// Who may come in: a signed-in session. On one machine a person signs in
// with an API token (the session keeps the token's hash and checks it on
// every request, so a revoke ends the session); for a stack on AWS,
// `oncepost console` prints a one-time sign-in link and the console acts
// with the operator's own AWS credentials. Every request that changes
// something passes net/http's CrossOriginProtection and carries the
// session's CSRF token.
package console
