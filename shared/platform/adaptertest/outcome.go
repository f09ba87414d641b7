package adaptertest

import (
	"errors"
	"testing"
	"time"

	"oncepost/shared/platform"
)

// The classes of an Outcome: nil, and the platform's failure types.
const (
	ClassOK           = "ok"            // nil
	ClassRejected     = "rejected"      // *platform.Rejected
	ClassNotPerformed = "not_performed" // *platform.NotPerformed
	ClassUnauthorized = "unauthorized"  // *platform.Unauthorized
	ClassAmbiguous    = "ambiguous"     // *platform.Ambiguous
	ClassInconclusive = "inconclusive"  // *platform.Inconclusive
)

// Outcome is an error reduced to its failure class and the fields a test
// compares; it is comparable and made for cmp.Diff against a literal.
// Fields a class does not have stay zero.
type Outcome struct {
	Class      string        // one of the Class constants
	Status     int           // Rejected, NotPerformed, Ambiguous
	Reason     string        // Rejected
	RetryAfter time.Duration // NotPerformed
	// Message is Rejected.Message for OutcomeOf; for DetailedOutcomeOf the
	// message of every class (NotPerformed.Message, Unauthorized.Message,
	// the text of Ambiguous.Err, Inconclusive.Message) as well.
	Message string
}

// WithoutMessage is o with Message cleared, for tests that compare the
// class and its fields only.
func (o Outcome) WithoutMessage() Outcome {
	o.Message = ""
	return o
}

// OutcomeOf classifies err: ClassOK for nil, else the one platform failure
// type it wraps, with its fields. Message is kept for a Rejected only (the
// explanation an operator reads); the other classes' messages are
// diagnostics a test rarely pins down. It stops the test (t.Fatalf) when
// err is of no class or of more than one.
func OutcomeOf(t testing.TB, err error) Outcome {
	t.Helper()
	o := DetailedOutcomeOf(t, err)
	if o.Class != ClassRejected {
		o.Message = ""
	}
	return o
}

// DetailedOutcomeOf is OutcomeOf keeping the message of every class, for
// tests of the layer that writes those messages (httpcall).
func DetailedOutcomeOf(t testing.TB, err error) Outcome {
	t.Helper()
	if err == nil {
		return Outcome{Class: ClassOK}
	}
	var (
		rej *platform.Rejected
		np  *platform.NotPerformed
		un  *platform.Unauthorized
		amb *platform.Ambiguous
		inc *platform.Inconclusive
	)
	var got []Outcome
	if errors.As(err, &rej) {
		got = append(got, Outcome{Class: ClassRejected, Status: rej.Status, Reason: rej.Reason, Message: rej.Message})
	}
	if errors.As(err, &np) {
		got = append(got, Outcome{Class: ClassNotPerformed, Status: np.Status, RetryAfter: np.RetryAfter, Message: np.Message})
	}
	if errors.As(err, &un) {
		got = append(got, Outcome{Class: ClassUnauthorized, Message: un.Message})
	}
	if errors.As(err, &amb) {
		o := Outcome{Class: ClassAmbiguous, Status: amb.Status}
		if amb.Err != nil {
			o.Message = amb.Err.Error()
		}
		got = append(got, o)
	}
	if errors.As(err, &inc) {
		got = append(got, Outcome{Class: ClassInconclusive, Message: inc.Message})
	}
	if len(got) != 1 {
		t.Fatalf("error %q (%T) matches %d failure classes, want exactly 1: %+v", err, err, len(got), got)
	}
	return got[0]
}
