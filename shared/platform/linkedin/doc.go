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
//     for LinkedIn's "little" text format (escapeLittle), and the images
//     of req.MediaIDs as content: content.media {id, altText} for one
//     (posts-api, "Create an Image Post"), content.multiImage.images[] for
//     2 to 20 (https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/multiimage-post-api);
//     201 with the post's URN in the x-restli-id header. req.Handle is not
//     sent (there is nowhere to send it).
//   - Lookup: GET /rest/posts?q=author (FINDER), newest modified first,
//     matching the fingerprint of each post's unescaped commentary and
//     images (mapped through LookupQuery.MediaSHA256) among the posts
//     created since LookupQuery.After (its createdAt, read with GET
//     /rest/posts/{urn}) or NotBefore; reading more than lookupDepth posts
//     without leaving that window, or a 403 (no read permission), is
//     platform.Inconclusive.
//   - Recent: the same finder, newest modified first.
//   - Delete: DELETE /rest/posts/{urn}; LinkedIn's deletes are idempotent
//     (204 again, or 404 for a post already gone: both nil).
//   - Exists: GET /rest/posts/{urn}: 200 true, 404 false, 403 Rejected
//     with ReasonReadForbidden (LinkedIn will not say; an operator looks).
//   - UploadMedia: one image through the Images API
//     (https://learn.microsoft.com/en-us/linkedin/marketing/community-management/shares/images-api):
//     POST /rest/images?action=initializeUpload with the author as owner
//     (a write, sent once), a PUT of the bytes to the answered upload URL
//     (a write, sent once; the URL must be https on a linkedin.com host,
//     since the bearer token goes with it, and no error quotes it: it
//     carries signed parameters), then GET /rest/images/{urn} (reads) with
//     backoff until the image is AVAILABLE, for at most a minute or
//     what is left of the call's deadline, whichever ends first (a 403
//     to that read, a token that may not read images, ends the wait with
//     the upload accepted). PROCESSING_FAILED is Rejected; a 5xx or lost
//     answer on either write, or an image not seen AVAILABLE in time, is
//     Ambiguous, which is safe to upload again because an image attached
//     to no post is shown nowhere. Only JPG, GIF and PNG images of fewer
//     than 36,152,320 pixels are sent (Capabilities: MaxMedia 20,
//     MaxMediaPixels, no documented byte limit).
//   - Refresh: the refresh-token grant at
//     https://www.linkedin.com/oauth/v2/accessToken, which LinkedIn offers
//     only to approved partners (programmatic refresh tokens).
//
// Alt text goes on the post, not on the upload, while the port's
// PublishRequest carries only media ids. So, as the Bluesky adapter does,
// UploadMedia returns a media id that carries both: the image URN, a
// space, and the alt text query-escaped (encodeMediaID; the bare URN when
// there is none). Publish decodes it and refuses a malformed id before
// sending. Read-back rebuilds the same id from content.media {id,
// altText} or content.multiImage.images[], so a post's RemotePost.MediaIDs
// are the ids its uploads returned and LookupQuery.MediaSHA256 maps them;
// Lookup also matches an image by its URN alone, should LinkedIn return
// another alt text than the one sent.
//
// Connecting an account takes AuthorizeURL and ExchangeCode (LinkedIn's
// authorization-code flow), then Me (the member's person URN, the
// account's RemoteID).
package linkedin
