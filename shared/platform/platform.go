// Package platform is the port every social-platform adapter implements, the
// four failure classes adapters translate their errors into (DESIGN §4), and
// the content fingerprint used to recognise a post on a platform.
//
// Adapters never retry a write on their own: a create, upload or delete is
// sent exactly once per call, and the ledger's state machine decides whether
// a second call is safe. Reads may be retried freely.
package platform

import (
	"context"
	"time"
)

// Client is one account's connection to one platform.
type Client interface {
	// Publish creates a post. The request's Handle is the ledger's platform
	// handle (Mastodon Idempotency-Key, Bluesky rkey, Discord nonce) and is
	// the same on every attempt for one ledger entry.
	Publish(ctx context.Context, req PublishRequest) (Receipt, error)
	// Lookup searches the account's recent posts for one created by the
	// query's handle or carrying its fingerprint. found is false when the
	// platform was read successfully and no such post exists.
	Lookup(ctx context.Context, q LookupQuery) (post RemotePost, found bool, err error)
	// Recent returns up to n of the account's newest posts, newest first.
	Recent(ctx context.Context, n int) ([]RemotePost, error)
	// Delete removes a post by its remote id.
	Delete(ctx context.Context, remoteID string) error
	// Exists reports whether a post with the remote id is on the platform.
	Exists(ctx context.Context, remoteID string) (bool, error)
	// UploadMedia uploads one attachment and waits until the platform has
	// processed it and it can be attached to a post.
	UploadMedia(ctx context.Context, m MediaUpload) (MediaReceipt, error)
	// Refresh exchanges a refresh token for a new credential. A response
	// without a refresh token keeps the old one. A refresh whose request was
	// written and whose answer was lost (or a 5xx) is Ambiguous: the
	// refresh token may have been spent.
	Refresh(ctx context.Context, cred Credential) (Credential, error)
	// Capabilities declares what the platform can do and its limits.
	Capabilities() Capabilities
}

// PublishRequest is one create call.
type PublishRequest struct {
	// Handle is the ledger's platform handle, fixed at the entry's first write.
	Handle string
	// Text is the post body as prepared by the operator.
	Text string
	// MediaIDs are remote ids returned by UploadMedia, in display order.
	MediaIDs []string
	// CreatedAt is fixed for the ledger entry (its slot) and the same on
	// every attempt: a platform whose record carries a client-set time
	// (Bluesky's createdAt) must send the same bytes each time.
	CreatedAt time.Time
	// Checkpoint, when not nil, records on the ledger entry a handle the
	// platform made in a first step (a Threads container id), before the
	// step that publishes. An adapter with a two-step create calls it
	// between the steps and stops if it fails: a later attempt gets the
	// handle back as Resume, and Lookup as LookupQuery.Checkpoint. It may
	// be called more than once (Threads' carousel items, then the
	// carousel); each call replaces the handle recorded before.
	Checkpoint func(ctx context.Context, handle string) error
	// Resume is the handle an earlier attempt recorded through Checkpoint,
	// or "".
	Resume string
	// Reply, when not nil, makes the post a reply: a thread's part k+1
	// answers part k (Parent) in the thread that part 1 started (Root).
	// Only a platform with Capabilities.Replies is given one. Every
	// attempt of one ledger entry carries the same.
	Reply *ReplyRef
	// Media are the attachments' bytes, in display order, for a platform
	// that takes them with the create (Capabilities.InlineMedia: a
	// Telegram photo) instead of uploads made before it (MediaIDs); for a
	// platform that fetches them itself (Capabilities.MediaByURL: Threads)
	// they carry a URL instead of the bytes.
	Media []MediaUpload
}

// ReplyRef names the posts a thread's part replies to, by their remote
// ids (Receipt.RemoteID): Parent is the part before it, Root the thread's
// first part (the same as Parent for part 2).
type ReplyRef struct {
	Parent string
	Root   string
}

// Receipt is the platform's answer to a successful create.
type Receipt struct {
	RemoteID  string
	URL       string
	CreatedAt time.Time
}

// LookupQuery asks whether a post exists. Either field may be empty; an
// adapter uses the handle where the platform can be read by it
// (Capabilities.LookupByHandle) and the fingerprint otherwise.
type LookupQuery struct {
	Handle      string
	Fingerprint string
	// MediaSHA256 maps remote media ids to the SHA-256 of the uploaded bytes,
	// so a remote post's attachments can be fingerprinted.
	MediaSHA256 map[string]string
	// Text is the post's text as sent, when known. An adapter whose
	// rendering loses text may use it to skip re-reading candidates that
	// cannot be a rendering of it; the match itself is by Fingerprint.
	Text string
	// After is the remote id of the account's newest post read right
	// before the first send (the pre-publish dedup read): Lookup reads only
	// posts newer than it, whatever their timestamps say, and pages until
	// the newest. StartOfHistory means the account had no post then. Empty
	// means no point was recorded; Lookup then falls back to NotBefore.
	After string
	// NotBefore bounds a search without After: posts created earlier are
	// not candidates.
	NotBefore time.Time
	// Checkpoint is the handle recorded by PublishRequest.Checkpoint, or "".
	Checkpoint string
	// CreatedAt is the PublishRequest.CreatedAt of the entry's sends: an
	// adapter that derives its handle from it (Bluesky's record key) needs
	// it to find the post.
	CreatedAt time.Time
	// Reply is the PublishRequest.Reply of the entry's sends: nil for a
	// post that is no reply. An adapter that reads a post's parent back
	// (RemotePost.ReplyTo) takes a post for this one only when it replies
	// to Reply.Parent (or to nothing, for nil): a thread's parts may carry
	// the same text, and only its place in the chain tells part k apart.
	Reply *ReplyRef
	// MediaCount is the number of attachments the post carries. A
	// platform that re-hosts images (Threads) cannot fingerprint its
	// copies; once another proof (a published container) shows the post
	// exists, its adapter picks the post by text and this count.
	MediaCount int
}

// StartOfHistory is LookupQuery.After for an account that had no post
// before the first send: every post on it is a candidate.
const StartOfHistory = "0"

// RemotePost is a post as read back from a platform, with platform
// rendering undone (Mastodon HTML → text).
type RemotePost struct {
	RemoteID  string
	Text      string
	MediaIDs  []string
	URL       string
	CreatedAt time.Time
	// ReplyTo is the remote id of the post it replies to, "" when it is
	// no reply (or the adapter's read does not say: an adapter without
	// Capabilities.Replies).
	ReplyTo string
}

// RepliesTo reports whether p answers what q's post answers: the same
// parent, or none when q's post is no reply.
func (p RemotePost) RepliesTo(reply *ReplyRef) bool {
	if reply == nil {
		return p.ReplyTo == ""
	}
	return p.ReplyTo == reply.Parent
}

// Fingerprint returns the post's content fingerprint, mapping its media ids
// to SHA-256s through shaByRemoteID. A media id missing from the map is
// fingerprinted by its id, so it never matches a post of ours.
func (p RemotePost) Fingerprint(shaByRemoteID map[string]string) string {
	shas := make([]string, 0, len(p.MediaIDs))
	for _, id := range p.MediaIDs {
		if sha, ok := shaByRemoteID[id]; ok {
			shas = append(shas, sha)
			continue
		}
		shas = append(shas, "remote:"+id)
	}
	return Fingerprint(p.Text, shas)
}

// MediaUpload is one attachment to upload.
type MediaUpload struct {
	// Handle is the upload's ledger handle.
	Handle      string
	Filename    string
	ContentType string
	Data        []byte
	Alt         string
	// URL is where the platform fetches the attachment (Capabilities.
	// MediaByURL), in place of Data: a public, short-lived address.
	URL string
}

// MediaReceipt identifies an uploaded, processed attachment.
type MediaReceipt struct {
	RemoteID string
	URL      string
}

// Credential is an account's OAuth credential. It is never logged.
type Credential struct {
	AccessToken  string
	RefreshToken string
	// ExpiresAt is zero when the access token does not expire.
	ExpiresAt time.Time
	// ClientID and ClientSecret are the OAuth app that issued the tokens
	// (registered when the account was connected); refresh grants must use
	// it. Empty means the deployment's default app.
	ClientID, ClientSecret string
	// RefreshLostAt is set when a refresh with RefreshToken was sent and
	// its answer lost: the platform may have rotated the tokens, so the
	// stored refresh token may already be spent. The next refresh tries it
	// once more; a refusal then means the account must be reconnected.
	RefreshLostAt time.Time
}

// String hides the tokens, so a credential printed by mistake leaks nothing.
func (c Credential) String() string { return "platform.Credential{redacted}" }

// GoString hides the tokens from %#v as well.
func (c Credential) GoString() string { return c.String() }

// Capabilities declares what an adapter can do.
type Capabilities struct {
	// Platform is the adapter's name, e.g. "mastodon".
	Platform string
	// NativeIdempotency: the platform itself deduplicates a create that
	// carries the same handle (for a bounded time).
	NativeIdempotency bool
	// LookupByHandle: Lookup can find a post by its handle alone.
	LookupByHandle bool
	// ReadableHistory: the account's posts can be read back at all. Without
	// it an unknown outcome goes to a human (Telegram, webhooks).
	ReadableHistory bool
	// MaxTextGraphemes is the text limit in user-perceived characters.
	MaxTextGraphemes int
	// MaxTextWithMedia is the text limit of a post that carries media, when
	// it is lower (Telegram's photo caption); 0 means MaxTextGraphemes.
	MaxTextWithMedia int
	// MaxTextBytes is a limit on the text's length in UTF-8 bytes that
	// applies besides MaxTextGraphemes (Bluesky's 3,000); 0: none.
	MaxTextBytes int
	// MaxMedia is the largest number of attachments on one post.
	MaxMedia int
	// MaxMediaBytes and MaxMediaPixels are the largest image the platform
	// takes (0: no known limit); images are fitted to them when a post is
	// added (package mediafit).
	MaxMediaBytes  int64
	MaxMediaPixels int64
	// MaxMediaTotalBytes is the most bytes of all of a post's attachments
	// together (Discord's request limit); 0: no limit beyond each one's.
	MaxMediaTotalBytes int64
	// MediaFormats are the image content types the platform takes
	// ("image/jpeg", …); images in another are re-encoded when the post
	// is added. Empty: JPEG, PNG and GIF.
	MediaFormats []string
	// MaxAltText is the most characters (Unicode code points) of an
	// image's alt text the platform takes; 0: no known limit. Validation
	// refuses a longer one before the post is stored.
	MaxAltText int
	// Replies: a post can reply to one of the account's own, so a thread
	// goes out as a reply chain (PublishRequest.Reply), and the adapter
	// reads a post's parent back (RemotePost.ReplyTo) to tell a thread's
	// parts apart. A thread is refused for an account on a platform
	// without it.
	Replies bool
	// InlineMedia: attachments go with the create (PublishRequest.Media);
	// UploadMedia is not used.
	InlineMedia bool
	// MediaByURL: the platform fetches each attachment from a public URL
	// given with the create (Threads' image_url), so PublishRequest.Media
	// carry URL and no Data. A runtime that cannot give an attachment a
	// public URL cannot post media there. Implies InlineMedia.
	MediaByURL bool
	// Handle says what the ledger's handle becomes on this platform, for
	// the guarantee table (e.g. "Idempotency-Key header, kept 1 h").
	Handle string
	// ReadBack says how Lookup reads the platform, or why it cannot.
	ReadBack string
	// PostingLimits are the platform's documented posting budgets per
	// account; the publisher spaces sends to stay under them.
	PostingLimits []Rate
	// DuplicateWindow: the platform refuses a post whose text repeats one
	// of the account's own posts from less than this long before (X's
	// duplicate-content 403); 0: no such rule is known. A recurring rule
	// whose occurrences would repeat a text to the account within it is
	// refused before any occurrence is scheduled.
	DuplicateWindow time.Duration
}

// Rate is a budget of Count posts per Per.
type Rate struct {
	Count int
	Per   time.Duration
}

// Guarantee is what oncepost can promise on a platform when a create's
// outcome is unknown.
type Guarantee string

const (
	// Exact: the platform deduplicates a repeated create by our handle,
	// and Lookup reads the post by that handle.
	Exact Guarantee = "exact"
	// ReadBack: an unknown outcome is resolved by reading the account's
	// posts back (by handle or fingerprint) before anything is re-sent.
	ReadBack Guarantee = "confirm by read-back"
	// Human: the platform cannot be read back; an unknown outcome is held
	// for an operator.
	Human Guarantee = "human"
)

// Guarantee derives the platform's guarantee from its capabilities.
func (c Capabilities) Guarantee() Guarantee {
	switch {
	case !c.ReadableHistory:
		return Human
	case c.NativeIdempotency && c.LookupByHandle:
		return Exact
	default:
		return ReadBack
	}
}

// TextMeasurer is implemented by clients whose platform does not count
// text in graphemes (X weighs URLs and wide characters): the length
// compared with MaxTextGraphemes.
type TextMeasurer interface {
	MeasureText(text string) int
}
