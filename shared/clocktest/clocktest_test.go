package clocktest

import (
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	c := New(t0)
	if !c.Now().Equal(t0) {
		t.Fatalf("Now = %v, want %v", c.Now(), t0)
	}
	c.Advance(90 * time.Second)
	if want := t0.Add(90 * time.Second); !c.Now().Equal(want) {
		t.Errorf("after Advance: %v, want %v", c.Now(), want)
	}
	c.Set(t0)
	if !c.Now().Equal(t0) {
		t.Errorf("after Set: %v, want %v", c.Now(), t0)
	}
}
