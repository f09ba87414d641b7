package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"oncepost/shared/post"
)

// cmdPost is `oncepost post add FILE`: validate a JSON draft and schedule
// it. The running runtime picks the schedule up (or its sweeper does, a
// minute late at most, if it started before the post existed).
func cmdPost(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "add" {
		return fmt.Errorf("%w: want `post add FILE` (FILE is a JSON draft, - for stdin)", errUsage)
	}
	cfg := defaultConfig()
	fs := flag.NewFlagSet("post add", flag.ContinueOnError)
	fs.StringVar(&cfg.DBPath, "db", cfg.DBPath, "SQLite file")
	if err := parseFlags(fs, args[1:], stderr, 1); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: FILE is missing", errUsage)
	}
	var raw []byte
	var err error
	if name := fs.Arg(0); name == "-" {
		raw, err = io.ReadAll(io.LimitReader(os.Stdin, maxDraftBytes+1))
	} else {
		raw, err = readLimited(name, maxDraftBytes)
	}
	if err != nil {
		return fmt.Errorf("%w: read draft: %v", errUsage, err)
	}
	d, err := decodeDraft(raw)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if err := mustExist(cfg.DBPath); err != nil {
		return err
	}
	cfg.Logger = discardLogger()
	rt, err := openRuntime(ctx, cfg)
	if err != nil {
		return err
	}
	defer rt.Close()
	accounts, err := rt.store.ListAccounts(ctx)
	if err != nil {
		return err
	}
	rules := post.Rules{Accounts: map[post.AccountID]post.Account{}, Limits: limitsOf, Now: time.Now()}
	for _, a := range accounts {
		rules.Accounts[a.ID] = a
	}
	// Validate everything first, then write the post and its schedules in
	// one transaction: a refusal leaves nothing behind.
	p, err := d.Validate(rules)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if err := rt.createPost(ctx, p); err != nil {
		return err
	}
	for _, t := range p.Targets {
		fmt.Fprintf(stdout, "scheduled %s for %s at %s\n", p.ID, t.Account, t.Slot.Format(time.RFC3339))
	}
	return nil
}

// maxDraftBytes bounds a draft file (a post body is at most a few
// thousand characters; media are referenced, not embedded).
const maxDraftBytes = 1 << 20

// readLimited reads a file of at most limit bytes.
func readLimited(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit+1))
}

// decodeDraft parses a JSON draft strictly: the bytes must be UTF-8 (an
// invalid byte is refused with its offset, never replaced by U+FFFD),
// unknown fields and data after the object are errors, and every error
// says where (line and column).
func decodeDraft(raw []byte) (post.Draft, error) {
	var d post.Draft
	if len(raw) > maxDraftBytes {
		return d, fmt.Errorf("draft is larger than %d bytes", maxDraftBytes)
	}
	if off := post.InvalidUTF8(string(raw)); off >= 0 {
		line, col := lineCol(raw, off)
		return d, fmt.Errorf("draft: byte %d (line %d, column %d) is not valid UTF-8; save the file as UTF-8", off, line, col)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return d, draftJSONError(raw, dec, err)
	}
	if tok, err := dec.Token(); !errors.Is(err, io.EOF) {
		off := int(dec.InputOffset())
		line, col := lineCol(raw, off)
		if err != nil {
			return d, fmt.Errorf("draft: line %d, column %d: data after the post's JSON object: %v", line, col, err)
		}
		return d, fmt.Errorf("draft: line %d, column %d: data after the post's JSON object (%v); a draft is one object", line, col, tok)
	}
	return d, nil
}

// draftJSONError says where a JSON error is, in lines and columns.
func draftJSONError(raw []byte, dec *json.Decoder, err error) error {
	off := int(dec.InputOffset())
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syn):
		off = max(int(syn.Offset)-1, 0) // Offset counts the bad byte too
	case errors.As(err, &typ):
		off = int(typ.Offset)
		line, col := lineCol(raw, off)
		return fmt.Errorf("draft: line %d, column %d: field %q must be %s, not %s", line, col, typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value)
	case errors.Is(err, io.EOF):
		return errors.New("draft is empty; write one JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		off = len(raw)
	}
	line, col := lineCol(raw, off)
	msg := strings.TrimPrefix(err.Error(), "json: ")
	return fmt.Errorf("draft: line %d, column %d: %s", line, col, msg)
}

// jsonKind names a Go kind the way a JSON author reads it.
func jsonKind(kind string) string {
	switch kind {
	case "slice", "array":
		return "a list"
	case "struct", "map":
		return "an object"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	default:
		return "a number"
	}
}

// lineCol turns a byte offset into a 1-based line and column (in
// characters).
func lineCol(raw []byte, off int) (line, col int) {
	off = min(max(off, 0), len(raw))
	line = 1 + bytes.Count(raw[:off], []byte("\n"))
	start := bytes.LastIndexByte(raw[:off], '\n') + 1
	return line, utf8.RuneCount(raw[start:off]) + 1
}

// limitsOf are the content limits of the platforms this build can reach.
func limitsOf(platformName string) (post.Limits, bool) {
	switch platformName {
	case "mastodon":
		return post.Limits{MaxTextGraphemes: 500, MaxMedia: 4}, true
	}
	return post.Limits{}, false
}
