// Package threads is the platform.Client for one Threads (Meta) account,
// talking to the Threads Graph API at https://graph.threads.net
// (https://developers.facebook.com/docs/threads).
//
// # What Threads guarantees
//
// Threads has no idempotency key: two creates are two posts. What it has
// is a two-step create whose first step leaves a server-side handle
// (https://developers.facebook.com/docs/threads/posts):
//
//  1. POST /v1.0/{user-id}/threads (media_type=TEXT, text) creates a media
//     container and answers its id. A container alone is not visible; an
//     unpublished container expires after 24 hours.
//  2. POST /v1.0/{user-id}/threads_publish (creation_id=<container id>)
//     publishes it and answers the post's media id. This is the side
//     effect.
//
// The container's status, GET /v1.0/{container-id}?fields=status,
// error_message, is one of EXPIRED, ERROR, FINISHED, IN_PROGRESS or
// PUBLISHED; Meta documents it as the way to learn whether a publish whose
// answer was lost took effect
// (https://developers.facebook.com/docs/threads/troubleshooting). It does
// not name the media id, so the post itself is found by fingerprint among
// the account's threads.
//
// # How the port maps to the API
//
//   - Publish refuses text over 500 characters as Threads counts them (see
//     MeasureText) and any attachment, then creates a container, hands its id
//     to PublishRequest.Checkpoint (stopping if that fails: nothing is
//     visible yet) and publishes it. With PublishRequest.Resume it first
//     reads that container: FINISHED is published as is, PUBLISHED is not
//     published again (its post is looked up and returned), EXPIRED or ERROR
//     get a new container, IN_PROGRESS is NotPerformed for a minute.
//   - Lookup reads the recorded container (LookupQuery.Checkpoint) when
//     there is one: FINISHED, EXPIRED and ERROR prove the post absent,
//     PUBLISHED proves it present and the post is then found by fingerprint.
//     Without a container it reads GET /v1.0/{user-id}/threads newest first,
//     back to LookupQuery.After or NotBefore, within bounds; a search that
//     hits its bound is *platform.Inconclusive.
//   - Recent reads the same list. Delete is DELETE /v1.0/{media-id}; Exists
//     is GET /v1.0/{media-id}?fields=id.
//   - Refresh is GET /refresh_access_token?grant_type=th_refresh_token: a
//     long-lived token (60 days) is exchanged for a new one. Threads issues
//     no refresh token.
//   - UploadMedia is not supported: Threads fetches images and videos from
//     a public URL (image_url, video_url) and has no upload endpoint, so it
//     answers Rejected with Reason "media_unsupported" and Capabilities
//     declares MaxMedia 0.
//
// Every HTTP call goes through package httpcall: writes (both create
// steps, delete, the token grants) are sent exactly once, reads are
// retried. Graph API errors come as {"error":{"message","type","code",
// "error_subcode","fbtrace_id"}}, mostly with HTTP 400, so the error code
// and not the status decides the class (see classify): the throttling
// codes are NotPerformed, 190 is Unauthorized.
//
// The access token is sent as "Authorization: Bearer", never in a URL,
// except on the token endpoints whose documented form carries it in the
// query; no error this package returns contains a token, a client secret
// or an authorization code.
//
// Connecting an account: AuthorizeURL for the account's owner to open,
// then ExchangeCode with the code Threads redirects with (short-lived
// token, exchanged at once for a long-lived one), then Client.Profile for
// the account's user id.
package threads
