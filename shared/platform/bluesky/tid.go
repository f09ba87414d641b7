package bluesky

import (
	"crypto/sha256"
	"encoding/binary"
	"time"
)

// tidAlphabet is atproto's base32-sortable alphabet: a TID's string order
// is its numeric order.
const tidAlphabet = "234567abcdefghijklmnopqrstuvwxyz"

// recordKey derives the post's record key from the ledger handle and the
// entry's time, the same on every attempt: a TID (atproto's timestamp
// identifier, 13 characters, the key type app.bsky.feed.post requires)
// whose timestamp is createdAt's second plus a sub-second offset, and
// whose 10-bit clock id, both taken from a hash of the handle.
//
// The handle is random per ledger entry, so two entries of one account in
// the same second get the same key only if 30 hashed bits agree (about
// one in a billion); even then nothing is posted twice or overwritten:
// the second putRecord finds the key taken by a record of other content
// and is refused (see Publish).
func recordKey(handle string, createdAt time.Time) string {
	sum := sha256.Sum256([]byte(handle))
	h := binary.BigEndian.Uint64(sum[:8])
	micros := uint64(createdAt.Unix())*1_000_000 + (h>>10)%1_000_000
	clock := h & 0x3ff
	return encodeTID(micros<<10 | clock)
}

// encodeTID writes v (its top bit zero) as 13 base32-sortable characters.
func encodeTID(v uint64) string {
	var b [13]byte
	for i := 12; i >= 0; i-- {
		b[i] = tidAlphabet[v&31]
		v >>= 5
	}
	return string(b[:])
}

// RecordKey is the record key a publish with this ledger handle and
// CreatedAt writes to (for drills and tools that match a PDS's records to
// ledger entries).
func RecordKey(handle string, createdAt time.Time) string { return recordKey(handle, createdAt) }
