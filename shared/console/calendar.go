package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// How many posts a day of the calendar shows: a day with more links to
// its own list (the day view, paged). This bounds a page's size and
// reads whatever the workspace holds (10,000 posts: a month page stays
// well under 500 KB).
const (
	monthDayPosts = 6
	weekDayPosts  = 12
	dayListPosts  = 50
	// dayReaders bounds the days read at once.
	dayReaders = 8
	// excerptRunes is how much of a post's text an item shows.
	excerptRunes = 70
)

// The calendar's views.
const (
	viewWeek  = "week"
	viewMonth = "month"
	viewDay   = "day"
)

// calendarQuery is what a calendar page (and its live stream) shows:
// parsed from ?view=week|month|day&at=YYYY-MM-DD&account=ID&after=….
type calendarQuery struct {
	View    string
	At      time.Time // midnight of the day asked, in the viewer's zone
	Account post.AccountID
	// After is the day view's cursor (its next page).
	After string
}

// parseCalendarQuery reads the query in the viewer's zone; a bad value
// is an error naming its parameter.
func parseCalendarQuery(q url.Values, zone *time.Location, now time.Time) (calendarQuery, error) {
	c := calendarQuery{View: q.Get("view"), Account: post.AccountID(strings.TrimSpace(q.Get("account"))), After: q.Get("after")}
	switch c.View {
	case "":
		c.View = viewWeek
	case viewWeek, viewMonth, viewDay:
	default:
		return c, fmt.Errorf("view: %q is not a calendar view; use week, month or day", c.View)
	}
	today := now.In(zone)
	c.At = time.Date(today.Year(), today.Month(), today.Day(), 0, 0, 0, 0, zone)
	if v := q.Get("at"); v != "" {
		d, err := time.ParseInLocation("2006-01-02", v, zone)
		if err != nil || d.Year() < 2000 || d.Year() > post.MaxSlotYear {
			return c, fmt.Errorf("at: %q is not a day; write it as YYYY-MM-DD, e.g. %s", v, today.Format("2006-01-02"))
		}
		c.At = d
	}
	if c.After != "" && c.View != viewDay {
		return c, errors.New("after: pages are only in the day view")
	}
	return c, nil
}

// url is the calendar page's address for view and at, with the account.
func (c calendarQuery) url(view string, at time.Time) string {
	v := url.Values{"view": {view}, "at": {at.Format("2006-01-02")}}
	if c.Account != "" {
		v.Set("account", string(c.Account))
	}
	return "/calendar?" + v.Encode()
}

// days are the first instants (midnight, viewer's zone) of the days the
// view shows, and the month the view is of (month view only).
func (c calendarQuery) days() []time.Time {
	y, m, d := c.At.Date()
	zone := c.At.Location()
	var first time.Time
	n := 1
	switch c.View {
	case viewWeek:
		first = time.Date(y, m, d-mondayOffset(c.At), 0, 0, 0, 0, zone)
		n = 7
	case viewMonth:
		start := time.Date(y, m, 1, 0, 0, 0, 0, zone)
		end := time.Date(y, m+1, 0, 0, 0, 0, 0, zone) // the month's last day
		first = time.Date(y, m, 1-mondayOffset(start), 0, 0, 0, 0, zone)
		n = int(end.Sub(first).Hours()/24+0.5) + 1
		n += (7 - n%7) % 7
	default:
		first = c.At
	}
	out := make([]time.Time, n)
	for i := range n {
		out[i] = time.Date(first.Year(), first.Month(), first.Day()+i, 0, 0, 0, 0, zone)
	}
	return out
}

// mondayOffset is how many days t is after the Monday of its week.
func mondayOffset(t time.Time) int { return (int(t.Weekday()) + 6) % 7 }

// calendarData is the calendar page.
type calendarData struct {
	*view
	Query    calendarQuery
	Heading  string
	Accounts []post.Account
	// Weeks are the grid's rows of seven days (week and month views).
	Weekdays []string
	Weeks    [][]calDay
	// Day is the day view's list.
	Day *calDay
	// Prev, Next, Today and the views' links keep the account.
	Prev, Next, Today         string
	WeekURL, MonthURL, DayURL string
	PrevLabel, NextLabel      string
	MoreURL                   string // day view: the next page
	LiveURL                   string
	Error                     string
	CanChange                 bool
}

// calDay is one day of the calendar.
type calDay struct {
	Date time.Time
	// Outside: a day of the month view's grid outside its month (shown
	// without its posts).
	Outside bool
	Today   bool
	Items   []calItem
	// More: the day has more posts than shown; DayURL lists them all.
	More   bool
	DayURL string
	// Next is the store's cursor after the items (the day view's next
	// page).
	Next string
}

// calItem is a post on a day: its targets with a slot that day.
type calItem struct {
	ID post.ID
	At time.Time
	// Clock is At's time of day in the viewer's zone; ISO is At in RFC
	// 3339 (UTC).
	Clock, ISO string
	Excerpt    string
	Targets    []calTarget
}

// calTarget is one target of an item (and of the post page): the
// "target-status" badge's data.
type calTarget struct {
	Post    post.ID
	Account post.AccountID
	Slot    time.Time
	Status  post.TargetStatus
	// AccountTime is the slot in the account's own zone when that zone
	// differs from the viewer's ("" otherwise): see accountZone.
	AccountTime string
}

// accountZone is the account's own time zone (nil when it has none):
// each target shows its time in that zone too wherever it differs from
// the viewer's (calTarget.AccountTime, rendered by calendar.html and
// post.html).
func accountZone(a post.Account) *time.Location {
	if a.TimeZone == "" {
		return nil
	}
	return a.Location()
}

// showCalendar is GET /calendar.
func (h *Handler) showCalendar(w http.ResponseWriter, r *http.Request, s *session) {
	v := h.newView(s, "calendar", "Calendar")
	d := calendarData{view: v, Weekdays: []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"},
		CanChange: v.Can("posts")}
	accounts, err := h.cfg.API.Accounts.ListAccounts(r.Context())
	if err != nil {
		h.fail(w, r, fmt.Errorf("calendar: %w", err))
		return
	}
	d.Accounts = accounts
	q, err := parseCalendarQuery(r.URL.Query(), v.Zone, v.Now)
	if err == nil && q.Account != "" && !slices.ContainsFunc(accounts, func(a post.Account) bool { return a.ID == q.Account }) {
		err = fmt.Errorf("account: %q is not an account of this workspace; pick one from the list", q.Account)
	}
	d.Query = q
	if err != nil {
		d.Error = err.Error()
		d.Query = calendarQuery{View: viewWeek, At: q.At}
		h.render(w, r, http.StatusBadRequest, "calendar", d)
		return
	}
	days, err := h.calendarDays(r.Context(), q, accounts)
	if errors.Is(err, publishing.ErrBadCursor) {
		d.Error = "after: not a position in this day's list; start from the day's first posts"
		d.Query = calendarQuery{View: viewWeek, At: q.At}
		h.render(w, r, http.StatusBadRequest, "calendar", d)
		return
	}
	if err != nil {
		h.fail(w, r, fmt.Errorf("calendar: %w", err))
		return
	}
	d.fill(q, days, v.Now)
	h.render(w, r, http.StatusOK, "calendar", d)
}

// fill lays out the days and the navigation.
func (d *calendarData) fill(q calendarQuery, days []calDay, now time.Time) {
	y, m, dd := q.At.Date()
	zone := q.At.Location()
	today := now.In(zone).Format("2006-01-02")
	for i := range days {
		days[i].Today = days[i].Date.Format("2006-01-02") == today
	}
	d.WeekURL, d.MonthURL, d.DayURL = q.url(viewWeek, q.At), q.url(viewMonth, q.At), q.url(viewDay, q.At)
	d.Today = q.url(q.View, now.In(zone))
	d.LiveURL = "/calendar/live?" + strings.TrimPrefix(q.url(q.View, q.At), "/calendar?")
	switch q.View {
	case viewMonth:
		d.Heading = q.At.Format("January 2006")
		d.Prev, d.Next = q.url(viewMonth, time.Date(y, m-1, 1, 0, 0, 0, 0, zone)), q.url(viewMonth, time.Date(y, m+1, 1, 0, 0, 0, 0, zone))
		d.PrevLabel, d.NextLabel = "Previous month", "Next month"
	case viewDay:
		d.Heading = q.At.Format("Monday 2 January 2006")
		d.Prev, d.Next = q.url(viewDay, time.Date(y, m, dd-1, 0, 0, 0, 0, zone)), q.url(viewDay, time.Date(y, m, dd+1, 0, 0, 0, 0, zone))
		d.PrevLabel, d.NextLabel = "Previous day", "Next day"
		d.Day = &days[0]
		if days[0].Next != "" {
			v := url.Values{"view": {viewDay}, "at": {q.At.Format("2006-01-02")}, "after": {days[0].Next}}
			if q.Account != "" {
				v.Set("account", string(q.Account))
			}
			d.MoreURL = "/calendar?" + v.Encode()
		}
		if q.After != "" {
			d.LiveURL += "&after=" + url.QueryEscape(q.After)
		}
		return
	default:
		first := days[0].Date
		last := days[len(days)-1].Date
		d.Heading = "Week of " + first.Format("Mon 2 Jan") + " – " + last.Format("Mon 2 Jan 2006")
		d.Prev, d.Next = q.url(viewWeek, time.Date(y, m, dd-7, 0, 0, 0, 0, zone)), q.url(viewWeek, time.Date(y, m, dd+7, 0, 0, 0, 0, zone))
		d.PrevLabel, d.NextLabel = "Previous week", "Next week"
	}
	for i := 0; i < len(days); i += 7 {
		d.Weeks = append(d.Weeks, days[i:min(i+7, len(days))])
	}
}

// calendarDays reads the view's days: each day's posts (with a target
// that day, on the account if one is asked) through Desk.List with the
// day's window, at most the view's cap a day (the store reads only that
// day's targets, and stops after the cap), dayReaders days at a time.
func (h *Handler) calendarDays(ctx context.Context, q calendarQuery, accounts []post.Account) ([]calDay, error) {
	starts := q.days()
	days := make([]calDay, len(starts))
	limit := weekDayPosts
	switch q.View {
	case viewMonth:
		limit = monthDayPosts
	case viewDay:
		limit = dayListPosts
	}
	zones := map[post.AccountID]*time.Location{}
	for _, a := range accounts {
		if z := accountZone(a); z != nil {
			zones[a.ID] = z
		}
	}
	errs := make([]error, len(starts))
	sem := make(chan struct{}, dayReaders)
	var wg sync.WaitGroup
	for i, start := range starts {
		end := time.Date(start.Year(), start.Month(), start.Day()+1, 0, 0, 0, 0, start.Location())
		days[i] = calDay{Date: start, DayURL: q.url(viewDay, start)}
		if q.View == viewMonth && start.Month() != q.At.Month() {
			days[i].Outside = true
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			f := publishing.PostFilter{Account: q.Account, From: start, To: end, Limit: limit}
			if q.View == viewDay {
				f.After = q.After
			}
			page, err := h.cfg.API.Desk.List(ctx, f)
			if err != nil {
				errs[i] = fmt.Errorf("day %s: %w", start.Format("2006-01-02"), err)
				return
			}
			days[i].Items = dayItems(page.Posts, start, end, q.Account, zones)
			days[i].More = page.Next != "" && q.View != viewDay
			days[i].Next = page.Next
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return days, nil
}

// dayItems are the posts as a day shows them: each with its targets whose
// slot is that day (on the account, if one is asked), earliest first.
func dayItems(posts []post.Post, start, end time.Time, account post.AccountID, zones map[post.AccountID]*time.Location) []calItem {
	items := make([]calItem, 0, len(posts))
	for _, p := range posts {
		it := calItem{ID: p.ID, Excerpt: oneLine(p.Body)}
		for _, t := range p.Targets {
			if t.Slot.Before(start) || !t.Slot.Before(end) || (account != "" && t.Account != account) {
				continue
			}
			ct := calTarget{Post: p.ID, Account: t.Account, Slot: t.Slot, Status: t.Status}
			if z := zones[t.Account]; z != nil {
				ct.AccountTime = otherZoneTime(t.Slot, start.Location(), z)
			}
			it.Targets = append(it.Targets, ct)
			if it.At.IsZero() || t.Slot.Before(it.At) {
				it.At = t.Slot
			}
		}
		if len(it.Targets) == 0 {
			continue // moved since the store listed it
		}
		slices.SortStableFunc(it.Targets, func(a, b calTarget) int { return a.Slot.Compare(b.Slot) })
		it.Clock, it.ISO = it.At.In(start.Location()).Format("15:04"), it.At.UTC().Format(time.RFC3339)
		items = append(items, it)
	}
	slices.SortStableFunc(items, func(a, b calItem) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return strings.Compare(string(a.ID), string(b.ID))
	})
	return items
}

// otherZoneTime is t in zone z, e.g. "09:00 America/New_York", when z's
// clock differs from the viewer's at t; "" when it does not.
func otherZoneTime(t time.Time, viewer, z *time.Location) string {
	_, a := t.In(viewer).Zone()
	_, b := t.In(z).Zone()
	if a == b {
		return ""
	}
	return t.In(z).Format("Mon 15:04") + " " + z.String()
}

// oneLine is the start of a text on one line: whitespace folded, at most
// excerptRunes runes, "…" when cut.
func oneLine(s string) string {
	return excerpt(strings.Join(strings.Fields(s), " "), excerptRunes)
}
