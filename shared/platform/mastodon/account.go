package mastodon

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"oncepost/shared/platform"
	"oncepost/shared/platform/httpcall"
)

// Profile is the account a credential acts as, from Mastodon's Account
// entity (https://docs.joinmastodon.org/entities/Account/).
type Profile struct {
	// ID is the account's remote id (Config.AccountID).
	ID string
	// Username is the account's name without the domain.
	Username string
	// Acct is the webfinger name relative to the server: the username for
	// a local account.
	Acct string
	// DisplayName is the profile's display name, possibly empty.
	DisplayName string
	// URL is the profile page.
	URL string
}

// VerifyCredentials reads the account the client's access token belongs to
// (GET /api/v1/accounts/verify_credentials,
// https://docs.joinmastodon.org/methods/accounts/#verify_credentials). It
// is a read: transient failures are retried and then returned as
// NotPerformed. A 401 (token invalid or revoked) is *platform.Unauthorized
// and a 403 (token without the read scope, login disabled or unconfirmed)
// is *platform.Rejected with Reason "forbidden", both carrying the
// server's message. When the config named no AccountID, the answer's id
// becomes the client's.
func (c *Client) VerifyCredentials(ctx context.Context) (Profile, error) {
	const op = "verify credentials"
	resp, err := c.read(ctx, op, "/api/v1/accounts/verify_credentials", nil)
	if err != nil {
		return Profile{}, err
	}
	switch resp.Status {
	case http.StatusOK:
	case http.StatusForbidden:
		return Profile{}, &platform.Rejected{Status: resp.Status, Reason: ReasonForbidden, Message: c.describe(resp)}
	default:
		return Profile{}, c.classify(op, resp, false)
	}
	var a struct {
		ID          string `json:"id"`
		Username    string `json:"username"`
		Acct        string `json:"acct"`
		DisplayName string `json:"display_name"`
		URL         string `json:"url"`
	}
	if err := json.Unmarshal(resp.Body, &a); err != nil {
		return Profile{}, &platform.NotPerformed{Status: resp.Status, Message: fmt.Sprintf("%s: decode account: %v", op, err)}
	}
	if a.ID == "" {
		return Profile{}, &platform.NotPerformed{Status: resp.Status, Message: op + ": no account id in the answer"}
	}
	c.mu.Lock()
	if c.accountID == "" {
		c.accountID = a.ID
	}
	c.mu.Unlock()
	return Profile{ID: a.ID, Username: a.Username, Acct: a.Acct, DisplayName: a.DisplayName, URL: a.URL}, nil
}

// Limits is what a server declares about the statuses and media it
// accepts. A field the server did not send is zero: the caller applies
// Mastodon's defaults (500 characters, 4 attachments, 23 characters per
// URL) or leaves the limit unknown.
type Limits struct {
	// Version is the server's version string, e.g. "4.3.0" or
	// "4.2.10+glitch"; compatible servers name themselves in it.
	Version string
	// MaxCharacters is configuration.statuses.max_characters.
	MaxCharacters int
	// MaxMediaAttachments is configuration.statuses.max_media_attachments.
	MaxMediaAttachments int
	// CharactersReservedPerURL is
	// configuration.statuses.characters_reserved_per_url: every link
	// counts as this many characters.
	CharactersReservedPerURL int
	// ImageSizeLimit and VideoSizeLimit are the largest uploads in bytes
	// (configuration.media_attachments.image_size_limit, video_size_limit).
	ImageSizeLimit int64
	VideoSizeLimit int64
	// SupportedMIMETypes are the media types the server accepts for upload
	// (configuration.media_attachments.supported_mime_types).
	SupportedMIMETypes []string
}

// instanceEntity is the part of the Instance entity (v2) and of the
// V1::Instance entity (v1, configuration since 3.4.2) InstanceLimits
// reads; both carry these fields in the same place.
type instanceEntity struct {
	Version       string `json:"version"`
	Configuration struct {
		Statuses struct {
			MaxCharacters            int `json:"max_characters"`
			MaxMediaAttachments      int `json:"max_media_attachments"`
			CharactersReservedPerURL int `json:"characters_reserved_per_url"`
		} `json:"statuses"`
		MediaAttachments struct {
			SupportedMIMETypes []string `json:"supported_mime_types"`
			ImageSizeLimit     int64    `json:"image_size_limit"`
			VideoSizeLimit     int64    `json:"video_size_limit"`
		} `json:"media_attachments"`
	} `json:"configuration"`
}

// InstanceLimits reads the server's limits from GET /api/v2/instance
// (Mastodon 4.0 and later), falling back to GET /api/v1/instance when that
// answers 404 (https://docs.joinmastodon.org/methods/instance/,
// https://docs.joinmastodon.org/entities/Instance/). Both endpoints are
// public, so it needs no credential and sends none: it is what to call
// before an account is connected. hc nil means a client without Timeout
// (deadlines come from ctx). It is a read: transient failures are retried
// and then returned as NotPerformed; a 404 from both endpoints is Rejected
// (no Mastodon API at baseURL).
func InstanceLimits(ctx context.Context, hc *http.Client, baseURL string) (Limits, error) {
	c, err := anonymous(hc, baseURL)
	if err != nil {
		return Limits{}, err
	}
	return c.InstanceLimits(ctx)
}

// InstanceLimits is the package's InstanceLimits read by the client, with
// its HTTP client and its access token (harmless on these public
// endpoints, and what a server in whitelist mode wants on
// /api/v1/instance).
func (c *Client) InstanceLimits(ctx context.Context) (Limits, error) {
	const op = "read instance"
	var (
		resp *httpcall.Response
		err  error
	)
	for _, path := range []string{"/api/v2/instance", "/api/v1/instance"} {
		resp, err = c.read(ctx, op, path, nil)
		if err != nil {
			return Limits{}, err
		}
		if resp.Status != http.StatusNotFound {
			break
		}
	}
	if resp.Status == http.StatusNotFound {
		return Limits{}, &platform.Rejected{Status: resp.Status, Reason: "http_404", Message: fmt.Sprintf(
			"%s: %s answers 404 to /api/v2/instance and /api/v1/instance; is it a Mastodon server?", op, c.baseURL)}
	}
	if resp.Status != http.StatusOK {
		return Limits{}, c.classify(op, resp, false)
	}
	var in instanceEntity
	if err := json.Unmarshal(resp.Body, &in); err != nil {
		return Limits{}, &platform.NotPerformed{Status: resp.Status, Message: fmt.Sprintf("%s: decode instance: %v", op, err)}
	}
	s, m := in.Configuration.Statuses, in.Configuration.MediaAttachments
	return Limits{
		Version:                  in.Version,
		MaxCharacters:            s.MaxCharacters,
		MaxMediaAttachments:      s.MaxMediaAttachments,
		CharactersReservedPerURL: s.CharactersReservedPerURL,
		ImageSizeLimit:           m.ImageSizeLimit,
		VideoSizeLimit:           m.VideoSizeLimit,
		SupportedMIMETypes:       m.SupportedMIMETypes,
	}, nil
}
