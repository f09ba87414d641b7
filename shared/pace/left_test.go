package pace

import (
	"testing"
	"time"

	"oncepost/shared/platform"
)

// Left counts exactly the sends Take allows: after each allowed send it
// is one less, and Take refuses once it is 0; time gives it back.
func TestLeftCountsWhatTakeAllows(t *testing.T) {
	tests := []struct {
		name  string
		rates []platform.Rate
		want  int // sends left on an empty budget, under the tightest limit
	}{
		{"300 per 3 h", []platform.Rate{{Count: 300, Per: 3 * time.Hour}}, 150},
		{"1 per day", []platform.Rate{{Count: 1, Per: 24 * time.Hour}}, 1},
		{"two limits", []platform.Rate{{Count: 10, Per: time.Minute}, {Count: 100, Per: time.Hour}}, 5},
	}
	for _, tt := range tests {
		tats := map[string]time.Time{}
		now := t0
		minLeft := func() int {
			m := -1
			for _, n := range Left(tats, tt.rates, now) {
				if m < 0 || n < m {
					m = n
				}
			}
			return m
		}
		if got := minLeft(); got != tt.want {
			t.Errorf("%s: %d left on an empty budget, want %d", tt.name, got, tt.want)
		}
		for sent := 0; ; sent++ {
			left := minLeft()
			next, _, ok := Take(tats, tt.rates, now)
			if ok != (left > 0) {
				t.Fatalf("%s: after %d sends Left says %d but Take allowed=%v", tt.name, sent, left, ok)
			}
			if !ok {
				break
			}
			for k, v := range next {
				tats[k] = v
			}
			if got := minLeft(); got != left-1 {
				t.Fatalf("%s: a send took %d → %d", tt.name, left, got)
			}
		}
		now = now.Add(tt.rates[0].Per)
		if got := minLeft(); got == 0 {
			t.Errorf("%s: nothing left a whole period later", tt.name)
		}
	}
}
