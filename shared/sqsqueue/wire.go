package sqsqueue

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"oncepost/shared/publishing"
)

// Message attributes the adapter writes (see the package comment).
const (
	attrID           = "oncepost.id"
	attrEncoding     = "oncepost.encoding"
	attrReason       = "oncepost.reason"
	attrReceiveCount = "oncepost.receive_count"
	attrDeadAt       = "oncepost.dead_lettered_at"
	attrSource       = "oncepost.source"

	encodingBase64 = "base64"
)

// Reasons Receive gives the messages it dead-letters by itself, and
// DeadLetters the ones SQS's redrive policy moved.
const (
	// ReasonMaxReceives prefixes the reason of a message dead-lettered
	// because it was delivered its queue's maximum number of times.
	ReasonMaxReceives = "max_receives_exceeded"
	// ReasonUndecodable prefixes the reason of a message that cannot be
	// decoded (an unknown encoding, bad base64, a body over
	// publishing.MaxMessageBytes, a missing receive count); the reason
	// says what is wrong.
	ReasonUndecodable = "undecodable_message"
)

// SQS limits the adapter keeps to.
const (
	maxDelaySeconds      = 900   // SendMessage DelaySeconds
	maxVisibilitySeconds = 43200 // ReceiveMessage / ChangeMessageVisibility
	maxBatchEntries      = 10    // SendMessageBatch, ReceiveMessage, …
	maxBatchBytes        = 1 << 20
)

// MinQueueMessageSize is the smallest queue MaximumMessageSize that holds
// every body Send accepts, base64-encoded, with the adapter's attributes
// (a dead letter's included).
const MinQueueMessageSize = (publishing.MaxMessageBytes+2)/3*4 + 2048

// cutMarker ends a reason that was cut to publishing.MaxReasonBytes.
const cutMarker = "… (cut)"

// wire is a message body as SQS holds it, with the adapter's id.
type wire struct {
	id       string
	body     string
	encoding string // "" (text as is) or encodingBase64
}

// outgoing encodes body for SQS under a new id. bmpOnly also encodes
// text with characters beyond U+FFFF (see Queue.bmpOnly).
func outgoing(body []byte, bmpOnly bool) wire {
	w := wire{id: newID()}
	if utf8.Valid(body) && sqsText(string(body), bmpOnly) {
		w.body = string(body)
	} else {
		w.body, w.encoding = base64.StdEncoding.EncodeToString(body), encodingBase64
	}
	return w
}

// decode returns the bytes w carries.
func (w wire) decode() ([]byte, error) {
	switch w.encoding {
	case "":
		return []byte(w.body), nil
	case encodingBase64:
		b, err := base64.StdEncoding.DecodeString(w.body)
		if err != nil {
			return nil, fmt.Errorf("body is not valid base64: %v", err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("%s %q is not %q", attrEncoding, cut(w.encoding, 64), encodingBase64)
}

// attributes are the message attributes that carry w: its id and, if
// any, its encoding.
func (w wire) attributes() map[string]types.MessageAttributeValue {
	a := map[string]types.MessageAttributeValue{attrID: text(w.id)}
	if w.encoding != "" {
		a[attrEncoding] = text(w.encoding)
	}
	return a
}

func text(s string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(s)}
}

func number(n int) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(n))}
}

// size is how SQS counts a message against its size limits: the body
// plus each attribute's name, type and value.
func size(body string, attrs map[string]types.MessageAttributeValue) int {
	n := len(body)
	for name, v := range attrs {
		n += len(name) + len(aws.ToString(v.DataType)) + len(aws.ToString(v.StringValue)) + len(v.BinaryValue)
	}
	return n
}

// fromSQS reads the adapter's wire fields of a received message.
func fromSQS(m types.Message) wire {
	w := wire{id: stringAttr(m, attrID), body: aws.ToString(m.Body), encoding: stringAttr(m, attrEncoding)}
	if w.id == "" {
		w.id = aws.ToString(m.MessageId)
	}
	return w
}

func stringAttr(m types.Message, name string) string {
	v, ok := m.MessageAttributes[name]
	if !ok {
		return ""
	}
	return aws.ToString(v.StringValue)
}

// sqsText reports whether s has only characters SQS accepts in a body or
// string attribute: #x9 | #xA | #xD | #x20–#xD7FF | #xE000–#xFFFD |
// #x10000–#x10FFFF; with bmpOnly, none of the last range.
func sqsText(s string, bmpOnly bool) bool {
	for _, r := range s {
		if !sqsRune(r, bmpOnly) {
			return false
		}
	}
	return true
}

func sqsRune(r rune, bmpOnly bool) bool {
	switch {
	case r == 0x9 || r == 0xA || r == 0xD:
		return true
	case r >= 0x20 && r <= 0xD7FF, r >= 0xE000 && r <= 0xFFFD:
		return true
	case r >= 0x10000 && r <= 0x10FFFF:
		return !bmpOnly
	}
	return false
}

// reasonText makes a reason fit a string attribute: invalid UTF-8 and
// characters SQS refuses become U+FFFD, an empty reason is named, and a
// reason over publishing.MaxReasonBytes is cut on a rune boundary and ends
// with cutMarker.
func reasonText(reason string) string {
	reason = strings.Map(func(r rune) rune {
		if sqsRune(r, false) {
			return r
		}
		return utf8.RuneError
	}, strings.ToValidUTF8(reason, string(utf8.RuneError)))
	if reason == "" {
		reason = "(no reason given)"
	}
	return cut(reason, publishing.MaxReasonBytes)
}

// cut returns s if it has at most n bytes; otherwise its longest prefix
// that leaves room for cutMarker and ends on a rune boundary, followed by
// cutMarker: n bytes at most in all.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	end := max(n-len(cutMarker), 0)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + cutMarker
}

// seconds rounds d up to whole seconds (SQS's unit): a message is never
// visible before it was asked to be. Negative durations are 0.
func seconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// newID returns a new message id: 16 random bytes in hex.
func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}
