// Package x is the platform.Client for one X account, talking to the X API
// v2 (https://docs.x.com) with an OAuth 2.0 user access token.
//
// What X guarantees, and what it does not: X has no idempotency key and no
// client-chosen id for a post. A create whose answer is lost cannot be
// asked about by any handle; the only evidence is the account's own
// timeline. So the ledger's handle is not sent (Capabilities.Handle says
// so), and an unknown outcome is resolved by reading the account's posts
// back and matching the content fingerprint (ReadableHistory, no
// LookupByHandle: platform.ReadBack). X also refuses a post whose text
// repeats a recent one of the account's with 403 "You are not allowed to
// create a Tweet with duplicate content." for an undocumented window; that
// answer is returned as platform.Rejected with platform.ReasonDuplicate, a
// signal to look for the earlier post, never a failure by itself.
//
// How the port maps to the API:
//
//   - Publish: POST /2/tweets {"text", "media": {"media_ids"}} → 201
//     {"data": {"id", "text"}}, sent exactly once through httpcall (5xx or
//     a lost answer is Ambiguous, 429 NotPerformed with x-rate-limit-reset
//     as RetryAfter, 401 Unauthorized). Text is measured first with X's
//     weighted count (MeasureText, 280 at most) and refused locally when
//     too long.
//   - Lookup: GET /2/users/:id/tweets with since_id (the newest post read
//     before the first send) or start_time, 100 per page, excluding
//     reposts and replies, paging with pagination_token for at most
//     Config.LookupPages pages; running out of pages is
//     platform.Inconclusive. X's rendering is undone before fingerprinting:
//     &amp; &lt; &gt; are unescaped, every t.co link is replaced by its
//     entities.urls expanded_url, and the t.co link X appends for attached
//     media is dropped; media keys ("3_<media id>") become media ids.
//   - Recent: the same timeline, newest first.
//   - Delete: DELETE /2/tweets/:id → {"data": {"deleted": true}}; a 404
//     (the post is already gone) is nil.
//   - Exists: GET /2/tweets/:id; a 404 or a 200 carrying only a
//     resource-not-found error means false.
//   - UploadMedia: POST /2/media/upload/initialize, …/:id/append (one
//     multipart segment per 4 MiB), …/:id/finalize, then GET
//     /2/media/upload?command=STATUS while processing_info says so, and
//     POST /2/media/metadata for alt text.
//   - Refresh: POST /2/oauth2/token grant_type=refresh_token. X's refresh
//     tokens are single use: the answer's refresh token replaces the old
//     one, an answer without one keeps it, a refusal is Rejected
//     reconnect_needed, and a lost answer or 5xx is Ambiguous (the old
//     token may be spent).
//
// Connecting an account is OAuth 2.0 authorization code with PKCE:
// NewPKCE, AuthorizeURL, then ExchangeCode; Me (GET /2/users/me) then says
// whose the token is: the numeric user id to store as the account's
// remote id (so that Lookup need not read it) and the @username.
//
// Known limits of the read-back: X lists a new post on the timeline after
// a short delay, so a Lookup right after a lost answer can miss it (a
// re-send of the same text then meets the duplicate-content 403, which
// sends the caller looking again); a URL written without a scheme comes
// back with one in expanded_url, which Lookup undoes only when
// LookupQuery.Text is given; a t.co link written by the author is
// expanded like X's own. Every page read is billed by X.
package x
