package post

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// MaxDraftBytes bounds a draft's JSON (a post body is at most a few
// thousand characters; media are referenced, not embedded). The CLI reads
// draft files up to it and the HTTP API refuses larger bodies.
const MaxDraftBytes = 1 << 20

// DecodeDraft parses a JSON draft strictly: the bytes must be UTF-8 (an
// invalid byte is refused with its offset, never replaced by U+FFFD), a
// lone surrogate escape is refused naming its field (findLoneSurrogate),
// unknown fields and data after the object are errors, and every error
// says where (line and column).
func DecodeDraft(raw []byte) (Draft, error) {
	var d Draft
	if len(raw) > MaxDraftBytes {
		return d, fmt.Errorf("draft is larger than %d bytes", MaxDraftBytes)
	}
	if off := InvalidUTF8(string(raw)); off >= 0 {
		line, col := lineCol(raw, off)
		return d, fmt.Errorf("draft: byte %d (line %d, column %d) is not valid UTF-8; save the file as UTF-8", off, line, col)
	}
	if esc, ok := findLoneSurrogate(raw); ok {
		line, col := lineCol(raw, esc.offset)
		return d, fmt.Errorf("draft: %s: %s at line %d, column %d is half of a UTF-16 surrogate pair without its other half (a lone surrogate), which stands for no character; write the character itself, or both halves (e.g. \\ud83d\\ude00)",
			esc.path, esc.escape, line, col)
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
