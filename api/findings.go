package api

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/patrold/patrold/findings"
)

// maxIDLen bounds ids and filter values taken from paths and queries.
const maxIDLen = 256

// FindingView is a finding with its derived loop state.
type FindingView struct {
	findings.Finding
	State string `json:"state"`
}

// FindingList is the body of GET /api/v1/findings: one page, its size,
// and the cursor of the next page ("" on the last).
type FindingList struct {
	Findings   []FindingView `json:"findings"`
	Count      int           `json:"count"`
	NextCursor string        `json:"next_cursor"`
}

// FindingDetail is the body of GET /api/v1/findings/{id}.
type FindingDetail struct {
	Finding        FindingView                    `json:"finding"`
	Events         []findings.Event               `json:"events"`
	Investigations []findings.InvestigationRecord `json:"investigations"`
}

// queryOf parses r's query strictly: a pair url.ParseQuery refuses (bad
// percent encoding, a ';') is invalid_request naming its parameter, where
// r.URL.Query() would drop it and turn ?cursor=%%% into the first page.
func queryOf(r *http.Request) (url.Values, *Error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err == nil {
		return q, nil
	}
	for pair := range strings.SplitSeq(r.URL.RawQuery, "&") {
		key, value, _ := strings.Cut(pair, "=")
		name, kerr := url.QueryUnescape(key)
		if _, perr := url.ParseQuery(pair); perr == nil {
			continue
		}
		if kerr != nil || strings.Contains(key, ";") {
			return nil, invalid("query", "parameter name %q is not valid (percent encoding, no ';')", key)
		}
		return nil, invalid(name, "%q is not valid (percent encoding, no ';')", value)
	}
	return nil, invalid("query", "%v", err)
}

// checkQuery rejects query parameters outside allowed, naming the first.
func checkQuery(q url.Values, allowed ...string) *Error {
	for k, vs := range q {
		ok := false
		for _, a := range allowed {
			ok = ok || k == a
		}
		if !ok {
			return invalid(k, "unknown query parameter (accepted: %s)", strings.Join(allowed, ", "))
		}
		if len(vs) > 1 {
			return invalid(k, "given %d times", len(vs))
		}
	}
	return nil
}

// checkText validates an id or free-text filter value.
func checkText(field, v string) *Error {
	if len(v) > maxIDLen {
		return invalid(field, "longer than %d bytes", maxIDLen)
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return invalid(field, "contains a control character")
		}
	}
	return nil
}

// parseFindingFilter validates ?state=&severity=&resource=&limit=&cursor=
// with the store's own validation, so the CLI says the same.
func parseFindingFilter(q url.Values) (findings.ListFilter, findings.Page, *Error) {
	var f findings.ListFilter
	if e := checkQuery(q, "state", "severity", "resource", "limit", "cursor"); e != nil {
		return f, findings.Page{}, e
	}
	f.Status, f.Severity, f.ResourceID = q.Get("state"), findings.Severity(q.Get("severity")), q.Get("resource")
	if err := f.Validate(); err != nil {
		return f, findings.Page{}, inputError(err)
	}
	if e := checkText("resource", f.ResourceID); e != nil {
		return f, findings.Page{}, e
	}
	page, e := parsePage(q, "findings", findings.DefaultPageLimit)
	return f, page, e
}

// parsePage reads ?limit=&cursor= for a list of kind.
func parsePage(q url.Values, kind string, def int) (findings.Page, *Error) {
	p := findings.Page{Limit: def, Cursor: q.Get("cursor")}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return p, invalid("limit", "%q is not an integer in 1..%d", s, findings.MaxPageLimit)
		}
		p.Limit = n
		if n == 0 {
			p.Limit = -1 // 0 is not "the default" on the wire
		}
	}
	if err := findings.ValidatePage(kind, p); err != nil {
		return p, inputError(err)
	}
	return p, nil
}

// inputError turns a *findings.InputError into invalid_request naming
// its field.
func inputError(err error) *Error {
	var in *findings.InputError
	if errors.As(err, &in) {
		return invalid(in.Field, "%s", in.Problem)
	}
	return newError(CodeInternal, "internal error")
}

// NewFindingView is f with its state derived at now, as the API and the CLI
// show it.
func NewFindingView(f findings.Finding, now time.Time) FindingView {
	return FindingView{Finding: f, State: findings.LoopStateAt(&f, now)}
}

func (a *API) view(f findings.Finding) FindingView { return NewFindingView(f, a.opts.Now()) }

func (a *API) listFindings(w http.ResponseWriter, r *http.Request, _ *call) error {
	q, e := queryOf(r)
	if e != nil {
		return e
	}
	filter, page, e := parseFindingFilter(q)
	if e != nil {
		return e
	}
	list, next, err := a.opts.Store.ListPage(r.Context(), filter, page)
	if err != nil {
		return findingError("", err)
	}
	now := a.opts.Now()
	return streamList(w, "findings", len(list), func(i int) any { return NewFindingView(list[i], now) },
		field{"count", len(list)}, field{"next_cursor", next})
}

func (a *API) getFinding(w http.ResponseWriter, r *http.Request, _ *call) error {
	id := r.PathValue("id")
	if e := checkText("id", id); e != nil {
		return e
	}
	f, err := a.opts.Store.Get(r.Context(), id)
	if err != nil {
		return findingError(id, err)
	}
	events, err := a.opts.Store.Events(r.Context(), id)
	if err != nil {
		return err
	}
	inv, err := a.opts.Store.Investigations(r.Context(), id)
	if err != nil {
		return err
	}
	out := FindingDetail{Finding: a.view(f), Events: events, Investigations: inv}
	if out.Events == nil {
		out.Events = []findings.Event{}
	}
	if out.Investigations == nil {
		out.Investigations = []findings.InvestigationRecord{}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) actOnFinding(w http.ResponseWriter, r *http.Request, c *call) error {
	body, e := readBody(r, a.opts.MaxBodyBytes)
	if e != nil {
		return e
	}
	f, err := a.act(r, r.PathValue("id"), r.PathValue("action"), body, c.who.name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, a.view(f))
	return nil
}

// act applies an operator action as POST /api/v1/findings/{id}/{action}
// does; the web page's form posts the same body, so both keep one set of
// rules. Its error is an *Error or an unexpected one.
func (a *API) act(r *http.Request, id, action string, body []byte, actor string) (findings.Finding, error) {
	if !knownAction(action) {
		return findings.Finding{}, newError(CodeNotFound, "no finding action %q", action)
	}
	if e := checkText("id", id); e != nil {
		return findings.Finding{}, e
	}
	req, e := decodeAction(action, body)
	if e != nil {
		return findings.Finding{}, e
	}
	req.Actor = actor
	f, err := a.opts.Store.Act(r.Context(), id, req, a.opts.Now())
	if err != nil {
		return f, findingError(id, err)
	}
	return f, nil
}

// findingError maps store errors about a finding to API errors.
func findingError(id string, err error) error {
	var in *findings.InputError
	switch {
	case errors.As(err, &in):
		return invalid(in.Field, "%s", in.Problem)
	case errors.Is(err, findings.ErrNotFound):
		return newError(CodeFindingNotFound, "no finding %q", id).with("finding_id", id)
	case errors.Is(err, findings.ErrActionNotAllowed):
		return newError(CodeFindingActionNotAllowed, "%v", err).with("finding_id", id)
	}
	return err
}
