package api

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/snapshot"
)

// The web pages: server-rendered HTML (html/template, no script) for
// people, beside the JSON API for programs (docs/API.md#web-pages).
//
// Rules:
//   - With tokens configured every page needs a session: a login with an
//     API token sets an HttpOnly, SameSite=Strict cookie holding a random
//     session id (never the token). Without tokens the pages are open,
//     as the API's reads are, and nothing can be decided.
//   - Every POST carries the session's CSRF token (the login form a
//     cookie-bound one) and is refused when the browser says it came from
//     another origin (Sec-Fetch-Site, Origin).
//   - Approve and deny need an admin session and are audited like the
//     API's calls.
//   - Every value is escaped by html/template; the Content-Security-Policy
//     allows no script at all.

//go:embed web
var webFS embed.FS

const (
	sessionCookie = "patrold_session"
	loginCookie   = "patrold_login"
	// SessionTTL is how long a web session lasts after login.
	SessionTTL = 12 * time.Hour
	// maxSessions bounds the session table; the oldest is dropped first.
	maxSessions = 1024
	webCSP      = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)

type webSession struct {
	who     identity
	csrf    string
	expires time.Time
	flash   string // shown once on the next page
}

type webUI struct {
	a     *API
	pages map[string]*template.Template
	css   []byte

	mu       sync.Mutex
	sessions map[string]*webSession // by the SHA-256 of the cookie value
}

func newWebUI(a *API) (*webUI, error) {
	w := &webUI{a: a, pages: map[string]*template.Template{}, sessions: map[string]*webSession{}}
	for _, p := range []string{"login", "findings", "finding", "runs", "run", "approvals", "silences"} {
		t, err := template.ParseFS(webFS, "web/layout.html", "web/"+p+".html")
		if err != nil {
			return nil, fmt.Errorf("web page %s: %w", p, err)
		}
		w.pages[p] = t
	}
	css, err := webFS.ReadFile("web/style.css")
	if err != nil {
		return nil, err
	}
	w.css = css
	return w, nil
}

// webRoutes are the pages, mounted beside the API's routes.
func (w *webUI) routes() map[string]http.HandlerFunc {
	return map[string]http.HandlerFunc{
		"GET /{$}": func(rw http.ResponseWriter, r *http.Request) {
			http.Redirect(rw, r, "/ui/findings", http.StatusSeeOther)
		},
		"GET /ui/style.css":                w.style,
		"GET /ui/login":                    w.loginPage,
		"POST /ui/login":                   w.login,
		"POST /ui/logout":                  w.logout,
		"GET /ui/findings":                 w.page(w.findingsPage),
		"GET /ui/findings/{id}":            w.page(w.findingPage),
		"GET /ui/runs":                     w.page(w.runsPage),
		"GET /ui/approvals":                w.page(w.approvalsPage),
		"POST /ui/approvals/{id}/{action}": w.form(route{name: "web_approval_decide", target: "approval"}, w.decide),
		"POST /ui/findings/{id}/{action}":  w.form(route{name: "web_finding_action", target: "finding"}, w.act),
		"GET /ui/silences":                 w.page(w.silencesPage),
		"POST /ui/silences":                w.form(route{name: "web_silence_add", target: "silence"}, w.addSilence),
		"POST /ui/silences/{id}/{action}":  w.form(route{name: "web_silence_expire", target: "silence"}, w.expireSilence),
		"GET /ui/runs/{id}":                w.page(w.runPage),
		"GET /ui/approvals/{id}/{action}":  w.notAllowed,
		"GET /ui/findings/{id}/{rest...}":  w.notFound,
		"GET /ui/{rest...}":                w.notFound,
	}
}

// pageData is what every page template gets.
type pageData struct {
	Title, Who, CSRF, Flash string
	Admin                   bool
	Body                    map[string]any
}

func secure(rw http.ResponseWriter) {
	h := rw.Header()
	h.Set("Content-Security-Policy", webCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

func (w *webUI) render(rw http.ResponseWriter, status int, page string, d pageData) {
	secure(rw)
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	data := map[string]any{"Title": d.Title, "Who": d.Who, "CSRF": d.CSRF, "Flash": d.Flash, "Admin": d.Admin}
	for k, v := range d.Body {
		data[k] = v
	}
	var buf strings.Builder
	if err := w.pages[page].ExecuteTemplate(&buf, page+".html", data); err != nil {
		w.a.log.Error("web page failed", "page", page, "err", err)
		http.Error(rw, "internal error", http.StatusInternalServerError)
		return
	}
	rw.WriteHeader(status)
	_, _ = rw.Write([]byte(buf.String()))
}

func (w *webUI) style(rw http.ResponseWriter, _ *http.Request) {
	secure(rw)
	rw.Header().Set("Content-Type", "text/css; charset=utf-8")
	rw.Header().Set("Cache-Control", "max-age=3600")
	_, _ = rw.Write(w.css)
}

func (w *webUI) notFound(rw http.ResponseWriter, _ *http.Request) {
	secure(rw)
	http.Error(rw, "no such page", http.StatusNotFound)
}

func (w *webUI) notAllowed(rw http.ResponseWriter, _ *http.Request) {
	secure(rw)
	rw.Header().Set("Allow", http.MethodPost)
	http.Error(rw, "use the page's form", http.StatusMethodNotAllowed)
}

func randomToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported systems
	}
	return hex.EncodeToString(b[:])
}

func sessionKey(cookie string) string {
	sum := sha256.Sum256([]byte(cookie))
	return hex.EncodeToString(sum[:])
}

// session returns the request's live session, if any.
func (w *webUI) session(r *http.Request) *webSession {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return nil
	}
	k := sessionKey(c.Value)
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.sessions[k]
	if s == nil {
		return nil
	}
	if !w.a.opts.Now().Before(s.expires) {
		delete(w.sessions, k)
		return nil
	}
	return s
}

func (w *webUI) tokensConfigured() bool { return len(w.a.auth.entries) > 0 }

// viewer is who looks at a page: a session, or anonymous when no token
// is configured. ok is false when a login is needed.
func (w *webUI) viewer(r *http.Request) (s *webSession, ok bool) {
	if s := w.session(r); s != nil {
		return s, true
	}
	return &webSession{}, !w.tokensConfigured()
}

func cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: maxAge, HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteStrictMode}
}

// sameOrigin refuses a POST the browser says another origin sent.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return false
		}
	}
	return true
}

func equalSecret(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

func (w *webUI) refuse(rw http.ResponseWriter, why string) {
	secure(rw)
	http.Error(rw, why, http.StatusForbidden)
}

// safeNext is a local page to go to after login, else the findings list.
func safeNext(next string) string {
	if strings.HasPrefix(next, "/ui/") && !strings.HasPrefix(next, "//") && !strings.Contains(next, "\\") {
		return next
	}
	return "/ui/findings"
}

func (w *webUI) loginPage(rw http.ResponseWriter, r *http.Request) {
	w.renderLogin(rw, r, http.StatusOK, "")
}

func (w *webUI) renderLogin(rw http.ResponseWriter, r *http.Request, status int, flash string) {
	if !w.tokensConfigured() && flash == "" {
		flash = "No API token is configured: the pages are open to read, and approvals can only be decided with an admin token in http.tokens."
	}
	csrf := randomToken()
	http.SetCookie(rw, cookie(r, loginCookie, csrf, 600))
	w.render(rw, status, "login", pageData{Title: "Log in", CSRF: csrf, Flash: flash,
		Body: map[string]any{"Next": safeNext(r.FormValue("next"))}})
}

func (w *webUI) login(rw http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(rw, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		w.refuse(rw, "bad form")
		return
	}
	c, err := r.Cookie(loginCookie)
	if !sameOrigin(r) || err != nil || !equalSecret(c.Value, r.PostFormValue("csrf")) {
		w.refuse(rw, "cross-site or stale login form refused")
		return
	}
	key := clientKey(r)
	//mutate:web-login-throttle-refuses ./api ^TestWrongTokensThrottled
	if d := w.a.throttle.wait(key); d > 0 {
		secs := retrySeconds(d)
		rw.Header().Set("Retry-After", fmt.Sprint(secs))
		w.renderLogin(rw, r, http.StatusTooManyRequests, fmt.Sprintf("Too many failed logins from your address: try again in %ds.", secs))
		return
	}
	who, ok := w.a.auth.lookupSecret(r.PostFormValue("token"))
	if !ok {
		w.a.log.Warn("web login refused", "remote", r.RemoteAddr)
		//mutate:web-login-throttle-counts ./api ^TestWrongTokensThrottled
		w.a.failedAuth(r, key)
		w.renderLogin(rw, r, http.StatusUnauthorized, "That token is not valid.")
		return
	}
	// A trigger token may call the hooks and nothing else: no session.
	//mutate:web-login-scope ./api ^TestWebRefusesTriggerToken
	if who.scope != ScopeRead && who.scope != ScopeAdmin {
		w.a.log.Warn("web login refused", "token_name", who.name, "token_id", who.id, "scope", who.scope, "remote", r.RemoteAddr)
		w.renderLogin(rw, r, http.StatusForbidden, fmt.Sprintf("Token %q has scope %s: it may only call the hooks, not open these pages.", who.name, who.scope))
		return
	}
	value := randomToken()
	s := &webSession{who: who, csrf: randomToken(), expires: w.a.opts.Now().Add(SessionTTL)}
	w.mu.Lock()
	if len(w.sessions) >= maxSessions {
		w.dropOldestLocked()
	}
	w.sessions[sessionKey(value)] = s
	w.mu.Unlock()
	w.a.log.Info("web login", "token_name", who.name, "token_id", who.id, "remote", r.RemoteAddr)
	http.SetCookie(rw, cookie(r, loginCookie, "", -1))
	http.SetCookie(rw, cookie(r, sessionCookie, value, int(SessionTTL/time.Second)))
	http.Redirect(rw, r, safeNext(r.PostFormValue("next")), http.StatusSeeOther)
}

func (w *webUI) dropOldestLocked() {
	var oldest string
	var at time.Time
	for k, s := range w.sessions {
		if oldest == "" || s.expires.Before(at) {
			oldest, at = k, s.expires
		}
	}
	delete(w.sessions, oldest)
}

func (w *webUI) logout(rw http.ResponseWriter, r *http.Request) {
	s := w.session(r)
	if s == nil || !sameOrigin(r) || !equalSecret(s.csrf, r.PostFormValue("csrf")) {
		w.refuse(rw, "cross-site or stale form refused")
		return
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		w.mu.Lock()
		delete(w.sessions, sessionKey(c.Value))
		w.mu.Unlock()
	}
	http.SetCookie(rw, cookie(r, sessionCookie, "", -1))
	http.Redirect(rw, r, "/ui/login", http.StatusSeeOther)
}

// page wraps a read page: a login when needed, the common data.
func (w *webUI) page(fn func(r *http.Request, d *pageData) (string, int, error)) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		s, ok := w.viewer(r)
		if !ok {
			http.Redirect(rw, r, "/ui/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		w.mu.Lock()
		d := pageData{Who: s.who.name, CSRF: s.csrf, Admin: s.who.scope == ScopeAdmin, Flash: s.flash}
		s.flash = ""
		w.mu.Unlock()
		page, status, err := fn(r, &d)
		if err != nil {
			if errors.Is(err, findings.ErrNotFound) {
				secure(rw)
				http.Error(rw, "not found", http.StatusNotFound)
				return
			}
			var ie *findings.InputError
			var ae *Error
			if errors.As(err, &ie) || errors.As(err, &ae) {
				secure(rw)
				http.Error(rw, err.Error(), http.StatusBadRequest)
				return
			}
			w.a.log.Error("web page failed", "path", r.URL.Path, "err", err)
			secure(rw)
			http.Error(rw, "internal error", http.StatusInternalServerError)
			return
		}
		w.render(rw, status, page, d)
	}
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

func (w *webUI) findingsPage(r *http.Request, d *pageData) (string, int, error) {
	lq, err := parseListQuery(r.URL.Query())
	if err != nil {
		return "", 0, err
	}
	list, err := w.listFindings(r, &lq)
	if err != nil {
		return "", 0, err
	}
	now := w.a.opts.Now()
	from := min((lq.page-1)*webPageSize, len(list))
	to := min(from+webPageSize, len(list))
	rows := make([]map[string]any, 0, to-from)
	for i := from; i < to; i++ {
		f := &list[i]
		rows = append(rows, map[string]any{"ID": f.ID, "Severity": string(f.Severity), "State": findings.LoopStateAt(f, now), "Key": f.Key,
			"ResourceID": f.ResourceID, "ResourceName": f.ResourceName, "Title": f.Title, "LastSeen": w.when(f.LastSeenAt), "Badges": badges(f)})
	}
	d.Title = "Findings"
	body := map[string]any{"Findings": rows, "Matched": len(list), "Capped": lq.capExhausted, "State": lq.filter.Status,
		"Severity": string(lq.filter.Severity), "Kind": lq.kind, "Text": lq.text, "Sort": lq.sort, "Sorts": webSorts,
		"States": findings.ListStates, "Severities": []string{"info", "watch", "warning", "critical"}, "Kinds": kinds}
	if lq.page > 1 {
		body["Prev"] = lq.link(lq.page - 1)
	}
	if to < len(list) {
		body["Next"] = lq.link(lq.page + 1)
	}
	d.Body = body
	return "findings", http.StatusOK, nil
}

// kinds are the resource kinds the list's filter offers.
var kinds = []string{string(snapshot.KindNode), string(snapshot.KindVM), string(snapshot.KindContainer), string(snapshot.KindStorage), string(snapshot.KindDisk)}

// maxExplainedShown bounds the inhibited children a finding page lists.
const maxExplainedShown = 100

func (w *webUI) findingPage(r *http.Request, d *pageData) (string, int, error) {
	id := r.PathValue("id")
	f, err := w.a.opts.Store.Get(r.Context(), id)
	if err != nil {
		return "", 0, err
	}
	evs, err := w.a.opts.Store.Events(r.Context(), id)
	if err != nil {
		return "", 0, err
	}
	invs, err := w.a.opts.Store.Investigations(r.Context(), id)
	if err != nil {
		return "", 0, err
	}
	events := make([]map[string]any, 0, len(evs))
	for _, e := range evs {
		events = append(events, map[string]any{"At": w.when(e.At), "Kind": e.Kind, "Detail": e.Detail})
	}
	inv := make([]map[string]any, 0, len(invs))
	for _, v := range invs {
		row := map[string]any{"Attempt": v.Attempt, "Started": w.when(v.StartedAt), "Outcome": v.Outcome, "Summary": v.Summary}
		if v.SessionID != "" {
			t, err := w.transcript(r.Context(), v.SessionID)
			if err != nil {
				return "", 0, err
			}
			row["Transcript"] = t
		}
		inv = append(inv, row)
	}
	children := make([]map[string]any, 0, min(len(f.Explains), maxExplainedShown))
	for _, cid := range f.Explains[:min(len(f.Explains), maxExplainedShown)] {
		c, err := w.a.opts.Store.Get(r.Context(), cid)
		if errors.Is(err, findings.ErrNotFound) {
			continue // resolved since the parent was read
		}
		if err != nil {
			return "", 0, err
		}
		children = append(children, map[string]any{"ID": c.ID, "Severity": string(c.Severity), "Key": c.Key,
			"ResourceID": c.ResourceID, "ResourceName": c.ResourceName, "Title": c.Title, "LastSeen": w.when(c.LastSeenAt)})
	}
	d.Title = f.Title
	d.Body = map[string]any{"Explains": children, "ExplainsMore": max(len(f.Explains)-maxExplainedShown, 0), "InhibitedBy": f.InhibitedBy,
		"Finding": map[string]any{"ID": f.ID, "ResourceID": f.ResourceID, "ResourceName": f.ResourceName, "Key": f.Key,
			"Category": string(f.Category), "Severity": string(f.Severity), "State": findings.LoopStateAt(&f, w.a.opts.Now()), "Source": string(f.Source),
			"Detected": w.when(f.DetectedAt), "LastSeen": w.when(f.LastSeenAt), "TimesRaised": f.TimesRaised, "Description": f.Description,
			"Recommendation": f.Recommendation, "Evidence": f.Evidence, "Badges": badges(&f), "Acked": w.whenPtr(f.AcknowledgedAt),
			"SnoozedUntil": w.whenPtr(f.SnoozedUntil), "Dismissed": f.DismissedReason, "Suppressed": f.Suppressed, "LastRunID": f.LastRunID,
			"Active": f.Active()}, "Events": events, "Investigations": inv,
		"DismissReasons": []string{findings.DismissNotAnIssue, findings.DismissExpectedBehavior, findings.DismissWillFixLater},
		"SilenceForm":    map[string]any{"CSRF": d.CSRF, "Resource": f.ResourceID, "SignalType": f.Key, "Next": FindingPagePath + url.PathEscape(f.ID)}}
	return "finding", http.StatusOK, nil
}

func (w *webUI) runsPage(r *http.Request, d *pageData) (string, int, error) {
	page := findings.Page{Limit: DefaultRunsLimit, Cursor: r.URL.Query().Get("cursor")}
	if err := findings.ValidatePage("runs", page); err != nil {
		return "", 0, err
	}
	runs, next, err := w.a.opts.Store.RunsPage(r.Context(), page)
	if err != nil {
		return "", 0, err
	}
	rows := make([]map[string]any, 0, len(runs))
	for _, run := range runs {
		n := "-"
		if run.Summary != nil {
			n = fmt.Sprint(run.Summary.Findings)
		}
		rows = append(rows, map[string]any{"ID": run.ID, "Trigger": run.Trigger, "Status": run.Status, "Analysis": run.Analysis,
			"Started": w.when(run.StartedAt), "Findings": n})
	}
	d.Title = "Runs"
	d.Body = map[string]any{"Runs": rows, "Next": next}
	return "runs", http.StatusOK, nil
}

func (w *webUI) approvalsPage(r *http.Request, d *pageData) (string, int, error) {
	// The same view the API serves and the CLI prints (docs/API.md#approvals):
	// the declared action, its target and the live condition, not only
	// the model's words.
	list := []assistant.ApprovalView{}
	if w.a.opts.Approvals != nil {
		raw, _, err := w.a.opts.Approvals.List(r.Context(), findings.Page{Limit: findings.DefaultPageLimit})
		if err != nil {
			return "", 0, err
		}
		b, err := json.Marshal(raw)
		if err != nil {
			return "", 0, err
		}
		if err := json.Unmarshal(b, &list); err != nil {
			return "", 0, fmt.Errorf("approvals: %w", err)
		}
	}
	rows := make([]map[string]any, 0, len(list))
	for _, ap := range list {
		rows = append(rows, map[string]any{"ID": ap.ID, "FindingID": ap.FindingID, "Action": ap.Action,
			//mutate:web-approvals-declared ./api ^TestWebApprovalsShowWhatTheAPIShows
			"Declared": ap.Declared,
			"Command":  strings.Join(ap.Declared.Command, " "), "Target": ap.Target, "Condition": ap.Condition,
			"Reason": ap.Reason.String(), "Expires": w.when(ap.ExpiresAt)})
	}
	d.Title = "Pending approvals"
	d.Body = map[string]any{"Approvals": rows}
	return "approvals", http.StatusOK, nil
}

// decide approves or denies from the approvals page's form.
func (w *webUI) decide(sw *statusWriter, r *http.Request, s *webSession) string {
	id, action := r.PathValue("id"), r.PathValue("action")
	if (action != "approve" && action != "deny") || w.a.opts.Approvals == nil {
		w.notFound(sw, r)
		return id
	}
	decide := w.a.opts.Approvals.Approve
	if action == "deny" {
		decide = w.a.opts.Approvals.Deny
	}
	flash := "approval " + id + ": " + map[string]string{"approve": "approved", "deny": "denied"}[action]
	if _, err := decide(r.Context(), id, s.who.name); err != nil {
		switch {
		case errors.Is(err, ErrApprovalNotFound), errors.Is(err, findings.ErrNotFound):
			flash = "approval " + id + ": not found"
		case errors.Is(err, ErrApprovalExpired):
			flash = "approval " + id + ": expired before it was decided"
		case errors.Is(err, ErrApprovalDecided):
			flash = "approval " + id + ": already decided"
		default:
			w.a.log.Error("web approval failed", "id", id, "err", err)
			flash = "approval " + id + ": failed (see the daemon's log)"
		}
	}
	w.flashTo(sw, r, s, flash, "/ui/approvals")
	return id
}

// transcriptView is a stored session transcript as the finding page
// shows it (docs/ASSISTANT.md "Transcript"); Unreadable when the stored
// JSON does not decode.
type transcriptView struct {
	*assistant.Transcript
	SessionID  string
	Unreadable bool
}

// transcript loads one session's transcript; a session that is gone or
// has none yet (still running) shows none.
func (w *webUI) transcript(ctx context.Context, sessionID string) (*transcriptView, error) {
	rec, err := w.a.opts.Store.Session(ctx, sessionID)
	if errors.Is(err, findings.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if rec.Transcript == "" {
		return nil, nil
	}
	var t assistant.Transcript
	if json.Unmarshal([]byte(rec.Transcript), &t) != nil {
		return &transcriptView{Transcript: &assistant.Transcript{}, SessionID: sessionID, Unreadable: true}, nil
	}
	return &transcriptView{Transcript: &t, SessionID: sessionID}, nil
}
