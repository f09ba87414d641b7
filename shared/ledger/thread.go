package ledger

import (
	"strconv"
	"strings"
	"time"
)

// partSep joins a post id and a thread part's number in the part's
// subject. Post ids never hold it (post.Draft.Validate), so a subject
// splits back in one way only.
const partSep = "#"

// PartSubject is the subject of the publish entry of a thread's part
// (1-based): the post id for part 1, so that a thread's first part has
// exactly the key a post without a thread has, and "<post>#<part>" for
// every later part, a key of its own on the same account and slot.
func PartSubject(postID string, part int) string {
	if part <= 1 {
		return postID
	}
	return postID + partSep + strconv.Itoa(part)
}

// SubjectPart splits a publish entry's subject into the post id and the
// thread part it publishes: part 1 for a subject without a part number
// (a post without a thread, or a thread's first part).
func SubjectPart(subject string) (postID string, part int) {
	id, n, ok := strings.Cut(subject, partSep)
	if !ok {
		return subject, 1
	}
	k, err := strconv.Atoi(n)
	if err != nil || k < 2 || strconv.Itoa(k) != n {
		return subject, 1
	}
	return id, k
}

// PartKey is the key of publishing a thread's part to an account at the
// post's slot: PublishKey of the part's subject.
func PartKey(account, postID string, part int, slot time.Time) Key {
	return PublishKey(account, PartSubject(postID, part), slot)
}
