package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// call is what a handler knows about its request beyond *http.Request.
type call struct {
	who identity
	// target is the id of the object a mutation acted on or created; the
	// {id} path value when the route has one, else set by the handler.
	target string
}

type handlerFunc func(w http.ResponseWriter, r *http.Request, c *call) error

// route is one entry of the route table. name is the metrics label.
type route struct {
	name    string
	pattern string
	scope   Scope
	target  string // kind of object audited: finding, run, silence, approval, config
	h       handlerFunc
}

// routes is the route table of docs/API.md#routes. Every POST and DELETE
// needs the admin scope and is audited.
func (a *API) routes() []route {
	rs := []route{
		{"findings_list", "GET /api/v1/findings", ScopeRead, "", a.listFindings},
		{"finding_get", "GET /api/v1/findings/{id}", ScopeRead, "", a.getFinding},
		{"finding_action", "POST /api/v1/findings/{id}/{action}", ScopeAdmin, "finding", a.actOnFinding},
		{"runs_list", "GET /api/v1/runs", ScopeRead, "", a.listRuns},
		{"run_get", "GET /api/v1/runs/{id}", ScopeRead, "", a.getRun},
		{"run_trigger", "POST /api/v1/runs", ScopeAdmin, "run", a.triggerRun},
		{"hook_alertmanager", "POST /api/v1/hooks/alertmanager", ScopeTrigger, "run", a.alertmanagerHook},
		{"approvals_list", "GET /api/v1/approvals", ScopeRead, "", a.listApprovals},
		{"approval_decide", "POST /api/v1/approvals/{id}/{action}", ScopeAdmin, "approval", a.decideApproval},
		{"silences_list", "GET /api/v1/silences", ScopeRead, "", a.listSilences},
		{"silence_add", "POST /api/v1/silences", ScopeAdmin, "silence", a.addSilence},
		{"silence_expire", "DELETE /api/v1/silences/{id}", ScopeAdmin, "silence", a.expireSilence},
		{"status", "GET /api/v1/status", ScopeRead, "", a.status},
		{"capabilities", "GET /api/v1/agent/capabilities", ScopeRead, "", a.capabilities},
		{"metrics", "GET /metrics", scopeOpen, "", a.metricsHandler},
		{"healthz", "GET /healthz", scopeOpen, "", a.healthz},
		{"readyz", "GET /readyz", scopeOpen, "", a.readyz},
		{"reload", "POST /-/reload", ScopeAdmin, "config", a.reload},
	}
	if a.opts.Pprof {
		rs = append(rs, route{"pprof", "GET /debug/pprof/{name...}", ScopeAdmin, "pprof", a.pprof})
	}
	return rs
}

// mount registers the routes on a private mux and answers unmatched
// requests with JSON not_found / method_not_allowed bodies.
func (a *API) mount(routes []route) http.Handler {
	mux := http.NewServeMux()
	for _, rt := range routes {
		mux.Handle(rt.pattern, a.wrap(rt))
	}
	for pattern, h := range a.web.routes() {
		mux.Handle(pattern, h)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h, pattern := mux.Handler(r); pattern == "" {
			a.unmatched(w, r, h)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// wrap applies metrics, auth, error mapping and audit (the body limit
// is Handler's, outside auth).
func (a *API) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		defer func() { a.metrics.observe(rt.name, sw.code(), time.Since(start)) }()
		who, denied := a.authenticate(r, rt.scope)
		if denied != nil {
			a.writeError(sw, denied)
			switch {
			case who.name != "":
				a.audit.record(r.Context(), a.auditEvent(r, rt, who, "", sw))
			case denied.Code != CodeAuthThrottled:
				// Unknown caller: logged, not written to the audit table,
				// so anonymous requests cannot grow the database. A
				// throttled one is logged once, when it is throttled.
				a.log.Warn("api request refused", "method", r.Method, "path", r.URL.Path, "status", denied.Status, "remote", r.RemoteAddr)
			}
			return
		}
		c := &call{who: who, target: r.PathValue("id")}
		if err := rt.h(sw, r, c); err != nil {
			a.writeError(sw, a.asError(rt, err))
		}
		if rt.scope == ScopeAdmin {
			a.audit.record(r.Context(), a.auditEvent(r, rt, who, c.target, sw))
		}
	})
}

// authenticate is authorize behind the throttle: an address that used up
// its failures is answered 429 whatever token it presents, and a token
// that matches nothing counts as one failure.
func (a *API) authenticate(r *http.Request, need Scope) (identity, *Error) {
	if need == scopeOpen || len(a.auth.entries) == 0 || r.Header.Get("Authorization") == "" {
		return a.auth.authorize(r, need)
	}
	key := clientKey(r)
	//mutate:api-throttle-refuses ./api ^TestWrongTokensThrottled
	if d := a.throttle.wait(key); d > 0 {
		return identity{}, throttledError(d)
	}
	who, denied := a.auth.authorize(r, need)
	//mutate:api-throttle-counts ./api ^TestWrongTokensThrottled
	if denied != nil && denied.Code == CodeUnauthorized {
		a.failedAuth(r, key)
	}
	return who, denied
}

// failedAuth counts one failure of key, logging when it is used up.
func (a *API) failedAuth(r *http.Request, key string) {
	if a.throttle.fail(key) {
		a.log.Warn("api client throttled", "client", key, "remote", r.RemoteAddr, "path", r.URL.Path,
			"retry_after_seconds", retrySeconds(a.throttle.wait(key)))
	}
}

func throttledError(d time.Duration) *Error {
	secs := retrySeconds(d)
	return newError(CodeAuthThrottled, "too many failed tokens from this address: try again in %ds", secs).with("retry_after_seconds", secs)
}

// unavailable is an error of a dependency that cannot serve now (the
// store's file was replaced under the daemon): 503 not_ready, not 500.
type unavailable interface{ Unavailable() bool }

// asError maps an unexpected handler error to an API error.
func (a *API) asError(rt route, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if tooLarge := bodyTooLarge(err, a.opts.MaxBodyBytes); tooLarge != nil {
		return tooLarge
	}
	var u unavailable
	if errors.As(err, &u) && u.Unavailable() {
		return newError(CodeNotReady, "not ready: %v", err)
	}
	a.log.Error("api handler failed", "route", rt.name, "err", err)
	return newError(CodeInternal, "internal error")
}

// unmatched answers a request no route matched, keeping the mux's Allow
// header for 405.
func (a *API) unmatched(w http.ResponseWriter, r *http.Request, fallback http.Handler) {
	start := time.Now()
	probe := &statusWriter{ResponseWriter: discardWriter{h: w.Header()}}
	fallback.ServeHTTP(probe, r)
	sw := &statusWriter{ResponseWriter: w}
	if probe.code() == http.StatusMethodNotAllowed {
		a.writeError(sw, newError(CodeMethodNotAllowed, "%s is not allowed on %s", r.Method, r.URL.Path).with("allow", w.Header().Get("Allow")))
	} else {
		a.writeError(sw, newError(CodeNotFound, "no route for %s", r.URL.Path))
	}
	a.metrics.observe(routeUnmatched, sw.code(), time.Since(start))
}

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError writes e as the error body.
func (a *API) writeError(w http.ResponseWriter, e *Error) {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	if e.Code == CodeUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="patrold"`)
	}
	if e.Code == CodeAuthThrottled {
		w.Header().Set("Retry-After", fmt.Sprint(e.Details["retry_after_seconds"]))
	}
	if sw, ok := w.(*statusWriter); ok {
		sw.errCode = e.Code
	}
	writeJSON(w, e.Status, e)
}

// statusWriter records the status and error code written.
type statusWriter struct {
	http.ResponseWriter
	status  int
	errCode Code
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) code() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// discardWriter shares headers with the real writer and drops the body.
type discardWriter struct{ h http.Header }

func (d discardWriter) Header() http.Header         { return d.h }
func (d discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d discardWriter) WriteHeader(int)             {}
