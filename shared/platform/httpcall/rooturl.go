package httpcall

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// RootURL validates and normalises an API root given in a setting named
// field: an absolute http or https URL without user info, query or
// fragment, its trailing slashes trimmed. Empty is def, and an error when
// def is empty too. Adapters prefix the error with their name.
func RootURL(field, raw, def string) (string, error) {
	s := strings.TrimRight(strings.TrimSpace(raw), "/")
	if s == "" {
		if def == "" {
			return "", errors.New(field + " is required")
		}
		return def, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%s is not a URL: %w", field, err)
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("%s %q must be an absolute http or https URL", field, s)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("%s %q must not carry user info, a query or a fragment", field, s)
	}
	return s, nil
}
