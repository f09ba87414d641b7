package recurring

import (
	"strings"
	"time"

	"golang.org/x/text/unicode/norm"
)

// DuplicateKey is what a platform's duplicate-content rule compares, as
// oncepost reads it: the text in NFC, its white space runs collapsed to
// one space and trimmed, in lower case. X says it refuses "duplicate
// content" and is known to refuse near-duplicates too, so two texts that
// differ only in case or spacing are taken as the same: a rule refused
// for a near-duplicate costs a variant, a post refused by the platform
// costs an occurrence.
func DuplicateKey(text string) string {
	return strings.ToLower(strings.Join(strings.Fields(norm.NFC.String(text)), " "))
}

// Clash is two occurrences that would send the same text to an account
// less than a platform's duplicate window apart.
type Clash struct {
	First, Second Occurrence
}

// FirstClash returns the first two occurrences (occ in slot order) less
// than window apart whose texts (text(index)) have the same DuplicateKey.
// An empty text never clashes (a post of media alone).
func FirstClash(occ []Occurrence, window time.Duration, text func(index int) string) (Clash, bool) {
	for j := range occ {
		kj := DuplicateKey(text(occ[j].Index))
		if kj == "" {
			continue
		}
		for i := j - 1; i >= 0 && occ[j].Slot.Sub(occ[i].Slot) < window; i-- {
			if DuplicateKey(text(occ[i].Index)) == kj {
				return Clash{First: occ[i], Second: occ[j]}, true
			}
		}
	}
	return Clash{}, false
}

// MostWithin is the largest number of occurrences (occ in slot order)
// inside any span shorter than window: how many texts must take turns so
// that none repeats within the window.
func MostWithin(occ []Occurrence, window time.Duration) int {
	most := 0
	i := 0
	for j := range occ {
		for occ[j].Slot.Sub(occ[i].Slot) >= window {
			i++
		}
		most = max(most, j-i+1)
	}
	return most
}
