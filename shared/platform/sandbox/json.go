package sandbox

import (
	"encoding/json"
	"strconv"
	"time"
)

// statusJSON is Mastodon's Status entity, in the fields the sandbox fills.
type statusJSON struct {
	ID                 string         `json:"id"`
	CreatedAt          string         `json:"created_at"`
	InReplyToID        *string        `json:"in_reply_to_id"`
	InReplyToAccountID *string        `json:"in_reply_to_account_id"`
	Sensitive          bool           `json:"sensitive"`
	SpoilerText        string         `json:"spoiler_text"`
	Visibility         string         `json:"visibility"`
	Language           *string        `json:"language"`
	URI                string         `json:"uri"`
	URL                string         `json:"url"`
	RepliesCount       int            `json:"replies_count"`
	ReblogsCount       int            `json:"reblogs_count"`
	FavouritesCount    int            `json:"favourites_count"`
	EditedAt           *string        `json:"edited_at"`
	Content            string         `json:"content"`
	Text               *string        `json:"text,omitempty"`
	Reblog             *struct{}      `json:"reblog"`
	Application        *statusAppJSON `json:"application,omitempty"`
	Account            accountJSON    `json:"account"`
	MediaAttachments   []mediaJSON    `json:"media_attachments"`
	Mentions           []struct{}     `json:"mentions"`
	Tags               []struct{}     `json:"tags"`
	Emojis             []struct{}     `json:"emojis"`
	Card               *struct{}      `json:"card"`
	Poll               *struct{}      `json:"poll"`
}

// statusAppJSON is a Status's "application": "The application used to
// post this status" (https://docs.joinmastodon.org/entities/Status/#application),
// its name and website (null when it has none), as Mastodon's
// REST::StatusSerializer::ApplicationSerializer gives them. Mastodon
// includes it only when the status's own account reads it
// (REST::StatusSerializer#show_application?: `belongs_to :application,
// if: :show_application?`, the key left out otherwise; the account
// preference that showed it to everyone is not modelled).
type statusAppJSON struct {
	Name    string  `json:"name"`
	Website *string `json:"website"`
}

// accountJSON is Mastodon's Account entity, in the fields the sandbox fills.
type accountJSON struct {
	ID             string         `json:"id"`
	Username       string         `json:"username"`
	Acct           string         `json:"acct"`
	DisplayName    string         `json:"display_name"`
	Locked         bool           `json:"locked"`
	Bot            bool           `json:"bot"`
	CreatedAt      string         `json:"created_at"`
	Note           string         `json:"note"`
	URL            string         `json:"url"`
	Avatar         string         `json:"avatar"`
	AvatarStatic   string         `json:"avatar_static"`
	Header         string         `json:"header"`
	HeaderStatic   string         `json:"header_static"`
	FollowersCount int            `json:"followers_count"`
	FollowingCount int            `json:"following_count"`
	StatusesCount  int            `json:"statuses_count"`
	Emojis         []struct{}     `json:"emojis"`
	Fields         []struct{}     `json:"fields"`
	Source         *accountSource `json:"source,omitempty"`
}

type accountSource struct {
	Privacy   string     `json:"privacy"`
	Sensitive bool       `json:"sensitive"`
	Language  string     `json:"language"`
	Note      string     `json:"note"`
	Fields    []struct{} `json:"fields"`
}

// mediaJSON is Mastodon's MediaAttachment entity.
type mediaJSON struct {
	ID               string   `json:"id"`
	Type             string   `json:"type"`
	URL              *string  `json:"url"`
	PreviewURL       *string  `json:"preview_url"`
	RemoteURL        *string  `json:"remote_url"`
	PreviewRemoteURL *string  `json:"preview_remote_url"`
	TextURL          *string  `json:"text_url"`
	Meta             struct{} `json:"meta"`
	Description      *string  `json:"description"`
	Blurhash         *string  `json:"blurhash"`
}

// sourceJSON is Mastodon's StatusSource entity.
type sourceJSON struct {
	ID          string `json:"id"`
	Text        string `json:"text"`
	SpoilerText string `json:"spoiler_text"`
}

// tokenJSON is the OAuth token response.
type tokenJSON struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	Scope        string `json:"scope"`
	CreatedAt    int64  `json:"created_at"`
	ExpiresIn    int64  `json:"expires_in,omitempty"`
	RefreshToken string `json:"refresh_token"`
}

// oauthErrorJSON is the OAuth error response (RFC 6749 §5.2).
type oauthErrorJSON struct {
	Error            string `json:"error"`
	ErrorDescription string `json:"error_description"`
}

func strPtr(s string) *string { return &s }

func (s *Server) accountJSONLocked(a *account, base string) accountJSON {
	return accountJSON{
		ID:            a.id,
		Username:      a.username,
		Acct:          a.username,
		DisplayName:   a.username,
		CreatedAt:     a.createdAt.UTC().Truncate(24 * time.Hour).Format(timeFormat),
		Note:          "",
		URL:           base + "/@" + a.username,
		Avatar:        base + "/avatars/original/missing.png",
		AvatarStatic:  base + "/avatars/original/missing.png",
		Header:        base + "/headers/original/missing.png",
		HeaderStatic:  base + "/headers/original/missing.png",
		StatusesCount: a.live,
		Emojis:        []struct{}{},
		Fields:        []struct{}{},
	}
}

func (s *Server) mediaJSONLocked(m *media, base string) mediaJSON {
	j := mediaJSON{ID: m.id, Type: "image"}
	if m.pollsLeft <= 0 {
		u := base + "/media/" + m.id
		j.URL, j.PreviewURL = strPtr(u), strPtr(u)
	}
	if m.description != "" {
		j.Description = strPtr(m.description)
	}
	return j
}

// statusJSONLocked renders a status for viewer, the account of the
// request's token (nil without one): the status's application is shown to
// its own account only. withText adds the source "text" (as Mastodon does
// for a delete).
func (s *Server) statusJSONLocked(st *status, base string, withText bool, viewer *account) statusJSON {
	a := s.accounts[st.AccountID]
	j := statusJSON{
		ID:               st.ID,
		CreatedAt:        st.CreatedAt.UTC().Format(timeFormat),
		Visibility:       st.Visibility,
		URI:              base + "/users/" + st.Username + "/statuses/" + st.ID,
		URL:              base + "/@" + st.Username + "/" + st.ID,
		Content:          st.Content,
		Account:          s.accountJSONLocked(a, base),
		MediaAttachments: []mediaJSON{},
		Mentions:         []struct{}{},
		Tags:             []struct{}{},
		Emojis:           []struct{}{},
	}
	if withText {
		j.Text = strPtr(st.Text)
	}
	if st.InReplyToID != "" {
		j.InReplyToID = strPtr(st.InReplyToID)
		// A deleted parent still names its account, as on Mastodon.
		if num, err := strconv.ParseUint(st.InReplyToID, 10, 64); err == nil && s.statuses[num] != nil {
			j.InReplyToAccountID = strPtr(s.statuses[num].AccountID)
		}
	}
	if ownStatus(st, viewer) {
		ap := st.app
		j.Application = &statusAppJSON{Name: ap.name}
		if ap.website != "" {
			j.Application.Website = strPtr(ap.website)
		}
	}
	for _, id := range st.MediaIDs {
		if m := s.media[id]; m != nil {
			j.MediaAttachments = append(j.MediaAttachments, s.mediaJSONLocked(m, base))
		}
	}
	return j
}

// ownStatus reports whether viewer is the status's own account.
func ownStatus(st *status, viewer *account) bool {
	return viewer != nil && viewer.id == st.AccountID
}

// listJSONLocked renders a status for a timeline page read by viewer, from
// the cache when it was rendered for the same base URL and the same kind
// of reader (its own account or another) before.
func (s *Server) listJSONLocked(st *status, base string, viewer *account) json.RawMessage {
	c := &st.list[0]
	if ownStatus(st, viewer) {
		c = &st.list[1]
	}
	if c.json == nil || c.base != base {
		data, err := json.Marshal(s.statusJSONLocked(st, base, false, viewer))
		if err != nil {
			// statusJSON holds only strings, slices and structs of them, so
			// this cannot happen; serve null rather than crash the server.
			return json.RawMessage("null")
		}
		c.json, c.base = data, base
	}
	return c.json
}
