package ebschedule

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"oncepost/shared/publishing"
)

// MaxNameLen is Scheduler's limit on schedule and group names; names
// match [0-9a-zA-Z-_.]+
// (https://docs.aws.amazon.com/scheduler/latest/APIReference/API_CreateSchedule.html).
const MaxNameLen = 64

// Name prefixes of target schedules. Recurring schedules may not use them,
// so the two kinds never share a name.
const (
	readablePrefix = "post."
	hashedPrefix   = "post-"
)

// stampLayout writes a slot into a name: compact, UTC, charset-safe.
const stampLayout = "20060102T150405Z"

// Name is the schedule name of a target, a deterministic function of its
// post, account and slot (the AWS counterpart of the embedded runtime's
// post/<id>/<account>/<slot>):
//
//   - post.<post>.<account>.<yyyymmddThhmmssZ> when both ids use only
//     [0-9a-zA-Z_-] (no dot, so the three parts can be read back), the slot
//     is a whole second, and the name fits in MaxNameLen;
//   - otherwise post-<yyyymmddThhmmssZ>-<32 hex digits>, the digits the
//     first 128 bits of SHA-256(post NUL account NUL slot in RFC 3339 with
//     nanoseconds): ids with dots, long ids, sub-second slots.
//
// The two forms differ in their fifth byte, so a readable name never equals
// a hashed one. Every name matches [0-9a-zA-Z-_.]{1,64}.
func Name(ref publishing.TargetRef) string {
	slot := ref.Slot.UTC()
	stamp := slot.Format(stampLayout)
	if slot.Nanosecond() == 0 && plainID(string(ref.Post)) && plainID(string(ref.Account)) && len(stamp) == len(stampLayout) {
		n := readablePrefix + string(ref.Post) + "." + string(ref.Account) + "." + stamp
		if len(n) <= MaxNameLen {
			return n
		}
	}
	h := sha256.Sum256([]byte(string(ref.Post) + "\x00" + string(ref.Account) + "\x00" + slot.Format(time.RFC3339Nano)))
	if len(stamp) != len(stampLayout) {
		stamp = "x" // a year outside 0000-9999 cannot be written compactly
	}
	return hashedPrefix + stamp + "-" + hex.EncodeToString(h[:16])
}

// plainID reports whether s is non-empty and uses only [0-9a-zA-Z_-].
func plainID(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// validName reports whether s is a valid schedule or group name.
func validName(s string) bool {
	if s == "" || len(s) > MaxNameLen {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
