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
//     unpublished container expires after 24 hours. A post with images
//     has an IMAGE container (image_url, text, alt_text), or for 2 to 20
//     images an item container per image (is_carousel_item=true) and a
//     CAROUSEL container naming them (children, text); Threads fetches
//     each image from its URL and processes it asynchronously.
//  2. POST /v1.0/{user-id}/threads_publish (creation_id=<container id>)
//     publishes it and answers the post's media id. This is the side
//     effect.
//
// The container's status, GET /v1.0/{container-id}?fields=status,
// error_message, is one of EXPIRED, ERROR, FINISHED, IN_PROGRESS or
// PUBLISHED; Meta documents it as the way to learn whether a publish whose
// answer was lost took effect
// (https://developers.facebook.com/docs/threads/troubleshooting). It does
// not name the media id, so the post itself is found among the account's
// threads: by fingerprint, or, for a post with images (which Threads
// re-hosts, so their copies cannot be fingerprinted), by its text and
// number of images once the container says PUBLISHED.
//
// # How the port maps to the API
//
//   - Publish refuses text over 500 characters as Threads counts them (see
//     MeasureText) and remote media ids, then creates a container, hands
//     its id to PublishRequest.Checkpoint (stopping if that fails: nothing
//     is visible yet) and publishes it. With PublishRequest.Resume it first
//     reads that container: FINISHED is published as is, PUBLISHED is not
//     published again (its post is looked up and returned: only threads
//     created since PublishRequest.CreatedAt, less five minutes of clock
//     skew, are candidates), EXPIRED gets a new container, IN_PROGRESS is
//     NotPerformed for a minute. ERROR is Rejected with Meta's
//     error_message for a post with images, as when the container is
//     awaited (the same image fails again; a new container would loop
//     with an image both slow and broken), and gets a new container for a
//     text post (nothing waits for a text container, so no such loop;
//     a text Threads refuses is refused at threads_publish).
//   - Publish with PublishRequest.Media (images, each with the public URL
//     the publisher gives it) makes the IMAGE container, or the item
//     containers and then the CAROUSEL container, and checkpoints the one
//     to publish. Before each next step it polls the containers' status
//     until FINISHED, as Meta recommends, within a bounded wait that ctx
//     shortens: still IN_PROGRESS is NotPerformed for a minute (the
//     checkpointed container is resumed), ERROR is Rejected with Meta's
//     error_message. A carousel's items are checkpointed too, as
//     "items:<id1>,<id2>,…", once all are made and before they are
//     awaited (the CAROUSEL container's id replaces them once made), so
//     items slower than one call are resumed by the next attempt rather
//     than made again (their statuses read side by side, a few at once):
//     all FINISHED make the carousel of them, IN_PROGRESS
//     are awaited again, EXPIRED (or more than the images) start over
//     with new items, ERROR is Rejected. Before each item is sent, ctx's
//     deadline must leave time for it and for threads_publish; when it
//     does not, the items made so far (the first ones, in display order)
//     are checkpointed the same way and the call is NotPerformed for a
//     minute without sending it, and the next attempt keeps them (as
//     above) and makes only the missing ones: a carousel too big for one
//     call is made over several. Nothing is visible before
//     threads_publish: a container whose creation answer was lost is
//     Ambiguous like any write, and a look without a recorded container
//     finds nothing and lets the entry be sent again. Attachments without
//     a URL, not JPEG or PNG (Capabilities.MediaFormats, so other formats
//     are re-encoded when the post is added), more than 20, or with alt
//     text over 1,000 characters are refused before sending. An image's
//     URL may be signed: no error carries it, nor the query of any URL
//     that Meta's messages quote (an earlier attempt's signed URL).
//   - Lookup reads the recorded container (LookupQuery.Checkpoint) when
//     there is one: FINISHED, EXPIRED and ERROR prove the post absent,
//     PUBLISHED proves it present and the post is then found by
//     fingerprint, or with media (LookupQuery.MediaCount) as the one thread
//     of the window with the same normalised text and number of
//     attachments (a carousel's children, 1 for an image). A checkpoint of
//     items (all of them, or the first ones) is not found, without a
//     request: a carousel is published only after its own container id
//     replaced the items in the ledger, so none was published under it.
//     Without a container it reads GET /v1.0/{user-id}/threads newest
//     first, back to LookupQuery.After or NotBefore, within bounds, by
//     fingerprint only: a post with media is never found by such a loose
//     match, and a thread of the same text and count makes the look
//     *platform.Inconclusive. A search that hits its bound is
//     Inconclusive too.
//   - Recent reads the same list. Delete is DELETE /v1.0/{media-id}; Exists
//     is GET /v1.0/{media-id}?fields=id.
//   - Refresh is GET /refresh_access_token?grant_type=th_refresh_token: a
//     long-lived token (60 days) is exchanged for a new one. Threads issues
//     no refresh token.
//   - UploadMedia is not used: Threads fetches images and videos from a
//     public URL (image_url, video_url) and has no upload endpoint.
//     Capabilities declares InlineMedia and MediaByURL, so the publisher
//     passes each attachment to Publish with a URL instead of uploading
//     it, and UploadMedia answers Rejected with Reason
//     "media_unsupported". Images only (JPEG or PNG, 8 MB, up to 20 a
//     post); videos are not posted.
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
// query; no error this package returns contains a token, a client secret,
// an authorization code or an image's URL (which a presigned URL's
// signature makes a secret too).
//
// Connecting an account: AuthorizeURL for the account's owner to open,
// then ExchangeCode with the code Threads redirects with (short-lived
// token, exchanged at once for a long-lived one), then Client.Profile for
// the account's user id.
package threads
