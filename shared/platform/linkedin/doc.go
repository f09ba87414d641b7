// Package linkedin is the platform.Client for one LinkedIn author (a
// member, urn:li:person:…, or an organization page, urn:li:organization:…),
// talking to LinkedIn's versioned REST Posts API
// (https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/posts-api).
// Every call goes through package httpcall: writes are sent exactly once,
// reads are retried a few times.
//
// What LinkedIn guarantees, and what it does not:
//
//   - No idempotency key. A create whose answer is lost can only be found
//     again by reading the author's posts, and reading a member's posts
//     needs the restricted r_member_social permission (organizations:
//     r_organization_social). Without it (Config.CanReadPosts, false by
//     default for members) Capabilities.ReadableHistory is false and an
//     unknown outcome goes to an operator.
//   - A duplicate detector: a create whose content repeats a recent post is
//     refused 422 DUPLICATE_POST naming the other post's URN. Publish
//     returns it as platform.Rejected with platform.ReasonDuplicate and the
//     URN in the message: a signal to look, not a receipt (the URN can be
//     a "ghost" of a deleted post, ComposioHQ/composio#2710).
//   - Versioned API: every call carries LinkedIn-Version (DefaultAPIVersion
//     unless Config.APIVersion says otherwise). LinkedIn retires versions
//     after about a year and then answers 426 NONEXISTENT_VERSION to every
//     call; that is Rejected with ReasonAPIVersionSunset and a message
//     telling the operator to move to a newer version.
//   - Daily rate limits per application and per member, not published,
//     reset at midnight UTC, no rate-limit headers
//     (https://learn.microsoft.com/en-us/linkedin/shared/api-guide/concepts/rate-limits):
//     Capabilities.PostingLimits is empty and a 429 without Retry-After
//     waits until the next midnight UTC.
//
// How each port method maps to the API:
//
//   - Publish: POST /rest/posts with the text as the commentary, escaped
//     for LinkedIn's "little" text format (escapeLittle); 201 with the
//     post's URN in the x-restli-id header. req.Handle is not sent (there
//     is nowhere to send it). Attachments are refused before sending
//     (MaxMedia 0, see UploadMedia).
//   - Lookup: GET /rest/posts?q=author (FINDER), newest modified first,
//     matching the fingerprint of each post's unescaped commentary among
//     the posts created since LookupQuery.After (its createdAt, read with
//     GET /rest/posts/{urn}) or NotBefore; reading more than lookupDepth
//     posts without leaving that window, or a 403 (no read permission), is
//     platform.Inconclusive.
//   - Recent: the same finder, newest modified first.
//   - Delete: DELETE /rest/posts/{urn}; LinkedIn's deletes are idempotent
//     (204 again, or 404 for a post already gone: both nil).
//   - Exists: GET /rest/posts/{urn}: 200 true, 404 false, 403 Rejected
//     with ReasonReadForbidden (LinkedIn will not say; an operator looks).
//   - UploadMedia: not implemented (Rejected "media_unsupported"): images
//     need the Images API's initializeUpload, an upload and a
//     content.media reference, which this package does not do yet.
//   - Refresh: the refresh-token grant at
//     https://www.linkedin.com/oauth/v2/accessToken, which LinkedIn offers
//     only to approved partners (programmatic refresh tokens).
//
// Connecting an account takes AuthorizeURL and ExchangeCode (LinkedIn's
// authorization-code flow), then Me (the member's person URN, the
// account's RemoteID).
package linkedin
