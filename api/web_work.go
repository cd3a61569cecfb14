package api

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/patrold/patrold/findings"
)

// The pages to work in (docs/API.md#web-pages): operator actions and
// silences through forms, run pages, filters and sort on the findings
// list. A form posts the body the API's route takes, and the API's own
// code decodes and applies it, so both keep one set of rules.

// form wraps a page's POST. It needs a live session, a same-origin browser
// and the session's CSRF token, then an admin session. It is audited like
// the API's calls, with the session's token name. fn answers and returns
// the audited target id.
func (w *webUI) form(rt route, fn func(sw *statusWriter, r *http.Request, s *webSession) string) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		s := w.session(r)
		r.Body = http.MaxBytesReader(rw, r.Body, 64<<10)
		//mutate:web-form-needs-csrf ./api ^TestWebFormsAct
		if s == nil || !sameOrigin(r) || r.ParseForm() != nil || !equalSecret(s.csrf, r.PostFormValue("csrf")) {
			w.a.log.Warn("web form refused", "path", r.URL.Path, "remote", r.RemoteAddr)
			w.refuse(rw, "cross-site or stale form refused")
			return
		}
		sw := &statusWriter{ResponseWriter: rw}
		target := r.PathValue("id")
		defer func() { w.a.audit.record(r.Context(), w.a.auditEvent(r, rt, s.who, target, sw)) }()
		//mutate:web-form-needs-admin ./api ^TestWebFormsAct
		if s.who.scope != ScopeAdmin {
			w.refuse(sw, "this form needs an admin token")
			return
		}
		target = fn(sw, r, s)
	}
}

// flashTo shows flash once on the page at next.
func (w *webUI) flashTo(sw *statusWriter, r *http.Request, s *webSession, flash, next string) {
	w.mu.Lock()
	s.flash = flash
	w.mu.Unlock()
	http.Redirect(sw, r, next, http.StatusSeeOther)
}

// failure is the flash of a refused form: the API's message for an API
// error (its code goes to the audit row), else a pointer to the log.
func (w *webUI) failure(sw *statusWriter, what string, err error) string {
	var e *Error
	if errors.As(err, &e) {
		sw.errCode = e.Code
		return what + ": " + e.Message
	}
	w.a.log.Error("web form failed", "what", what, "err", err)
	sw.errCode = CodeInternal
	return what + ": failed (see the daemon's log)"
}

// formBody is the JSON object of the form's fields among names (those
// the form carries), as the API's route takes it.
func formBody(form url.Values, names ...string) []byte {
	obj := map[string]string{}
	for _, n := range names {
		if _, ok := form[n]; ok {
			obj[n] = form.Get(n)
		}
	}
	if len(obj) == 0 {
		return nil
	}
	b, _ := json.Marshal(obj)
	return b
}

var actionDone = map[findings.Action]string{
	findings.ActionAcknowledge: "acknowledged", findings.ActionSnooze: "snoozed", findings.ActionDismiss: "dismissed",
	findings.ActionUndismiss: "undismissed", findings.ActionSuppress: "suppressed", findings.ActionUnsuppress: "unsuppressed",
	findings.ActionResolve: "resolved",
}

// act applies an operator action from the finding page.
func (w *webUI) act(sw *statusWriter, r *http.Request, s *webSession) string {
	id, action := r.PathValue("id"), r.PathValue("action")
	what := "finding " + id
	flash := what + ": " + actionDone[findings.Action(action)]
	if _, err := w.a.act(r, id, action, formBody(r.PostForm, "for", "reason", "note"), s.who.name); err != nil {
		flash = w.failure(sw, what, err)
	}
	w.flashTo(sw, r, s, flash, "/ui/findings/"+url.PathEscape(id))
	return id
}

// addSilence creates a silence from the form (the finding page's, or the
// silences page's).
func (w *webUI) addSilence(sw *statusWriter, r *http.Request, s *webSession) string {
	f := r.PostForm
	m := map[string]any{}
	for _, k := range []string{"resource", "kind", "category", "signal_type"} {
		if v := strings.TrimSpace(f.Get(k)); v != "" {
			m[k] = v
		}
	}
	if v := strings.TrimSpace(f.Get("tags")); v != "" {
		var tags []string
		for t := range strings.SplitSeq(v, ",") {
			tags = append(tags, strings.TrimSpace(t))
		}
		m["tags"] = tags
	}
	body, _ := json.Marshal(map[string]any{"matchers": m, "comment": f.Get("comment"), "duration": f.Get("duration")})
	sil, err := w.a.createSilence(r, body, s.who.name)
	if err != nil {
		w.flashTo(sw, r, s, w.failure(sw, "silence", err), safeNext(f.Get("next")))
		return ""
	}
	w.flashTo(sw, r, s, "silence "+sil.ID+": in force until "+stamp(sil.EndsAt), "/ui/silences")
	return sil.ID
}

// expireSilence ends a silence from the silences page.
func (w *webUI) expireSilence(sw *statusWriter, r *http.Request, s *webSession) string {
	id := r.PathValue("id")
	if r.PathValue("action") != "expire" {
		w.notFound(sw, r)
		return id
	}
	flash := "silence " + id + ": expired"
	if _, err := w.a.endSilence(r, id); err != nil {
		flash = w.failure(sw, "silence "+id, err)
	}
	w.flashTo(sw, r, s, flash, "/ui/silences")
	return id
}

// when is a time as the pages show it: relative, the absolute time on
// hover (the title attribute) and in the datetime attribute.
type when struct{ Rel, Abs, ISO string }

func (w *webUI) when(t time.Time) when {
	return when{Rel: relative(w.a.opts.Now(), t), Abs: stamp(t), ISO: t.UTC().Format(time.RFC3339)}
}

func (w *webUI) whenPtr(t *time.Time) *when {
	if t == nil {
		return nil
	}
	v := w.when(*t)
	return &v
}

// relative says how long ago (or ahead) t is, in the largest whole unit.
func relative(now, t time.Time) string {
	d := now.Sub(t)
	suffix := " ago"
	if d < 0 {
		d, suffix = -d, ""
	}
	var n int
	var unit string
	switch {
	case d < time.Minute:
		return map[bool]string{true: "just now", false: "in under a minute"}[suffix != ""]
	case d < time.Hour:
		n, unit = int(d/time.Minute), "min"
	case d < 48*time.Hour:
		n, unit = int(d/time.Hour), "h"
	default:
		n, unit = int(d/(24*time.Hour)), "d"
	}
	if suffix == "" {
		return fmt.Sprintf("in %d %s", n, unit)
	}
	return fmt.Sprintf("%d %s%s", n, unit, suffix)
}

// badges are the states a list row and a finding page mark: held
// (inhibited by a parent), silenced and acknowledged.
func badges(f *findings.Finding) []string {
	var b []string
	if f.InhibitedBy != "" {
		b = append(b, "held")
	}
	if f.Silenced {
		b = append(b, "silenced")
	}
	if f.AcknowledgedAt != nil {
		b = append(b, "acked")
	}
	return b
}

// The findings list's filters and sort.
const (
	// webListCap bounds the findings one filtered list reads; webPageSize
	// is one page of it.
	webListCap  = 5000
	webPageSize = 100
)

// webSorts are the findings list's orders; the first is the default.
var webSorts = []string{"severity", "last_seen", "detected", "resource", "key"}

type listQuery struct {
	filter       findings.ListFilter
	kind, text   string
	sort         string
	page         int
	capExhausted bool
}

func parseListQuery(q url.Values) (listQuery, error) {
	var lq listQuery
	if e := checkQuery(q, "state", "severity", "kind", "q", "sort", "page"); e != nil {
		return lq, e
	}
	lq.filter = findings.ListFilter{Status: q.Get("state"), Severity: findings.Severity(q.Get("severity"))}
	if err := lq.filter.Validate(); err != nil {
		return lq, inputError(err)
	}
	lq.kind, lq.text, lq.sort = q.Get("kind"), strings.TrimSpace(q.Get("q")), q.Get("sort")
	for field, v := range map[string]string{"kind": lq.kind, "q": lq.text} {
		if e := checkText(field, v); e != nil {
			return lq, e
		}
	}
	if lq.sort == "" {
		lq.sort = webSorts[0]
	}
	if !slices.Contains(webSorts, lq.sort) {
		return lq, invalid("sort", "%q is not one of %s", lq.sort, strings.Join(webSorts, ", "))
	}
	lq.page = 1
	if p := q.Get("page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 {
			return lq, invalid("page", "%q is not a positive integer", p)
		}
		lq.page = n
	}
	return lq, nil
}

// link is the list's address with the query's filters and page n.
func (lq listQuery) link(n int) string {
	v := url.Values{}
	for k, s := range map[string]string{"state": lq.filter.Status, "severity": string(lq.filter.Severity), "kind": lq.kind, "q": lq.text} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if lq.sort != webSorts[0] {
		v.Set("sort", lq.sort)
	}
	if n > 1 {
		v.Set("page", strconv.Itoa(n))
	}
	if len(v) == 0 {
		return "/ui/findings"
	}
	return "/ui/findings?" + v.Encode()
}

func kindOf(f *findings.Finding) string {
	if f.ResourceKind != "" {
		return f.ResourceKind
	}
	k, _, _ := strings.Cut(f.ResourceID, "/")
	return k
}

func matchesText(f *findings.Finding, text string) bool {
	if text == "" {
		return true
	}
	t := strings.ToLower(text)
	for _, s := range []string{f.Title, f.Key, f.ResourceID, f.ResourceName} {
		if strings.Contains(strings.ToLower(s), t) {
			return true
		}
	}
	return false
}

// sortFindings orders list by key; ties keep the store's order.
func sortFindings(list []findings.Finding, key string) {
	by := map[string]func(a, b *findings.Finding) int{
		"severity": func(a, b *findings.Finding) int {
			return cmp.Or(cmp.Compare(b.Severity.Rank(), a.Severity.Rank()), b.LastSeenAt.Compare(a.LastSeenAt))
		},
		"last_seen": func(a, b *findings.Finding) int { return b.LastSeenAt.Compare(a.LastSeenAt) },
		"detected":  func(a, b *findings.Finding) int { return b.DetectedAt.Compare(a.DetectedAt) },
		"resource":  func(a, b *findings.Finding) int { return cmp.Compare(a.ResourceID, b.ResourceID) },
		"key":       func(a, b *findings.Finding) int { return cmp.Compare(a.Key, b.Key) },
	}[key]
	slices.SortStableFunc(list, func(a, b findings.Finding) int { return by(&a, &b) })
}

// listFindings reads the store's list under lq's state and severity (up
// to webListCap), then filters by kind and text and sorts.
func (w *webUI) listFindings(r *http.Request, lq *listQuery) ([]findings.Finding, error) {
	var out []findings.Finding
	cursor := ""
	for {
		page, next, err := w.a.opts.Store.ListPage(r.Context(), lq.filter, findings.Page{Limit: findings.MaxPageLimit, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		for i := range page {
			f := &page[i]
			if (lq.kind == "" || kindOf(f) == lq.kind) && matchesText(f, lq.text) {
				out = append(out, *f)
			}
		}
		if next == "" {
			break
		}
		if len(out) >= webListCap {
			lq.capExhausted = true
			break
		}
		cursor = next
	}
	sortFindings(out, lq.sort)
	return out, nil
}

func (w *webUI) silencesPage(r *http.Request, d *pageData) (string, int, error) {
	q := r.URL.Query()
	all := q.Get("all") == "1"
	page := findings.Page{Limit: findings.DefaultPageLimit, Cursor: q.Get("cursor")}
	if err := findings.ValidatePage("silences", page); err != nil {
		return "", 0, err
	}
	now := w.a.opts.Now()
	list, next, err := w.a.opts.Store.SilencesPage(r.Context(), now, !all, page)
	if err != nil {
		return "", 0, err
	}
	rows := make([]map[string]any, 0, len(list))
	for _, s := range list {
		state := "active"
		switch {
		case !now.Before(s.EndsAt):
			state = "expired"
		case now.Before(s.StartsAt):
			state = "pending"
		}
		rows = append(rows, map[string]any{"ID": s.ID, "Matchers": s.Matchers, "Tags": strings.Join(s.Matchers.Tags, ", "), "Comment": s.Comment,
			"Author": s.Author, "Starts": w.when(s.StartsAt), "Ends": w.when(s.EndsAt), "State": state})
	}
	d.Title = "Silences"
	d.Body = map[string]any{"Silences": rows, "Next": next, "All": all, "SilenceForm": map[string]any{"CSRF": d.CSRF, "Next": "/ui/silences"}}
	return "silences", http.StatusOK, nil
}

func (w *webUI) runPage(r *http.Request, d *pageData) (string, int, error) {
	id := r.PathValue("id")
	run, err := w.a.opts.Store.Run(r.Context(), id)
	if err != nil {
		return "", 0, err
	}
	var report string
	if len(run.Report) > 0 {
		var v any
		if json.Unmarshal(run.Report, &v) == nil {
			b, _ := json.MarshalIndent(v, "", "  ")
			report = string(b)
		}
	}
	d.Title = "Run " + run.ID
	d.Body = map[string]any{"Run": map[string]any{"ID": run.ID, "Trigger": run.Trigger, "Status": run.Status, "Analysis": run.Analysis,
		"Started": w.when(run.StartedAt), "Finished": w.whenPtr(run.FinishedAt), "Complete": run.Complete, "Summary": run.Summary,
		"CostUSD": run.CostUSD}, "Report": report}
	return "run", http.StatusOK, nil
}
