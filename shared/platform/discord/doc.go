// Package discord is the platform.Client for posting to one Discord
// channel, either as a bot (Mode "bot") or through an incoming webhook
// (Mode "webhook"). Every call goes through package httpcall: a write is
// sent exactly once and classified there (any 5xx or lost answer after the
// request was written is Ambiguous, 429 NotPerformed, 401 Unauthorized,
// other 4xx Rejected with a reason from Discord's JSON error code).
//
// # Accounts
//
// The mode follows the account's platform name (see Connector):
// post.Account.Platform "discord" is a bot, "discord-webhook" a webhook.
//
//   - Bot: post.Account.RemoteID is the channel id the bot posts to;
//     platform.Credential.AccessToken is the bot token, sent as
//     "Authorization: Bot <token>".
//   - Webhook: post.Account.RemoteID is the webhook id;
//     platform.Credential.AccessToken is the webhook token. The token is the
//     webhook's only secret and travels in the URL path, so it is kept in
//     the credential store, never in the account, and no error of this
//     package carries it (httpcall drops URLs from transport errors, and
//     every error returned here is scrubbed of the client's token).
//
// Connecting an account reads what it will act as: CurrentUser (GET
// /users/@me with the bot token) names the bot, and Webhook (GET
// /webhooks/{id}/{token}) checks a webhook's id and token together and
// names the webhook and its channel.
//
// post.Account.BaseURL is the API origin, https://discord.com when empty;
// every route is under /api/v10 (the unversioned /api routes go to the
// deprecated v6, https://discord.com/developers/docs/reference#api-versioning).
//
// # What Discord guarantees, and how each port method maps to it
//
// Publish (bot) is POST /api/v10/channels/{channel}/messages with
// {"content", "nonce", "enforce_nonce": true}. With enforce_nonce "if another
// message was created by the same author with the same nonce, that message
// will be returned and no new message will be created", for "the past few
// minutes" (https://discord.com/developers/docs/resources/message#create-message;
// change log of 2024-02-12). The nonce is at most 25 characters and the
// ledger's handle is 26, so the nonce is derived from the handle (see
// Nonce): the same on every attempt, so a re-send within those minutes
// returns the first message instead of posting a second.
//
// Publish (webhook) is POST /api/v10/webhooks/{id}/{token}?wait=true with
// {"content"}. Without wait=true Discord answers 204 before the message is
// saved and "a message that is not saved does not return an error"
// (https://discord.com/developers/docs/resources/webhook#execute-webhook).
// Webhooks take no nonce: there is no native idempotency.
//
// Lookup (bot) reads the channel forward from the query's point,
// GET /api/v10/channels/{channel}/messages?after=&limit=100
// (https://discord.com/developers/docs/resources/message#get-channel-messages):
// After when it is a message id, otherwise a snowflake made from NotBefore
// ((ms since 1420070400000) << 22,
// https://discord.com/developers/docs/reference#snowflake-ids-in-pagination).
// A message is ours when its author is the bot (GET /api/v10/users/@me, read
// once) and its nonce equals ours, or, when Discord does not return the
// nonce, its fingerprint (text and attached files, see below) equals the
// query's. Discord returns the nonce in the create answer and the
// gateway's Message Create event only; a message read back over REST
// carries none (discord.py#2451: "the nonce is
// not stored with the message on Discord's server"), so
// Capabilities.LookupByHandle is false and the match is by fingerprint.
// Discord returns no messages at all, rather than an error, to a bot
// without READ_MESSAGE_HISTORY: a Lookup that saw no message at all proves
// that it can read the channel (by reading its newest message) before it
// answers "not found"; an empty or unreadable channel is Inconclusive. A window longer than lookupPages pages is Inconclusive.
//
// Lookup (webhook) cannot read: a webhook token reads a message only by its
// id (GET /webhooks/{id}/{token}/messages/{message}), never the channel's
// history. Capabilities.ReadableHistory is false and Lookup returns
// *platform.Inconclusive: an unknown outcome is held for an operator.
//
// Delete is DELETE …/messages/{message} (204); Discord's 404 with code
// 10008 (Unknown Message) means the message is already gone and is nil.
// Exists is GET …/messages/{message}; 10008 is false.
//
// Text is limited to 2000 characters, which Discord counts in code points
// ("Our API uses Python 3, so the API calculates length based on the
// number of codepoints", discord/discord-api-docs#1315): the Client is a
// platform.TextMeasurer counting code points, not graphemes, so a long
// emoji sequence is refused here rather than by Discord.
//
// Images go with the create, as Discord takes them (there is no upload
// ahead of a message): Capabilities.InlineMedia is true, the publisher
// passes the bytes in PublishRequest.Media, and UploadMedia (or a Publish
// with uploaded MediaIDs) is Rejected "media_unsupported". A create with
// files is one multipart/form-data request, bot and webhook alike
// (https://discord.com/developers/docs/reference#uploading-files): a
// payload_json part holding the same JSON body as a text-only create plus
// "attachments": [{"id": n, "filename", "description": alt}], then one
// part "files[n]" per file with its filename and Content-Type, in display
// order. It is sent exactly once through httpcall and classified as any
// create is; the nonce goes in payload_json. Refused before sending: more
// than 10 files (JSON error 30015, "Maximum number of attachments in a
// message reached (10)"), a file over 10 MiB (Discord's default per-file
// limit, the one a server without boosts has, webhooks included since
// 2025-01-16: reference#uploading-files and the change log of 2024-12-16),
// alt text over 1024 characters, and a request over 25 MiB ("The maximum
// request size when sending a message is 25 MiB", message#create-message).
//
// A file is matched on read-back by its name. The publisher names each
// file <sha256 hex>.<ext> (its media ref), Publish refuses any other name
// (or a hash that is not its bytes'), and Discord keeps such a name as
// sent: it cleans file names like werkzeug's secure_filename, keeping
// ASCII letters, digits, "_", "." and "-" and dropping leading "." and "_"
// (discord/discord-api-docs#7754, #4292), which leaves hex digits, a dot
// and an extension alone. A message's fingerprint is then its text plus,
// per attachment, the SHA-256 its filename states, or "remote:"+id for
// any other name, which never matches a post of ours. The same text with
// another file, a file missing or one more is not a match; the same files
// in another order are (fingerprints sort media). RemotePost.MediaIDs are
// the attachments' ids in order.
//
// Refresh: bot tokens and webhook tokens do not expire and have no refresh
// grant; Refresh is Rejected "reconnect_needed".
package discord
