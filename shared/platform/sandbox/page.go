package sandbox

import (
	"html/template"
	"net/http"
	"slices"
)

// timelineEntry is one row of the timeline page.
type timelineEntry struct {
	ID        string
	Username  string
	Time      string
	Text      string
	Media     int
	Duplicate bool
	Injected  bool
}

var timelineTemplate = template.Must(template.New("timeline").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>oncepost sandbox</title>
<style>
body { font-family: sans-serif; max-width: 50rem; margin: 2rem auto; padding: 0 1rem; }
ol { list-style: none; padding: 0; }
li { border-bottom: 1px solid #ccc; padding: .75rem 0; }
.meta { color: #555; font-size: .9rem; }
.text { white-space: pre-wrap; margin-top: .25rem; }
.dup { color: #b00; font-weight: bold; }
</style>
</head>
<body>
<h1>oncepost sandbox</h1>
<p class="meta">create requests {{.Stats.CreateRequests}} · committed {{.Stats.Committed}} · idempotent replays {{.Stats.IdempotentReplays}} · duplicates {{.Stats.Duplicates}} · deleted {{.Stats.Deleted}}</p>
{{if .Entries}}<ol>
{{range .Entries}}<li id="status-{{.ID}}">
<div class="meta">@{{.Username}} · <time datetime="{{.Time}}">{{.Time}}</time> · id {{.ID}}{{if .Media}} · {{.Media}} media{{end}}{{if .Injected}} · injected{{end}}{{if .Duplicate}} · <span class="dup">duplicate</span>{{end}}</div>
<div class="text">{{.Text}}</div>
</li>
{{end}}</ol>{{else}}<p>No posts yet.</p>{{end}}
</body>
</html>
`))

// timelinePage is GET /: every account's live statuses, newest first.
func (s *Server) timelinePage(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	var all []*status
	for _, st := range s.statuses {
		if !st.deleted {
			all = append(all, st)
		}
	}
	slices.SortFunc(all, func(a, b *status) int {
		switch {
		case a.num > b.num:
			return -1
		case a.num < b.num:
			return 1
		}
		return 0
	})
	data := struct {
		Stats   Stats
		Entries []timelineEntry
	}{Stats: s.stats}
	for _, st := range all {
		data.Entries = append(data.Entries, timelineEntry{
			ID:        st.ID,
			Username:  st.Username,
			Time:      st.CreatedAt.UTC().Format(timeFormat),
			Text:      st.Text,
			Media:     len(st.MediaIDs),
			Duplicate: st.Duplicate,
			Injected:  st.Injected,
		})
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := timelineTemplate.Execute(w, data); err != nil {
		s.log.Debug("sandbox: writing timeline page failed", "err", err)
	}
}
