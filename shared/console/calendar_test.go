package console

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"oncepost/shared/post"
)

// calendarNow is the calendar tests' clock: Tuesday 1 December 2026.
var calendarNow = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

func newCalendarHarness(t *testing.T) *harness {
	t.Helper()
	return newHarness(t, harnessOptions{now: func() time.Time { return calendarNow }})
}

// put stores a post with one target per account, all at slot, in the
// status given (published ones with a remote id).
func (h *harness) put(id, body string, slot time.Time, status post.TargetStatus, accounts ...post.AccountID) {
	h.t.Helper()
	p := post.Post{ID: post.ID(id), Body: body, CreatedAt: calendarNow.Add(-time.Hour)}
	for _, a := range accounts {
		tg := post.Target{Account: a, Slot: slot.UTC(), Status: status, UpdatedAt: calendarNow}
		if status == post.Published {
			tg.RemoteID = "remote-" + id
		}
		p.Targets = append(p.Targets, tg)
	}
	if err := h.store.CreatePost(context.Background(), p); err != nil {
		h.t.Fatal(err)
	}
}

// cell is the calendar grid's cell of the day (YYYY-MM-DD), "" if the
// page has none.
func cell(body, day string) string {
	i := strings.Index(body, `<time datetime="`+day+`">`)
	if i < 0 {
		return ""
	}
	start := strings.LastIndex(body[:i], "<td")
	end := strings.Index(body[i:], "</td>")
	if start < 0 || end < 0 {
		return ""
	}
	return body[start : i+end]
}

// Week, month and day views place each post on its day in the viewer's
// zone (Europe/Berlin, from the sign-in): 23:30 UTC on Monday 7 December
// is 00:30 on Tuesday 8 December there.
func TestCalendarDaysInViewersZone(t *testing.T) {
	t.Parallel()
	h := newCalendarHarness(t)
	h.put("late", "Late night news", time.Date(2026, 12, 7, 23, 30, 0, 0, time.UTC), post.Scheduled, "news", "sky")
	h.put("noon", "Noon news", time.Date(2026, 12, 7, 11, 0, 0, 0, time.UTC), post.Published, "news")
	h.put("other-week", "Next week", time.Date(2026, 12, 15, 9, 0, 0, 0, time.UTC), post.Scheduled, "news")
	b := h.signIn("read")

	for _, path := range []string{"/calendar?view=week&at=2026-12-09", "/calendar?view=month&at=2026-12-20", "/calendar?view=week&at=2026-12-07"} {
		p := b.get(path)
		if p.status != http.StatusOK {
			t.Fatalf("%s: %d %.300s", path, p.status, p.body)
		}
		mon, tue := cell(p.body, "2026-12-07"), cell(p.body, "2026-12-08")
		if !strings.Contains(tue, `href="/posts/late"`) || !strings.Contains(tue, ">00:30</time>") || strings.Contains(mon, "/posts/late") {
			t.Errorf("%s: the post at 23:30 UTC is not on Tuesday at 00:30 (Berlin).\nMonday: %s\nTuesday: %s", path, mon, tue)
		}
		if !strings.Contains(mon, `href="/posts/noon"`) || !strings.Contains(mon, ">12:00</time>") {
			t.Errorf("%s: the post at 11:00 UTC is not on Monday at 12:00:\n%s", path, mon)
		}
		for _, want := range []string{`data-post="late" data-account="news" data-status="scheduled"`, `data-post="late" data-account="sky" data-status="scheduled"`,
			`data-post="noon" data-account="news" data-status="published"`, "Late night news", `aria-live="polite"`} {
			if !strings.Contains(p.body, want) {
				t.Errorf("%s: no %s", path, want)
			}
		}
		weekView := strings.Contains(path, "week")
		if got := strings.Contains(p.body, "/posts/other-week"); got == weekView {
			t.Errorf("%s: the post of the week after shown: %v", path, got)
		}
	}
	day := b.get("/calendar?view=day&at=2026-12-08")
	if !strings.Contains(day.body, "/posts/late") || strings.Contains(day.body, "/posts/noon") {
		t.Errorf("day view of 8 December: %.2000s", day.body)
	}
}

// The account filter keeps the posts with a target on that account and
// shows only that account's targets; an unknown account or a bad view or
// day is a 400 naming the parameter.
func TestCalendarAccountFilter(t *testing.T) {
	t.Parallel()
	h := newCalendarHarness(t)
	slot := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	h.put("both", "To both", slot, post.Scheduled, "news", "sky")
	h.put("sky-only", "To sky", slot, post.Scheduled, "sky")
	b := h.signIn("read")

	news := b.get("/calendar?view=week&at=2026-12-03&account=news")
	if !strings.Contains(news.body, "/posts/both") || strings.Contains(news.body, "/posts/sky-only") ||
		strings.Contains(news.body, `data-post="both" data-account="sky"`) {
		t.Errorf("account news: %.3000s", news.body)
	}
	if !strings.Contains(news.body, `<option value="news" selected>`) {
		t.Errorf("account news: the select does not show it")
	}
	sky := b.get("/calendar?view=month&at=2026-12-03&account=sky")
	if !strings.Contains(sky.body, "/posts/both") || !strings.Contains(sky.body, "/posts/sky-only") {
		t.Errorf("account sky: %.3000s", sky.body)
	}
	for query, field := range map[string]string{"account=nope": "account:", "view=year": "view:", "at=31-12-2026": "at:", "view=week&after=x": "after:"} {
		p := b.get("/calendar?" + query)
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, field) {
			t.Errorf("?%s: %d, want 400 naming %s: %.500s", query, p.status, field, p.body)
		}
	}
}

// A day shows at most monthDayPosts posts in the month and links to its
// day list, which shows them all (a page at a time).
func TestCalendarCapsADay(t *testing.T) {
	t.Parallel()
	h := newCalendarHarness(t)
	for i := range 60 {
		h.put(fmt.Sprintf("busy-%02d", i), "Busy day", time.Date(2026, 12, 10, 8, i, 0, 0, time.UTC), post.Scheduled, "news")
	}
	b := h.signIn("read")
	month := cell(b.get("/calendar?view=month&at=2026-12-10").body, "2026-12-10")
	if n := strings.Count(month, `class="cal-item"`); n != monthDayPosts {
		t.Errorf("month: %d posts on the busy day, want %d", n, monthDayPosts)
	}
	if !strings.Contains(month, `class="cal-more" href="/calendar?at=2026-12-10&amp;view=day"`) {
		t.Errorf("month: no link to the day's list: %s", month)
	}
	day := b.get("/calendar?view=day&at=2026-12-10")
	if n := strings.Count(day.body, `class="cal-item"`); n != dayListPosts {
		t.Errorf("day: %d posts, want a page of %d", n, dayListPosts)
	}
	i := strings.Index(day.body, `<a href="/calendar?after=`)
	if i < 0 {
		t.Fatalf("day: no link to the later posts")
	}
	next := day.body[i+len(`<a href="`):]
	next = strings.ReplaceAll(next[:strings.Index(next, `"`)], "&amp;", "&")
	rest := b.get(next)
	if n := strings.Count(rest.body, `class="cal-item"`); n != 60-dayListPosts || !strings.Contains(rest.body, "/posts/busy-59") {
		t.Errorf("day, page 2: %d posts, want %d ending with busy-59", n, 60-dayListPosts)
	}
}

// A post's text and its ids are text on the calendar and the post page,
// never markup.
func TestCalendarEscapesText(t *testing.T) {
	t.Parallel()
	h := newCalendarHarness(t)
	evil := `<script>alert(1)</script> "><img src=x onerror=alert(1)>`
	h.put("evil", evil, time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC), post.Scheduled, "news")
	b := h.signIn("read")
	for _, path := range []string{"/calendar?view=week&at=2026-12-02", "/calendar?view=month&at=2026-12-02", "/calendar?view=day&at=2026-12-02", "/posts/evil"} {
		p := b.get(path)
		if p.status != http.StatusOK {
			t.Fatalf("%s: %d", path, p.status)
		}
		for _, raw := range []string{"<script>alert", "<img src=x", `"><img`} {
			if strings.Contains(p.body, raw) {
				t.Errorf("%s: %q is in the page unescaped", path, raw)
			}
		}
		if !strings.Contains(p.body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s: the text is not shown escaped", path)
		}
	}
}

// Reschedule from the post page moves a scheduled target (the time read
// in the viewer's zone) and refuses a published one with its message;
// cancel likewise; both need the posts scope and the CSRF token.
func TestPostRescheduleAndCancel(t *testing.T) {
	t.Parallel()
	h := newCalendarHarness(t)
	slot := time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC)
	p := post.Post{ID: "mixed", Body: "Mixed", CreatedAt: calendarNow, Targets: []post.Target{
		{Account: "news", Slot: slot, Status: post.Scheduled, UpdatedAt: calendarNow},
		{Account: "sky", Slot: slot, Status: post.Published, RemoteID: "at://sky/1", UpdatedAt: calendarNow}}}
	if err := h.store.CreatePost(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	reader := h.signIn("read")
	if a := reader.post("/posts/mixed/reschedule", url.Values{"at": {"2026-12-20T10:00"}}); a.status != http.StatusForbidden {
		t.Errorf("reschedule with a read token: %d, want 403", a.status)
	}
	b := h.signIn("read,posts")
	show := b.get("/posts/mixed")
	for _, want := range []string{`action="/posts/mixed/reschedule"`, `name="at" type="datetime-local" value="2026-12-04T10:00"`, `<option value="news">`} {
		if !strings.Contains(show.body, want) {
			t.Errorf("post page: no %s", want)
		}
	}
	if strings.Contains(show.body, `<option value="sky">`) {
		t.Errorf("post page: the published target is offered to move")
	}
	if a := b.post("/posts/mixed/reschedule", url.Values{"at": {"2026-12-20T10:00"}, csrfField: {"wrong"}}); a.status != http.StatusForbidden {
		t.Errorf("reschedule without the CSRF token: %d, want 403", a.status)
	}
	if got := h.slots("mixed"); got["news"] != slot {
		t.Fatalf("refused requests moved the target: %v", got)
	}

	a := b.post("/posts/mixed/reschedule", url.Values{"at": {"2026-12-20T10:00"}})
	if a.status != http.StatusSeeOther || a.header.Get("Location") != "/posts/mixed" {
		t.Fatalf("reschedule: %d %s", a.status, a.header.Get("Location"))
	}
	want := map[post.AccountID]time.Time{"news": time.Date(2026, 12, 20, 9, 0, 0, 0, time.UTC), "sky": slot}
	if diff := cmp.Diff(want, h.slots("mixed")); diff != "" {
		t.Errorf("slots after the move (-want +got):\n%s", diff)
	}
	flash := b.get("/posts/mixed").body
	for _, want := range []string{`class="flash error" role="alert"`, "news done — rescheduled for 2026-12-20T09:00:00Z", "sky refused — ", "target is published"} {
		if !strings.Contains(flash, want) {
			t.Errorf("the page after the move has no %q: %.1500s", want, flash)
		}
	}
	if a := b.post("/posts/mixed/reschedule", url.Values{"at": {"tomorrow"}}); a.status != http.StatusSeeOther {
		t.Errorf("a bad time: %d", a.status)
	} else if page := b.get("/posts/mixed").body; !strings.Contains(page, "at: &#34;tomorrow&#34; is not a date and time") {
		t.Errorf("a bad time: no message naming the field: %.1500s", page)
	}
	if a := b.post("/posts/mixed/reschedule", url.Values{"at": {"2026-11-20T10:00"}}); a.status != http.StatusSeeOther {
		t.Errorf("a past time: %d", a.status)
	} else if page := b.get("/posts/mixed").body; !strings.Contains(page, "at: 2026-11-20T09:00:00Z is in the past") {
		t.Errorf("a past time: no message: %.1500s", page)
	}

	b.post("/posts/mixed/cancel", url.Values{})
	page := b.get("/posts/mixed").body
	for _, want := range []string{"news done — cancelled", "sky refused — already published", `data-account="news" data-status="cancelled"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page after cancel has no %q: %.2500s", want, page)
		}
	}
	if a := b.get("/posts/nope"); a.status != http.StatusNotFound {
		t.Errorf("an unknown post: %d", a.status)
	}
}

// slots are the post's targets' slots by account.
func (h *harness) slots(id post.ID) map[post.AccountID]time.Time {
	h.t.Helper()
	p, err := h.store.GetPost(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[post.AccountID]time.Time{}
	for _, t := range p.Targets {
		out[t.Account] = t.Slot
	}
	return out
}

// A status the runtime changes reaches an open calendar's stream: first
// every shown status, then the change.
func TestCalendarLiveStatuses(t *testing.T) {
	t.Parallel()
	h := newCalendarHarness(t)
	h.console.liveEvery = 10 * time.Millisecond
	slot := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	h.put("live", "Live", slot, post.Scheduled, "news", "sky")
	h.put("elsewhere", "Not on this page", slot.AddDate(0, 1, 0), post.Scheduled, "news")
	b := h.signIn("read")
	page := b.get("/calendar?view=week&at=2026-12-02")
	if !strings.Contains(page.body, `data-live="/calendar/live?at=2026-12-02&amp;view=week"`) {
		t.Fatalf("the page names no live stream: %.2000s", page.body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.srv.URL+"/calendar/live?at=2026-12-02&view=week", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	events := bufio.NewScanner(res.Body)
	next := func() []liveStatus {
		t.Helper()
		for events.Scan() {
			data, ok := strings.CutPrefix(events.Text(), "data: ")
			if !ok {
				continue
			}
			var out []liveStatus
			if err := json.Unmarshal([]byte(data), &out); err != nil {
				t.Fatalf("event %q: %v", data, err)
			}
			return out
		}
		t.Fatalf("the stream ended: %v", events.Err())
		return nil
	}
	first := next()
	want := []liveStatus{{"live", "news", post.Scheduled}, {"live", "sky", post.Scheduled}}
	if diff := cmp.Diff(want, first); diff != "" {
		t.Fatalf("first event (-want +got):\n%s", diff)
	}
	if _, err := h.store.UpdateTarget(ctx, "live", "sky", post.TargetUpdate{Status: post.Published, RemoteID: "at://1",
		From: []post.TargetStatus{post.Scheduled}, At: calendarNow}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]liveStatus{{"live", "sky", post.Published}}, next()); diff != "" {
		t.Errorf("the change (-want +got):\n%s", diff)
	}
	// Signing out ends the stream at its next tick.
	if p := b.post("/signout", url.Values{}); p.status != http.StatusSeeOther {
		t.Fatalf("sign out: %d", p.status)
	}
	for events.Scan() {
	}
	if ctx.Err() != nil {
		t.Fatalf("the stream outlived the session")
	}
}

// A month page's size is bounded whatever the workspace holds: each day
// shows at most monthDayPosts posts, read from the store with that
// limit, so a month full of the largest items (long ids and texts, every
// account) is the largest month page there is. It stays under 500 KB,
// and a day with twice the posts gives the same page.
func TestCalendarMonthSizeIsBounded(t *testing.T) {
	t.Parallel()
	h := newCalendarHarness(t)
	long := strings.Repeat("A long post text that goes on & on <with> \"marks\" ", 60)
	first := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC) // Monday of December 2026's grid
	day := func(d, n int) {
		for i := range n {
			id := fmt.Sprintf("%s-%02d-%02d", strings.Repeat("x", 80), d, i)
			h.put(id, long, first.AddDate(0, 0, d).Add(time.Duration(9*60+i)*time.Minute), post.Scheduled, "news", "sky", "gone")
		}
	}
	for d := range 35 {
		day(d, monthDayPosts+1)
	}
	b := h.signIn("read")
	full := b.get("/calendar?view=month&at=2026-12-15")
	if full.status != http.StatusOK || len(full.body) > 500<<10 {
		t.Fatalf("the largest month: %d, %d bytes, want ≤ 500 KB", full.status, len(full.body))
	}
	if n := strings.Count(full.body, `class="cal-item"`); n != 31*monthDayPosts {
		t.Errorf("the largest month shows %d posts, want %d", n, 31*monthDayPosts)
	}
	for i := range 20 {
		h.put(fmt.Sprintf("later-on-the-15th-%02d", i), long, time.Date(2026, 12, 15, 22, i, 0, 0, time.UTC), post.Scheduled, "news")
	}
	if again := b.get("/calendar?view=month&at=2026-12-15"); again.body != full.body {
		t.Errorf("20 more posts late on a full day changed the month page: %d → %d bytes", len(full.body), len(again.body))
	}
	t.Logf("the largest month page: %d bytes", len(full.body))
}

// With 10,000 posts in the workspace (90 days, two targets each: 111 a
// day), the month page stays under 500 KB (and the week's too): a day
// shows a capped number of posts. Seeding them takes about 3 s, and five
// times that under the race detector, so it runs without it only
// (TestCalendarMonthSizeIsBounded runs always).
func TestCalendarPageSizeWithTenThousandPosts(t *testing.T) {
	if testing.Short() || raceDetector {
		t.Skip("seeds 10,000 posts: run without -short and -race")
	}
	t.Parallel()
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	h := newHarness(t, harnessOptions{now: func() time.Time { return start.Add(30 * 24 * time.Hour) }})
	// The bench's seed, written by 16 writers so the store commits them
	// in groups (a third of the time of one writer).
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := w; i < 10000; i += 16 {
				at := start.Add(time.Duration(i) * (90 * 24 * time.Hour / 10000)).Truncate(time.Minute).UTC()
				p := post.Post{ID: post.ID(fmt.Sprintf("seed-%05d", i)), Body: fmt.Sprintf("Seeded post %d: the morning news, with a link https://example.com/%d", i, i),
					Targets:   []post.Target{{Account: "news", Slot: at, Status: post.Scheduled, UpdatedAt: at}, {Account: "sky", Slot: at, Status: post.Scheduled, UpdatedAt: at}},
					CreatedAt: start}
				if err := h.store.CreatePost(context.Background(), p); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b := h.signIn("read")
	for _, path := range []string{"/calendar?view=month&at=2026-12-31", "/calendar?view=month&at=2027-01-15&account=news", "/calendar?view=week&at=2026-12-31"} {
		p := b.get(path)
		if p.status != http.StatusOK {
			t.Fatalf("%s: %d", path, p.status)
		}
		if len(p.body) > 500<<10 {
			t.Errorf("%s: %d bytes, want ≤ 500 KB", path, len(p.body))
		}
		if n, days := strings.Count(p.body, `class="cal-more"`), strings.Count(p.body, `class="cal-day"`)+strings.Count(p.body, `class="cal-day today"`); n < days || n < 7 {
			t.Errorf("%s: %d days link to more posts, want every day of the view", path, n)
		}
	}
}

// The views' days: weeks from Monday, a month's grid in whole weeks, and
// days that are midnights in the viewer's zone across a DST change.
func TestCalendarDays(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		view, at    string
		first, last string
		n           int
	}{
		{"week", "2026-12-02", "2026-11-30", "2026-12-06", 7},
		{"week", "2026-12-06", "2026-11-30", "2026-12-06", 7},
		{"week", "2027-03-28", "2027-03-22", "2027-03-28", 7}, // 28 March has 23 hours
		{"month", "2026-11-15", "2026-10-26", "2026-12-06", 42},
		{"month", "2027-03-31", "2027-03-01", "2027-04-04", 35},
		{"month", "2027-02-10", "2027-02-01", "2027-02-28", 28},
		{"day", "2027-10-31", "2027-10-31", "2027-10-31", 1},
	} {
		q, err := parseCalendarQuery(url.Values{"view": {tc.view}, "at": {tc.at}}, berlin, calendarNow)
		if err != nil {
			t.Fatal(err)
		}
		days := q.days()
		got := []any{days[0].Format("2006-01-02"), days[len(days)-1].Format("2006-01-02"), len(days)}
		if diff := cmp.Diff([]any{tc.first, tc.last, tc.n}, got); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", tc.view, tc.at, diff)
		}
		for _, d := range days {
			if d.Hour() != 0 || d.Minute() != 0 || d.Location() != berlin {
				t.Errorf("%s %s: day %v is not a midnight in Berlin", tc.view, tc.at, d)
			}
		}
	}
}
