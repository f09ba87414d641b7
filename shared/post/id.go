package post

import (
	"crypto/rand"
	"strings"
	"time"
)

// NewID is a generated post id, for a draft that names none: the local
// date and time of creation and a random suffix ("p-20261201-090000-ab3k").
func NewID(now time.Time) ID {
	return ID("p-" + now.Format("20060102-150405") + "-" + strings.ToLower(rand.Text()[:4]))
}
