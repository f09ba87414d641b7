// Package telegram is the platform.Client for one Telegram chat (a channel,
// group or private chat) that a bot posts to through the Telegram Bot API
// (https://core.telegram.org/bots/api).
//
// Every call is POST {BaseURL}/bot<token>/<method> with a JSON body
// (https://core.telegram.org/bots/api#making-requests); BaseURL defaults to
// https://api.telegram.org. Every answer is {"ok": true, "result": …} or
// {"ok": false, "error_code": N, "description": "…", "parameters": {…}}
// with the HTTP status equal to error_code. The bot token is part of the
// URL path, so it is never put in an error: httpcall drops URLs from
// transport errors, this package never formats a URL into an error, and
// every error it returns is scrubbed of the token as a last guard (a
// proxy's error page may echo the request path). Config and Client print
// without it.
//
// # What Telegram guarantees, and what it does not
//
// The Bot API has no idempotency key and a bot cannot read a chat's
// history: there is no method that lists the messages of a chat, nor one
// that reads a message by id (bots only receive updates about new
// messages, never about their own). So a sendMessage whose answer was lost
// cannot be confirmed or ruled out by reading the chat, and sending it
// again may post it twice. Capabilities says so (NativeIdempotency,
// LookupByHandle and ReadableHistory all false), which makes the ledger's
// guarantee platform.Human: an unknown outcome is held for an operator who
// looks at the chat.
//
// # How each port method maps to the Bot API
//
//   - Publish: sendMessage {"chat_id", "text"} sent exactly once, as plain
//     text (no parse_mode, so nothing in the text is read as markup; link
//     previews as the chat's default). The Message answered gives the
//     receipt: RemoteID is its message_id, URL is https://t.me/<chat
//     username>/<message_id> when the chat has a public username, else "".
//     Text longer than 4096 UTF-16 code units is refused before any call
//     (see MeasureText). The request's handle is not sent: Telegram has no
//     field for it.
//   - Lookup, Recent and Exists: no call; *platform.Inconclusive saying a
//     bot cannot read the chat's history. Lookup never answers "not found",
//     which would let the ledger re-send a message that may be there.
//   - Delete: deleteMessage {"chat_id", "message_id"}. "message to delete
//     not found" is nil (already gone); "message can't be deleted" (older
//     than 48 hours, or the bot lacks the right) is Rejected with reason
//     "delete_window_passed".
//   - UploadMedia: Rejected "media_unsupported", and Publish refuses media
//     ids the same way (Capabilities.MaxMedia is 0). Telegram takes a photo
//     together with its message (sendPhoto / sendMediaGroup, multipart), not
//     as a separate upload returning an id to attach later. Supporting it
//     needs the port to hand the media bytes to Publish (e.g.
//     PublishRequest.Media []platform.MediaUpload), so the adapter can send
//     sendPhoto or sendMediaGroup as the one create. Uploading to some
//     private chat first to obtain a file_id would post a message
//     somewhere else, and is not done.
//   - Refresh: bot tokens do not expire; a refused token was revoked
//     (@BotFather /revoke), so Refresh is Rejected "reconnect_needed".
//
// GetMe reads the bot's identity for a token, and GetChat (getChat, a read
// retried like GetMe) the chat it is to post to: its numeric id, type,
// title and username, or "chat not found" when the bot cannot see it.
// Both verify an account when it is added.
//
// Failures are classified by httpcall: any 5xx or a lost answer after the
// request was written is Ambiguous, 429 is NotPerformed with
// parameters.retry_after as RetryAfter, 401 is Unauthorized and other 4xx
// are Rejected, with a reason read from the description where Telegram
// has a well-known one (chat_not_found, bot_blocked, bot_kicked,
// bot_not_member, not_enough_rights, text_too_long, text_empty). A group upgraded to a supergroup
// answers with parameters.migrate_to_chat_id: Rejected "chat_migrated",
// naming the new chat id for the operator to store on the account.
package telegram
