package apitoken

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNewTokensAreWellFormedAndDistinct(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		tok := New()
		if !WellFormed(tok) {
			t.Fatalf("%q is not well formed", tok)
		}
		if seen[tok] {
			t.Fatalf("%q made twice", tok)
		}
		seen[tok] = true
		if h := Hash(tok); len(h) != 64 || strings.Contains(h, tok[3:]) {
			t.Fatalf("hash %q", h)
		}
	}
}

func TestWellFormedRefuses(t *testing.T) {
	good := New()
	for _, s := range []string{"", "op_", good[:len(good)-1], good + "a", strings.ToUpper(good), "xx_" + good[3:], good[:10] + "1" + good[11:]} {
		if WellFormed(s) {
			t.Errorf("%q counted as a token", s)
		}
	}
}

func TestParseScopes(t *testing.T) {
	tests := []struct {
		in      string
		want    []Scope
		wantErr string
	}{
		{"posts,read", []Scope{ScopePosts, ScopeRead}, ""},
		{" read , read ", []Scope{ScopeRead}, ""},
		{"all", []Scope{ScopeAll}, ""},
		{"write", nil, `"write" is not a scope`},
		{"read,", nil, "empty scope"},
		{"", nil, "empty scope"},
	}
	for _, tt := range tests {
		got, err := ParseScopes(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestGrants(t *testing.T) {
	tests := []struct {
		have []Scope
		need Scope
		want bool
	}{
		{[]Scope{ScopeRead}, ScopeRead, true},
		{[]Scope{ScopeRead}, ScopePosts, false},
		{[]Scope{ScopePosts}, ScopeRead, false},
		{[]Scope{ScopeAll}, ScopeOperate, true},
		{nil, ScopeRead, false},
	}
	for _, tt := range tests {
		if got := Grants(tt.have, tt.need); got != tt.want {
			t.Errorf("Grants(%v, %s) = %v", tt.have, tt.need, got)
		}
	}
}
