package post

import "time"

// BlockedTerm is one word or phrase of the workspace's blocklist.
type BlockedTerm struct {
	// Term is the word or phrase as the operator wrote it.
	Term string `json:"term"`
	// Key is Term normalised (NormalizeTerm): what is stored, compared and
	// matched. Two terms with the same key are the same entry.
	Key     string    `json:"key"`
	AddedAt time.Time `json:"added_at"`
}
