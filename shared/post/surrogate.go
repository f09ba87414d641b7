package post

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
)

// A JSON string may escape a character outside the Basic Multilingual
// Plane as a UTF-16 surrogate pair (\ud83d\ude00). Half a pair alone
// (\ud800, or \udc00 without a high half before it) stands for no
// character: encoding/json decodes it to U+FFFD without an error (RFC 8259
// §8.2 leaves the behaviour to the implementation), so a post would go out
// with a replacement character its author never wrote. No JSON library in
// the module graph reports it, so the draft's raw bytes are read here
// before decoding: a token walk with json.Decoder gives each string's
// path and its raw bytes, and a small scan of those bytes finds the
// escapes.

// surrogateEscape is a lone surrogate escape in a JSON document.
type surrogateEscape struct {
	// path names the string: body, targets[1].account, texts.x, or "a
	// key" for an object key.
	path string
	// escape is the escape as written, e.g. \ud800.
	escape string
	// offset is the byte offset of its backslash.
	offset int
}

// findLoneSurrogate returns the first lone surrogate escape in raw, if
// any. Malformed JSON is reported as none found: the decoder that runs
// next says what is wrong with it.
func findLoneSurrogate(raw []byte) (surrogateEscape, bool) {
	type frame struct {
		array     bool
		index     int    // the current element of an array
		key       string // the current key of an object
		expectKey bool
	}
	var stack []*frame
	path := func() string {
		var b strings.Builder
		for _, f := range stack {
			if f.array {
				fmt.Fprintf(&b, "[%d]", f.index)
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(f.key)
		}
		return b.String()
	}
	// done moves past a value of the innermost container.
	done := func() {
		if len(stack) == 0 {
			return
		}
		if top := stack[len(stack)-1]; top.array {
			top.index++
		} else {
			top.expectKey = true
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	for {
		start := int(dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return surrogateEscape{}, false
		}
		end := int(dec.InputOffset())
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, &frame{expectKey: true})
			case '[':
				stack = append(stack, &frame{array: true})
			default:
				stack = stack[:len(stack)-1]
				done()
			}
		case string:
			isKey := len(stack) > 0 && !stack[len(stack)-1].array && stack[len(stack)-1].expectKey
			if esc, off, ok := loneSurrogateIn(raw[start:end]); ok {
				where := path()
				if isKey {
					where = "a key"
				}
				return surrogateEscape{path: where, escape: esc, offset: start + off}, true
			}
			if isKey {
				top := stack[len(stack)-1]
				top.key, top.expectKey = v, false
			} else {
				done()
			}
		default:
			done()
		}
		if len(stack) == 0 && !dec.More() {
			return surrogateEscape{}, false
		}
	}
}

// loneSurrogateIn scans the raw bytes of one JSON string token (with
// whatever separators and spaces came before its opening quote) for a
// \uXXXX escape of half a surrogate pair without its other half: a high
// half not followed at once by an escaped low half, or a low half alone.
// It returns the escape as written and its offset in s.
func loneSurrogateIn(s []byte) (string, int, bool) {
	hex4 := func(i int) (rune, bool) {
		if i+6 > len(s) || s[i] != '\\' || s[i+1] != 'u' {
			return 0, false
		}
		n, err := strconv.ParseUint(string(s[i+2:i+6]), 16, 16)
		return rune(n), err == nil
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		r, ok := hex4(i)
		if !ok {
			i++ // \" \\ \/ \b \f \n \r \t: the escaped byte is not a backslash that starts another escape
			continue
		}
		if utf16.IsSurrogate(r) {
			if low, ok := hex4(i + 6); r < 0xdc00 && ok && low >= 0xdc00 && low <= 0xdfff {
				i += 11 // the pair
				continue
			}
			return string(s[i : i+6]), i, true
		}
		i += 5
	}
	return "", 0, false
}
