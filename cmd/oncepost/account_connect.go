package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"oncepost/shared/platform"
	"oncepost/shared/platform/bluesky"
	"oncepost/shared/platform/catalog"
	"oncepost/shared/platform/discord"
	"oncepost/shared/platform/linkedin"
	"oncepost/shared/platform/telegram"
	"oncepost/shared/platform/threads"
	"oncepost/shared/platform/x"
	"oncepost/shared/post"
)

// `account add` connects an account on every platform the catalog knows.
// Each platform has its flow, chosen by --platform:
//
//   - mastodon: a token (--token-file) or the instance's OAuth page
//     (--oauth), checked with verify_credentials (account.go);
//   - bluesky: a session opened with an app password (--handle,
//     --password-file); only the session's tokens are stored;
//   - telegram: a bot token (--token-file) checked with getMe, and the
//     chat it posts to (--chat) checked with getChat and stored by its
//     numeric id;
//   - discord: a bot token (--token-file) and a channel (--channel),
//     checked by reading the bot (users/@me) and the channel;
//   - discord-webhook: a webhook URL read from a file (--webhook-file),
//     split into its id and token and checked by reading the webhook;
//   - x, linkedin, threads: OAuth 2.0 with the operator's own app
//     (--client-id, --client-secret-file): the authorize page is printed,
//     the code comes back to a listener on 127.0.0.1 (--redirect-port) or
//     is pasted on stdin (--oob), and is exchanged for the credential,
//     whose user is then read.
//
// Secrets (tokens, passwords, client secrets, webhook URLs, codes) are
// read from files or stdin, never from arguments, and never printed: the
// flows never format one, and the command's error is scrubbed of every
// secret it saw as a last guard.

// oauthPlatforms connect through an OAuth app of the operator's.
var oauthPlatforms = []string{catalog.LinkedIn, catalog.Threads, catalog.X}

// defaultAPIs are the public APIs (--api-url's defaults).
var defaultAPIs = map[string]string{
	catalog.Bluesky:        bluesky.DefaultBaseURL,
	catalog.Telegram:       telegram.DefaultBaseURL,
	catalog.Discord:        discord.DefaultBaseURL,
	catalog.DiscordWebhook: discord.DefaultBaseURL,
	catalog.X:              x.DefaultBaseURL,
	catalog.LinkedIn:       linkedin.DefaultBaseURL,
	catalog.Threads:        threads.DefaultBaseURL,
}

// defaultRedirectPort is where the OAuth redirect is received unless
// --redirect-port says otherwise: http://127.0.0.1:8765/callback is what
// the operator registers with the app.
const defaultRedirectPort = 8765

// addFlags are account add's values.
type addFlags struct {
	id, platform string
	// mastodon
	url   string
	oauth bool
	// mastodon, telegram, discord
	tokenFile string
	// every platform but mastodon
	apiURL string
	// bluesky
	handle, passwordFile string
	// telegram, discord, discord-webhook
	chat, channel, webhookFile string
	// x, linkedin, threads
	clientID, clientSecretFile string
	redirectPort               int
	oob                        bool
	redirectURL, tokenURL      string
	wait                       time.Duration
}

// define declares the platform flags on fs.
func (f *addFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "url", "", "mastodon: the instance, e.g. https://mastodon.social (required)")
	fs.BoolVar(&f.oauth, "oauth", false, "mastodon: connect through the instance's OAuth page instead of a token")
	fs.StringVar(&f.tokenFile, "token-file", "", "mastodon, telegram, discord: read the access token or bot token from this file (- for stdin)")
	fs.StringVar(&f.apiURL, "api-url", "", "every platform but mastodon: the platform's API (default its public one; bluesky: the PDS, default https://bsky.social)")
	fs.StringVar(&f.handle, "handle", "", "bluesky: the account's handle or sign-in email, e.g. news.bsky.social (required)")
	fs.StringVar(&f.passwordFile, "password-file", "", "bluesky: read an app password from this file (- for stdin); only the session it opens is stored (required)")
	fs.StringVar(&f.chat, "chat", "", "telegram: the chat the bot posts to: a chat id (-1001234567890) or a public channel's @username (required)")
	fs.StringVar(&f.channel, "channel", "", "discord: the id of the channel the bot posts to (required)")
	fs.StringVar(&f.webhookFile, "webhook-file", "", "discord-webhook: read the webhook's URL, which holds its token, from this file (- for stdin) (required)")
	fs.StringVar(&f.clientID, "client-id", "", "x, linkedin, threads: your app's OAuth client id (required)")
	fs.StringVar(&f.clientSecretFile, "client-secret-file", "", "x, linkedin, threads: read your app's client secret from this file (- for stdin); required but for an X public client")
	fs.IntVar(&f.redirectPort, "redirect-port", defaultRedirectPort, "x, linkedin, threads: receive the redirect on http://127.0.0.1:PORT/callback, as registered with the app (0: any free port)")
	fs.BoolVar(&f.oob, "oob", false, "x, linkedin, threads: listen for nothing; paste the code, or the whole address the browser lands on, on stdin")
	fs.StringVar(&f.redirectURL, "redirect-url", "", "x, linkedin, threads with --oob: the redirect URL registered with the app (default http://127.0.0.1:PORT/callback)")
	fs.StringVar(&f.tokenURL, "token-url", "", "linkedin: the OAuth token endpoint of the code exchange (default "+linkedin.DefaultTokenURL+")")
	fs.DurationVar(&f.wait, "wait", 5*time.Minute, "x, linkedin, threads: how long to wait for the browser's redirect")
}

// mastodonAPI reports whether the platform is served by the Mastodon
// adapter (Mastodon, and any Mastodon-compatible platform the catalog
// adds): it is connected the Mastodon way, and its limits are the
// instance's.
func mastodonAPI(name string) bool {
	k, ok := catalog.Lookup(name)
	return ok && k.Capabilities.Platform == catalog.Mastodon
}

// addFlagPlatforms are the platforms each platform flag applies to.
func addFlagPlatforms() map[string][]string {
	var mastodonLike, others []string
	for _, n := range catalog.Names() {
		if mastodonAPI(n) {
			mastodonLike = append(mastodonLike, n)
		} else {
			others = append(others, n)
		}
	}
	tokenFile := append([]string{catalog.Discord, catalog.Telegram}, mastodonLike...)
	slices.Sort(tokenFile)
	return map[string][]string{
		"url":                mastodonLike,
		"oauth":              mastodonLike,
		"token-file":         tokenFile,
		"api-url":            others,
		"handle":             {catalog.Bluesky},
		"password-file":      {catalog.Bluesky},
		"chat":               {catalog.Telegram},
		"channel":            {catalog.Discord},
		"webhook-file":       {catalog.DiscordWebhook},
		"client-id":          oauthPlatforms,
		"client-secret-file": oauthPlatforms,
		"redirect-port":      oauthPlatforms,
		"oob":                oauthPlatforms,
		"redirect-url":       oauthPlatforms,
		"token-url":          {catalog.LinkedIn},
		"wait":               oauthPlatforms,
	}
}

// check refuses a platform flag given for another platform and a
// missing or malformed one, before anything is read or called.
func (f *addFlags) check(fs *flag.FlagSet) error {
	applies := addFlagPlatforms()
	set := map[string]bool{}
	var err error
	fs.Visit(func(fl *flag.Flag) {
		set[fl.Name] = true
		if ps, ok := applies[fl.Name]; ok && err == nil && !slices.Contains(ps, f.platform) {
			err = usageError(fl.Name, "is for --platform %s, not %s; leave it out (oncepost account add --help)", strings.Join(ps, ", "), f.platform)
		}
	})
	if err != nil {
		return err
	}
	if set["api-url"] {
		if _, err := apiURL(f.apiURL); err != nil {
			return err
		}
	}
	switch {
	case mastodonAPI(f.platform):
		switch {
		case f.url == "":
			return usageError("url", "is missing: give the instance's address, e.g. --url https://mastodon.social")
		case f.tokenFile == "" && !f.oauth:
			return badInput("no credential: give --token-file FILE (or - for stdin), or --oauth")
		case f.tokenFile != "" && f.oauth:
			return badInput("--token-file and --oauth: connect one way")
		}
		if _, err := instanceURL(f.url); err != nil {
			return err
		}
	case f.platform == catalog.Bluesky:
		switch {
		case strings.TrimSpace(strings.TrimPrefix(f.handle, "@")) == "":
			return usageError("handle", "is missing: give the account's handle or sign-in email, e.g. --handle news.bsky.social")
		case f.passwordFile == "":
			return usageError("password-file", "is missing: create an app password (Settings → Privacy and security → App passwords), save it in a file and give --password-file FILE (or - for stdin)")
		}
	case f.platform == catalog.Telegram:
		switch {
		case f.tokenFile == "":
			return usageError("token-file", "is missing: save the bot token @BotFather gave you in a file and give --token-file FILE (or - for stdin)")
		case f.chat == "":
			return usageError("chat", "is missing: give the chat the bot posts to, e.g. --chat @newschannel or --chat -1001234567890")
		case !telegramChat(f.chat):
			return usageError("chat", "%q: give a chat id (an integer such as -1001234567890) or a public channel's @username (letters, digits or '_')", f.chat)
		}
	case f.platform == catalog.Discord:
		switch {
		case f.tokenFile == "":
			return usageError("token-file", "is missing: save the bot's token (Developer Portal → your app → Bot → Reset Token) in a file and give --token-file FILE (or - for stdin)")
		case f.channel == "":
			return usageError("channel", "is missing: give the id of the channel the bot posts to (Developer Mode on, right-click the channel → Copy Channel ID)")
		case !discordID(f.channel):
			return usageError("channel", "%q is not a Discord id; copy the channel's id (Developer Mode on, right-click the channel → Copy Channel ID)", f.channel)
		}
	case f.platform == catalog.DiscordWebhook:
		if f.webhookFile == "" {
			return usageError("webhook-file", "is missing: save the webhook's URL (channel settings → Integrations → Webhooks → Copy Webhook URL) in a file and give --webhook-file FILE (or - for stdin)")
		}
	case slices.Contains(oauthPlatforms, f.platform):
		switch {
		case strings.TrimSpace(f.clientID) == "":
			return usageError("client-id", "is missing: give your %s app's OAuth client id, e.g. --client-id ID", f.platform)
		case strings.ContainsAny(f.clientID, " \t\r\n"):
			return usageError("client-id", "%q holds white space; give the client id alone", f.clientID)
		case f.clientSecretFile == "" && f.platform != catalog.X:
			return usageError("client-secret-file", "is missing: save your %s app's client secret in a file and give --client-secret-file FILE", f.platform)
		case f.redirectPort < 0 || f.redirectPort > 65535:
			return usageError("redirect-port", "%d: give a port between 1 and 65535 (0: any free one)", f.redirectPort)
		case f.oob && f.clientSecretFile == "-":
			return usageError("client-secret-file", "-: --oob reads the code from stdin; give the secret in a file")
		case set["wait"] && f.oob:
			return usageError("wait", "is how long the redirect is awaited; with --oob nothing is awaited, leave it out")
		case f.wait <= 0:
			return usageError("wait", "%s: give a positive duration, e.g. --wait 5m", f.wait)
		case set["redirect-url"] && !f.oob:
			return usageError("redirect-url", "is for --oob; without it the redirect is http://127.0.0.1:PORT/callback (--redirect-port)")
		case set["redirect-port"] && set["redirect-url"]:
			return usageError("redirect-port", "and --redirect-url: give one (the redirect URL registered with the app)")
		}
		if set["redirect-url"] {
			if _, err := redirectTarget(f.redirectURL); err != nil {
				return err
			}
		}
		if set["token-url"] {
			if _, err := checkURL("token-url", f.tokenURL, "https://www.linkedin.com/oauth/v2/accessToken"); err != nil {
				return err
			}
		}
	}
	return nil
}

// connection is an account as its platform confirmed it, before it is
// stored.
type connection struct {
	handle, baseURL, remoteID string
	// aliases are other remote ids naming the same account, compared
	// without case: a Telegram chat's @username, which earlier versions
	// stored in place of its numeric id.
	aliases []string
	// limits are the instance's (Mastodon); the catalog's otherwise.
	limits post.Limits
	cred   platform.Credential
	// notes are printed after the account is stored.
	notes []string
}

// same reports whether remoteID, the remote id an existing account
// stored, names the account of this connection.
func (c connection) same(remoteID string) bool {
	if remoteID == c.remoteID {
		return true
	}
	for _, a := range c.aliases {
		if strings.EqualFold(a, remoteID) {
			return true
		}
	}
	return false
}

// connect runs the platform's flow: it reads the credential, checks it
// with the platform and says whose it is.
func connect(ctx context.Context, f *addFlags, hc *http.Client, prompt io.Writer, secrets *secretSet) (connection, error) {
	if mastodonAPI(f.platform) {
		return connectMastodon(ctx, f, hc, prompt, secrets)
	}
	switch f.platform {
	case catalog.Bluesky:
		return connectBluesky(ctx, f, hc, secrets)
	case catalog.Telegram:
		return connectTelegram(ctx, f, hc, secrets)
	case catalog.Discord:
		return connectDiscordBot(ctx, f, hc, secrets)
	case catalog.DiscordWebhook:
		return connectDiscordWebhook(ctx, f, hc, secrets)
	case catalog.X, catalog.LinkedIn, catalog.Threads:
		return connectOAuth(ctx, f, hc, prompt, secrets)
	}
	return connection{}, usageError("platform", "%s accounts cannot be connected by this build of account add yet", f.platform)
}

// connectBluesky opens a session with the handle and an app password:
// only the session's tokens are stored, never the password.
func connectBluesky(ctx context.Context, f *addFlags, hc *http.Client, secrets *secretSet) (connection, error) {
	base, err := apiBase(f.apiURL, defaultAPIs[catalog.Bluesky])
	if err != nil {
		return connection{}, err
	}
	password, err := readSecret("password-file", f.passwordFile, "app password", false)
	secrets.add(password)
	if err != nil {
		return connection{}, err
	}
	identifier := strings.TrimPrefix(strings.TrimSpace(f.handle), "@")
	s, err := bluesky.CreateSession(ctx, hc, base, identifier, password)
	if err != nil {
		return connection{}, refusedBy(err, "password-file", "the PDS at "+base,
			"check --handle and the app password (Settings → Privacy and security → App passwords)")
	}
	secrets.add(s.Credential.AccessToken, s.Credential.RefreshToken)
	return connection{handle: "@" + s.Handle, baseURL: base, remoteID: s.DID, cred: s.Credential}, nil
}

// botToken is the platform's API base and the bot token read from
// --token-file (remembered as a secret for the output checks).
func botToken(f *addFlags, secrets *secretSet) (base, token string, err error) {
	if base, err = apiBase(f.apiURL, defaultAPIs[f.platform]); err != nil {
		return "", "", err
	}
	token, err = readSecret("token-file", f.tokenFile, "bot token", true)
	secrets.add(token)
	return base, token, err
}

// connectTelegram checks the bot token with getMe and the chat with
// getChat: the bot must see the chat. The account's remote id is the
// chat's numeric id, as given or resolved from the @username (a renamed
// channel keeps its id); the handle names the bot and the chat.
func connectTelegram(ctx context.Context, f *addFlags, hc *http.Client, secrets *secretSet) (connection, error) {
	base, token, err := botToken(f, secrets)
	if err != nil {
		return connection{}, err
	}
	bot, err := telegram.GetMe(ctx, hc, base, token)
	if err != nil {
		if !platformError(err) {
			// Refused before any call: the token's shape.
			return connection{}, usageError("token-file", "%s does not hold a bot token of the form <bot id>:<secret> that @BotFather issues", fileName(f.tokenFile))
		}
		return connection{}, refusedBy(err, "token-file", "Telegram", "check the bot token (@BotFather → /mybots → API Token)")
	}
	chat := strings.TrimSpace(f.chat)
	info, err := telegram.GetChat(ctx, hc, base, token, chat)
	if err != nil {
		var un *platform.Unauthorized
		switch {
		case !platformError(err):
			// Refused before any call: the chat's shape.
			return connection{}, usageError("chat", "%q: give a chat id or a public channel's @username", chat)
		case errors.As(err, &un):
			return connection{}, refusedBy(err, "token-file", "Telegram", "check the bot token (@BotFather → /mybots → API Token)")
		}
		return connection{}, refusedBy(err, "chat", "Telegram",
			"check the chat id or @username, and add @"+bot.Username+" to the chat (a channel's administrator allowed to post)")
	}
	conn := connection{
		handle: "@" + bot.Username + " → " + telegramChatName(info), baseURL: base, cred: platform.Credential{AccessToken: token},
		remoteID: strconv.FormatInt(info.ID, 10),
		notes:    []string{"note: the bot can see the chat; whether it may post there is known at the first post (in a channel it must be an administrator allowed to post)"},
	}
	if _, err := strconv.ParseInt(chat, 10, 64); err == nil {
		conn.remoteID = chat
	} else {
		conn.aliases = append(conn.aliases, chat)
	}
	if info.Username != "" {
		conn.aliases = append(conn.aliases, "@"+info.Username)
	}
	return conn, nil
}

// telegramChatName names a chat for the account's handle: its title and
// @username, whichever it has, else its id.
func telegramChatName(c telegram.Chat) string {
	title := printable(c.Title)
	switch {
	case title != "" && c.Username != "":
		return title + " (@" + c.Username + ")"
	case title != "":
		return title
	case c.Username != "":
		return "@" + c.Username
	}
	return strconv.FormatInt(c.ID, 10)
}

// connectDiscordBot checks the bot token by reading the bot
// (users/@me), then the channel by reading its newest message. The
// handle names the bot and the channel.
func connectDiscordBot(ctx context.Context, f *addFlags, hc *http.Client, secrets *secretSet) (connection, error) {
	base, token, err := botToken(f, secrets)
	if err != nil {
		return connection{}, err
	}
	me, err := discord.CurrentUser(ctx, hc, base, token)
	if err != nil {
		if !platformError(err) {
			// Refused before any call: the token's shape.
			return connection{}, usageError("token-file", "%s does not hold a bot token alone (%v)", fileName(f.tokenFile), err)
		}
		return connection{}, refusedBy(err, "token-file", "Discord", "check the bot token (Developer Portal → your app → Bot → Reset Token)")
	}
	cred := platform.Credential{AccessToken: token}
	cl, err := discord.New(discord.Config{Mode: discord.ModeBot, BaseURL: base, ChannelID: f.channel, BotUserID: me.ID, Credential: cred, HTTPClient: hc})
	if err != nil {
		return connection{}, err
	}
	if _, err := cl.Recent(ctx, 1); err != nil {
		var un *platform.Unauthorized
		if errors.As(err, &un) {
			return connection{}, refusedBy(err, "token-file", "Discord", "check the bot token (Developer Portal → your app → Bot → Reset Token)")
		}
		return connection{}, refusedBy(err, "channel", "Discord", "check the channel id and that the bot is in its server, allowed to view the channel and send messages")
	}
	name := printable(me.Username)
	if name == "" {
		name = "bot " + me.ID
	}
	return connection{handle: name + " → #" + f.channel, baseURL: base, remoteID: f.channel, cred: cred}, nil
}

// connectDiscordWebhook splits the webhook URL into its id (the remote
// id) and token (the credential) and reads the webhook with them. The
// handle names the webhook and its channel.
func connectDiscordWebhook(ctx context.Context, f *addFlags, hc *http.Client, secrets *secretSet) (connection, error) {
	base, err := apiBase(f.apiURL, defaultAPIs[f.platform])
	if err != nil {
		return connection{}, err
	}
	raw, err := readSecret("webhook-file", f.webhookFile, "webhook URL", true)
	secrets.add(raw)
	if err != nil {
		return connection{}, err
	}
	id, token, ok := splitWebhookURL(raw, base)
	secrets.add(token, url.PathEscape(token))
	if !ok {
		return connection{}, usageError("webhook-file", "%s does not hold a Discord webhook URL (https://discord.com/api/webhooks/ID/TOKEN); copy it again from the channel's settings → Integrations → Webhooks", fileName(f.webhookFile))
	}
	hook, err := discord.Webhook(ctx, hc, base, id, token)
	if err != nil {
		if !platformError(err) {
			return connection{}, usageError("webhook-file", "%s does not hold a usable Discord webhook URL", fileName(f.webhookFile))
		}
		return connection{}, refusedBy(err, "webhook-file", "Discord", "copy the webhook URL again from the channel's settings → Integrations → Webhooks")
	}
	handle := printable(hook.Name)
	if handle == "" {
		handle = "webhook " + id
	}
	if hook.ChannelID != "" {
		handle += " → " + hook.ChannelID
	}
	return connection{handle: handle, baseURL: base, remoteID: id, cred: platform.Credential{AccessToken: token}}, nil
}

// splitWebhookURL reads https://discord.com/api[/vN]/webhooks/ID/TOKEN
// (discordapp.com, ptb. and canary. too, or the host of --api-url).
func splitWebhookURL(raw, base string) (id, token string, ok bool) {
	u, err := url.Parse(raw)
	if err != nil || u.User != nil || u.Fragment != "" {
		return "", "", false
	}
	b, _ := url.Parse(base)
	switch host := u.Hostname(); {
	case u.Scheme == "https" && (host == "discord.com" || host == "discordapp.com" || strings.HasSuffix(host, ".discord.com")):
	case b != nil && u.Scheme == b.Scheme && u.Host == b.Host:
	default:
		return "", "", false
	}
	parts := strings.Split(strings.Trim(u.EscapedPath(), "/"), "/")
	if len(parts) == 5 && strings.HasPrefix(parts[1], "v") {
		parts = append(parts[:1], parts[2:]...)
	}
	if len(parts) != 4 || parts[0] != "api" || parts[1] != "webhooks" || !discordID(parts[2]) {
		return "", "", false
	}
	token, err = url.PathUnescape(parts[3])
	if err != nil || token == "" || strings.ContainsAny(token, " \t\r\n/?#") {
		return "", "", false
	}
	return parts[2], token, true
}

// connectOAuth is the authorization code flow with the operator's app:
// print the authorize page, receive the code (on 127.0.0.1, or pasted
// with --oob), exchange it, and read whose the credential is.
func connectOAuth(ctx context.Context, f *addFlags, hc *http.Client, prompt io.Writer, secrets *secretSet) (connection, error) {
	base, err := apiBase(f.apiURL, defaultAPIs[f.platform])
	if err != nil {
		return connection{}, err
	}
	clientID := strings.TrimSpace(f.clientID)
	var secret string
	if f.clientSecretFile != "" {
		secret, err = readSecret("client-secret-file", f.clientSecretFile, "client secret", true)
		secrets.add(secret)
		if err != nil {
			return connection{}, err
		}
	}
	state, err := randomState()
	if err != nil {
		return connection{}, err
	}
	field, redirect := "oob", f.redirectURL
	var ln net.Listener
	if !f.oob {
		field = "redirect-port"
		if ln, err = net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(f.redirectPort))); err != nil {
			return connection{}, usageError("redirect-port", "cannot listen on 127.0.0.1:%d (%v); free the port, or give another one registered with the app", f.redirectPort, unwrapNetError(err))
		}
		defer ln.Close()
		redirect = fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port)
	} else if redirect == "" {
		redirect = fmt.Sprintf("http://127.0.0.1:%d/callback", f.redirectPort)
	}

	var authorize string
	var exchange func(code string) (platform.Credential, error)
	switch f.platform {
	case catalog.X:
		verifier, challenge := x.NewPKCE()
		cfg := x.OAuthConfig{ClientID: clientID, ClientSecret: secret, RedirectURL: redirect, TokenURL: base + "/2/oauth2/token"}
		authorize = x.AuthorizeURL(cfg, state, challenge)
		exchange = func(code string) (platform.Credential, error) { return x.ExchangeCode(ctx, hc, cfg, code, verifier) }
	case catalog.LinkedIn:
		cfg := linkedin.OAuthConfig{ClientID: clientID, ClientSecret: secret, RedirectURL: redirect, TokenURL: strings.TrimSpace(f.tokenURL)}
		authorize = linkedin.AuthorizeURL(cfg, state)
		exchange = func(code string) (platform.Credential, error) { return linkedin.ExchangeCode(ctx, hc, cfg, code) }
	case catalog.Threads:
		cfg := threads.OAuthConfig{ClientID: clientID, ClientSecret: secret, RedirectURI: redirect, BaseURL: base}
		authorize = threads.AuthorizeURL(cfg, state)
		exchange = func(code string) (platform.Credential, error) { return threads.ExchangeCode(ctx, hc, cfg, code) }
	}
	fmt.Fprintf(prompt, "Open this page, sign in and authorise the app:\n\n  %s\n\n", authorize)
	var code string
	if f.oob {
		fmt.Fprint(prompt, "then paste the code, or the whole address the browser lands on, here: ")
		code, err = readPastedCode(state)
		fmt.Fprintln(prompt)
	} else {
		fmt.Fprintf(prompt, "Waiting up to %s for the browser to come back to %s …\n", f.wait, redirect)
		code, err = awaitRedirect(ctx, ln, state, f.wait)
	}
	secrets.add(code)
	if err != nil {
		return connection{}, err
	}
	cred, err := exchange(code)
	if err != nil {
		return connection{}, refusedBy(err, "client-id", platformTitle(f.platform),
			"check --client-id and --client-secret-file, and that "+redirect+" is a redirect URL of the app, then run the command again")
	}
	secrets.add(cred.AccessToken, cred.RefreshToken)
	conn := connection{baseURL: base, cred: cred}
	switch f.platform {
	case catalog.X:
		u, err := x.Me(ctx, hc, base, cred.AccessToken)
		if err != nil {
			return connection{}, refusedBy(err, field, "X", "authorise the scopes "+strings.Join(x.DefaultScopes, ", ")+", then run the command again")
		}
		conn.handle, conn.remoteID = "@"+u.Username, u.ID
		if u.Username == "" {
			conn.handle = "X user " + u.ID
		}
	case catalog.LinkedIn:
		p, err := linkedin.Me(ctx, hc, base, cred.AccessToken)
		if err != nil {
			return connection{}, refusedBy(err, field, "LinkedIn", "authorise the scopes openid, profile and w_member_social, then run the command again")
		}
		conn.handle, conn.remoteID = p.Name, p.URN
		if conn.handle == "" {
			conn.handle = p.URN
		}
	case catalog.Threads:
		// UserID is the client's own; "me" reads the token's user.
		cl, err := threads.New(threads.Config{BaseURL: base, UserID: "me", Credential: cred, HTTPClient: hc})
		if err != nil {
			return connection{}, err
		}
		p, err := cl.Profile(ctx)
		if err != nil {
			return connection{}, refusedBy(err, field, "Threads", "authorise the scopes threads_basic, threads_content_publish and threads_delete, then run the command again")
		}
		conn.handle, conn.remoteID = "@"+p.Username, p.ID
	}
	return conn, nil
}

// awaitRedirect serves http://127.0.0.1:PORT/callback on ln until one
// request has come to it, or wait has passed, and returns its code once
// its state is the one sent.
func awaitRedirect(ctx context.Context, ln net.Listener, state string, wait time.Duration) (string, error) {
	type result struct {
		code string
		err  error
	}
	got := make(chan result, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		code, err := codeFrom(r.URL.Query(), state, "redirect-port")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, "oncepost: the authorization did not complete; see the terminal.\n")
		} else {
			io.WriteString(w, "oncepost: authorised. You can close this page and go back to the terminal.\n")
		}
		select {
		case got <- result{code, err}:
		default: // a second request: the first decided
		}
	})
	go srv.Serve(ln)
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case r := <-got:
		return r.code, r.err
	case <-timer.C:
		return "", fmt.Errorf("the browser did not come back to http://%s/callback within %s; run the command again (nothing was stored)", ln.Addr(), wait)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// readPastedCode reads the code from stdin: the code alone, or the
// address the browser landed on (its state is checked then).
func readPastedCode(state string) (string, error) {
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	s := strings.TrimSpace(line)
	if s == "" {
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("read the code: %w", err)
		}
		return "", usageError("oob", "no code given; run the command again and paste the code, or the address the browser lands on")
	}
	query := ""
	if i := strings.IndexByte(s, '?'); i >= 0 {
		query = s[i+1:]
	} else if strings.Contains(s, "code=") || strings.Contains(s, "state=") {
		query = s
	}
	if query == "" {
		return s, nil
	}
	query, _, _ = strings.Cut(query, "#")
	q, err := url.ParseQuery(query)
	if err != nil {
		return "", usageError("oob", "the pasted address cannot be read; paste the code alone")
	}
	return codeFrom(q, state, "oob")
}

// codeFrom reads the code of a redirect's query, whose state must be the
// one sent.
func codeFrom(q url.Values, state, field string) (string, error) {
	switch {
	case subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(state)) != 1:
		return "", usageError(field, "the redirect carries another state than the one this command sent (a stale or forged redirect); run the command again, nothing was stored")
	case q.Get("error") != "":
		what := printable(q.Get("error"))
		if d := q.Get("error_description"); d != "" {
			what += ": " + printable(d)
		}
		return "", usageError(field, "the platform did not authorise the app (%s); run the command again and approve it, nothing was stored", what)
	case strings.TrimSpace(q.Get("code")) == "":
		return "", usageError(field, "the redirect carries no code; run the command again, nothing was stored")
	}
	return strings.TrimSpace(q.Get("code")), nil
}

// printable keeps the first 200 printable characters of text from the
// redirect (anyone can send one): no terminal escapes.
func printable(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 200 {
			b.WriteString("…")
			break
		}
		if unicode.IsPrint(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func randomState() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// redirectTarget checks --redirect-url: an absolute http(s) URL.
func redirectTarget(raw string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil || u.Fragment != "" {
		return "", usageError("redirect-url", "give the redirect URL registered with the app, e.g. https://example.com/oncepost/callback")
	}
	return u.String(), nil
}

// apiBase is --api-url, checked, or the platform's public API.
func apiBase(raw, def string) (string, error) {
	if strings.TrimSpace(raw) == "" {
		return def, nil
	}
	return apiURL(raw)
}

// apiURL checks --api-url: https, or http on a loopback address (a local
// server or a test double); no credentials, query or fragment.
func apiURL(raw string) (string, error) {
	return checkURL("api-url", raw, "https://api.telegram.org")
}

func checkURL(field, raw, like string) (string, error) {
	u, err := url.Parse(strings.TrimRight(strings.TrimSpace(raw), "/"))
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return "", usageError(field, "is not an http or https address; write it like %s", like)
	case u.User != nil:
		// Not quoted: it holds credentials.
		return "", usageError(field, "holds credentials; give the address alone, like %s", like)
	case u.RawQuery != "" || u.Fragment != "":
		return "", usageError(field, "%q: give the address without a query or fragment, like %s", raw, like)
	case u.Scheme == "http" && !isLoopback(u.Hostname()):
		return "", usageError(field, "%q: use https (plain http is allowed only on 127.0.0.1)", raw)
	}
	return u.Scheme + "://" + u.Host + u.EscapedPath(), nil
}

// readSecret reads a secret from a file or stdin (-): never an argument,
// which would land in shell history and process lists. oneWord refuses
// white space inside (tokens); a password keeps its inner spaces.
func readSecret(field, name, what string, oneWord bool) (string, error) {
	const limit = 8 << 10
	var raw []byte
	var err error
	if name == "-" {
		raw, err = io.ReadAll(io.LimitReader(os.Stdin, limit+1))
	} else {
		raw, err = readSecretFile(field, name, limit)
	}
	if err != nil {
		if errors.Is(err, errUsage) {
			return "", err
		}
		return "", usageError(field, "cannot read %s: %v", fileName(name), unwrapPathError(err))
	}
	if len(raw) > limit {
		return "", usageError(field, "%s is larger than %d bytes; put only the %s in it", fileName(name), limit, what)
	}
	s := strings.TrimRight(string(raw), "\r\n")
	if oneWord {
		s = strings.TrimSpace(s)
	}
	switch {
	case strings.TrimSpace(s) == "":
		return "", usageError(field, "%s is empty; put the %s in it", fileName(name), what)
	case strings.ContainsAny(s, "\r\n"), oneWord && strings.ContainsAny(s, " \t"):
		return "", usageError(field, "%s does not hold one %s (one line, no spaces)", fileName(name), what)
	}
	return s, nil
}

// readSecretFile reads a file holding a secret (a token, a password, a
// client secret, a webhook URL), of at most limit bytes (one more, so the
// caller can tell it was larger). A file group or others may read or
// write is refused, as ssh refuses such a key: the secret may have been
// read already, or be replaced. The mode is checked on the open file, so
// what is read is what was checked.
func readSecretFile(field, name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if perm := fi.Mode().Perm(); fi.Mode().IsRegular() && perm&0o077 != 0 {
		return nil, usageError(field, "%s has mode %04o: group or others may read or write it; run `chmod 600 %s` (and make a new one if someone else may have read it)",
			name, perm, name)
	}
	return io.ReadAll(io.LimitReader(f, limit+1))
}

func fileName(name string) string {
	if name == "-" {
		return "stdin"
	}
	return name
}

// refusedBy explains a platform's refusal of what the operator gave as bad
// input naming the flag and the fix; any other failure (the platform
// unreachable, a 5xx) fails the command. Either way nothing was stored.
func refusedBy(err error, field, who, fix string) error {
	var un *platform.Unauthorized
	var rej *platform.Rejected
	switch {
	case errors.As(err, &un):
		return usageError(field, "%s refused it (%s); %s; nothing was stored", who, un.Message, fix)
	case errors.As(err, &rej):
		return usageError(field, "%s refused it (%s); %s; nothing was stored", who, rej.Message, fix)
	}
	return fmt.Errorf("%s could not be asked: %w (nothing was stored)", who, err)
}

// platformError reports whether err is one of the platform failure
// classes, i.e. an answer or a failed call rather than a refused config.
func platformError(err error) bool {
	var (
		un  *platform.Unauthorized
		rej *platform.Rejected
		np  *platform.NotPerformed
		amb *platform.Ambiguous
		inc *platform.Inconclusive
	)
	return errors.As(err, &un) || errors.As(err, &rej) || errors.As(err, &np) || errors.As(err, &amb) || errors.As(err, &inc)
}

func platformTitle(name string) string {
	if k, ok := catalog.Lookup(name); ok {
		return k.Title
	}
	return name
}

func unwrapNetError(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return unwrapPathError(op.Err)
	}
	return err
}

// telegramChat reports whether s is a chat Telegram's package takes: a
// chat id or a public chat's @username.
func telegramChat(s string) bool {
	// The token is a well-formed placeholder: only the chat is checked.
	_, err := telegram.New(telegram.Config{Token: "1:placeholder", ChatID: strings.TrimSpace(s)})
	return err == nil
}

// discordID reports whether s is a Discord id (a snowflake).
func discordID(s string) bool {
	if s == "" || len(s) > 20 || strings.Trim(s, "0123456789") != "" {
		return false
	}
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

// secretSet is every secret a flow read or received.
type secretSet struct{ values []string }

func (s *secretSet) add(values ...string) {
	for _, v := range values {
		// A very short value would redact ordinary words; no token,
		// password or secret is that short.
		if len(v) >= 6 {
			s.values = append(s.values, v)
		}
	}
}

// scrub returns err with every secret replaced, keeping whether it is
// bad input.
func (s *secretSet) scrub(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := msg
	for _, v := range s.values {
		clean = strings.ReplaceAll(clean, v, "[redacted]")
	}
	if clean == msg {
		return err
	}
	if errors.Is(err, errUsage) {
		return badInput("%s", clean)
	}
	return errors.New(clean)
}

// reconnectCommand is the command that reconnects the account.
func reconnectCommand(a post.Account) string {
	head := "oncepost account add --id " + string(a.ID) + " --replace"
	switch {
	case a.Platform == catalog.Mastodon || a.Platform == "":
		return head + " --url " + a.BaseURL + " --token-file FILE"
	case mastodonAPI(a.Platform):
		return head + " --platform " + a.Platform + " --url " + a.BaseURL + " --token-file FILE"
	}
	if a.BaseURL != "" && a.BaseURL != defaultAPIs[a.Platform] {
		head += " --api-url " + a.BaseURL
	}
	switch a.Platform {
	case catalog.Bluesky:
		return head + " --platform bluesky --handle " + strings.TrimPrefix(a.Handle, "@") + " --password-file FILE"
	case catalog.Telegram:
		return head + " --platform telegram --token-file FILE --chat " + a.RemoteID
	case catalog.Discord:
		return head + " --platform discord --token-file FILE --channel " + a.RemoteID
	case catalog.DiscordWebhook:
		return head + " --platform discord-webhook --webhook-file FILE"
	}
	return head + " --platform " + a.Platform + " --client-id ID --client-secret-file FILE"
}
