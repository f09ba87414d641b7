package httpcall

import (
	"strings"
	"testing"
)

func TestRootURL(t *testing.T) {
	tests := []struct {
		raw, def string
		want     string
		wantErr  string
	}{
		{" https://api.example/ ", "", "https://api.example", ""},
		{"", "https://default.example", "https://default.example", ""},
		{"", "", "", "BaseURL is required"},
		{"ftp://api.example", "", "", `BaseURL "ftp://api.example" must be an absolute http or https URL`},
		{"api.example", "", "", `BaseURL "api.example" must be an absolute http or https URL`},
		{"https://user:pw@api.example", "", "", "must not carry user info, a query or a fragment"},
		{"https://api.example/?a=1", "", "", "must not carry user info, a query or a fragment"},
		{"http://[::1", "", "", "BaseURL is not a URL"},
	}
	for _, tt := range tests {
		got, err := RootURL("BaseURL", tt.raw, tt.def)
		switch {
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("RootURL(%q, %q) = %q, %v; want %q", tt.raw, tt.def, got, err, tt.want)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("RootURL(%q, %q) error %v, want it to contain %q", tt.raw, tt.def, err, tt.wantErr)
		}
	}
}
