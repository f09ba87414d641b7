package console

import (
	"net/http"
	"strconv"
	"time"

	"oncepost/shared/platform"
	"oncepost/shared/platform/catalog"
	"oncepost/shared/post"
	"oncepost/shared/publishing"
)

// accountsEventScan bounds the recent events the accounts page reads to
// find each account's last success.
const accountsEventScan = 500

// accountsData is the accounts page.
type accountsData struct {
	*view
	Accounts []accountRow
	// LastSuccessShown: Config.Events is set, so the last success is
	// looked for among the latest EventScan events.
	LastSuccessShown bool
	EventScan        int
}

// accountRow is one account's health and what its platform promises.
type accountRow struct {
	post.Account
	// Title is the platform's name for people; Known is false for a
	// platform this build has no adapter for.
	Title string
	Known bool
	// Guarantee is the platform table's (GET /v1/platforms), with its
	// meaning and the table's note and how it reads posts back.
	Guarantee        platform.Guarantee
	GuaranteeMeaning string
	Note, ReadBack   string
	Pacing           []pacingRow
	// LastSuccess is the newest post.published event of the account
	// among those read (zero: none among them).
	LastSuccess         time.Time
	LastPost            post.ID
	LastRemote          string
	ReconnectNeeded     bool
	BudgetUnknown       bool
	BudgetUnknownReason string
}

// pacingRow is a posting limit and the budget left of it.
type pacingRow struct {
	Count int
	Per   time.Duration
	// Left is how many sends the account may make now (-1: unknown).
	Left int
}

// guaranteeMeaning says what each guarantee means to the person who
// schedules (DESIGN §5).
var guaranteeMeaning = map[platform.Guarantee]string{
	platform.Exact:    "the platform drops a repeated create with oncepost's handle: a post goes out once, with no one asked",
	platform.ReadBack: "an unsure send is settled by reading the account's posts back before anything is sent again",
	platform.Human:    "the platform cannot be read back: an unsure send waits in the inbox for a person",
}

// showAccounts is GET /accounts: each account's health (reconnect
// needed, pacing budget left, last success) and its platform's guarantee.
func (h *Handler) showAccounts(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	d := accountsData{view: h.newView(s, "accounts", "Accounts"), EventScan: accountsEventScan}
	accounts, err := h.cfg.API.Accounts.ListAccounts(ctx)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	last := map[post.AccountID]publishing.Event{}
	if h.cfg.Events != nil {
		d.LastSuccessShown = true
		events, err := h.cfg.Events.RecentEvents(ctx, accountsEventScan)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		for _, e := range events { // newest first
			if _, seen := last[e.Account]; !seen && e.Type == publishing.EventPublished {
				last[e.Account] = e
			}
		}
	}
	for _, a := range accounts {
		row := accountRow{Account: a, Title: a.Platform, ReconnectNeeded: a.Status == post.AccountReconnectNeeded}
		k, known := catalog.Lookup(a.Platform)
		if known {
			row.Known, row.Title, row.Guarantee, row.Note, row.ReadBack = true, k.Title, k.Guarantee, k.Note, k.Capabilities.ReadBack
			row.GuaranteeMeaning = guaranteeMeaning[k.Guarantee]
		}
		rates := k.Capabilities.PostingLimits
		var left []int
		switch {
		case len(rates) == 0:
		case h.cfg.API.Budgets == nil:
			row.BudgetUnknown, row.BudgetUnknownReason = true, "this runtime does not expose the budgets"
		default:
			if left, err = h.cfg.API.Budgets.Budget(ctx, a.ID, rates, d.Now); err != nil {
				h.fail(w, r, err)
				return
			}
		}
		for i, rt := range rates {
			p := pacingRow{Count: rt.Count, Per: rt.Per, Left: -1}
			if i < len(left) {
				p.Left = left[i]
			}
			row.Pacing = append(row.Pacing, p)
		}
		if e, ok := last[a.ID]; ok {
			row.LastSuccess, row.LastPost, row.LastRemote = e.At, e.Post, e.RemoteID
		}
		d.Accounts = append(d.Accounts, row)
	}
	h.render(w, r, http.StatusOK, "accounts", d)
}

// PerText is a pacing window in words: 3 h, 5 min, 24 h for a day.
func (p pacingRow) PerText() string {
	switch {
	case p.Per%time.Hour == 0:
		return strconv.Itoa(int(p.Per/time.Hour)) + " h"
	case p.Per%time.Minute == 0:
		return strconv.Itoa(int(p.Per/time.Minute)) + " min"
	default:
		return p.Per.String()
	}
}
