package api

import (
	"errors"
	"net/http"

	"github.com/patrold/patrold/findings"
)

// StatusMessage is the body of healthz, readyz and reload answers.
type StatusMessage struct {
	Status string `json:"status"`
}

// ApprovalList is the body of GET /api/v1/approvals.
type ApprovalList struct {
	Approvals  any    `json:"approvals"`
	NextCursor string `json:"next_cursor"`
}

func (a *API) listApprovals(w http.ResponseWriter, r *http.Request, _ *call) error {
	q, e := queryOf(r)
	if e != nil {
		return e
	}
	if e := checkQuery(q, "limit", "cursor"); e != nil {
		return e
	}
	page, e := parsePage(q, "approvals", findings.DefaultPageLimit)
	if e != nil {
		return e
	}
	var list any = []any{}
	next := ""
	if a.opts.Approvals != nil {
		l, n, err := a.opts.Approvals.List(r.Context(), page)
		if err != nil {
			return findingError("", err)
		}
		if l != nil {
			list, next = l, n
		}
	}
	writeJSON(w, http.StatusOK, ApprovalList{Approvals: list, NextCursor: next})
	return nil
}

func (a *API) decideApproval(w http.ResponseWriter, r *http.Request, c *call) error {
	id, action := r.PathValue("id"), r.PathValue("action")
	if action != "approve" && action != "deny" {
		return newError(CodeNotFound, "no approval action %q (approve or deny)", action)
	}
	if e := checkText("id", id); e != nil {
		return e
	}
	body, e := readBody(r, a.opts.MaxBodyBytes)
	if e != nil {
		return e
	}
	if e := decodeEmpty(body); e != nil {
		return e
	}
	if a.opts.Approvals == nil {
		return newError(CodeApprovalNotFound, "no approval %q", id).with("approval_id", id)
	}
	decide := a.opts.Approvals.Approve
	if action == "deny" {
		decide = a.opts.Approvals.Deny
	}
	out, err := decide(r.Context(), id, c.who.name)
	switch {
	case errors.Is(err, ErrApprovalNotFound), errors.Is(err, findings.ErrNotFound):
		return newError(CodeApprovalNotFound, "no approval %q", id).with("approval_id", id)
	case errors.Is(err, ErrApprovalExpired):
		return newError(CodeApprovalExpired, "approval %q expired before it was decided", id).with("approval_id", id)
	case errors.Is(err, ErrApprovalDecided):
		return newError(CodeApprovalDecided, "approval %q was already decided", id).with("approval_id", id)
	case err != nil:
		return err
	}
	if out == nil {
		out = map[string]string{"id": id, "decision": action}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (a *API) status(w http.ResponseWriter, r *http.Request, _ *call) error {
	st, err := a.opts.Daemon.Status(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

func (a *API) capabilities(w http.ResponseWriter, _ *http.Request, _ *call) error {
	if a.opts.Capabilities == nil {
		return newError(CodeNotFound, "no capability manifest is configured")
	}
	writeJSON(w, http.StatusOK, a.opts.Capabilities())
	return nil
}

func (a *API) metricsHandler(w http.ResponseWriter, r *http.Request, _ *call) error {
	if a.prom == nil {
		return newError(CodeNotFound, "metrics are not enabled")
	}
	a.prom.ServeHTTP(w, r)
	return nil
}

// healthz answers 200 for as long as the process serves HTTP.
func (a *API) healthz(w http.ResponseWriter, _ *http.Request, _ *call) error {
	writeJSON(w, http.StatusOK, StatusMessage{Status: "ok"})
	return nil
}

func (a *API) readyz(w http.ResponseWriter, r *http.Request, _ *call) error {
	if err := a.opts.Daemon.Ready(r.Context()); err != nil {
		return newError(CodeNotReady, "not ready: %v", err)
	}
	body := Readiness{}
	if rd, ok := a.opts.Daemon.(ReadyDetailer); ok {
		body = rd.ReadyDetail(r.Context())
	}
	body.Status = "ready"
	writeJSON(w, http.StatusOK, body)
	return nil
}

func (a *API) reload(w http.ResponseWriter, r *http.Request, _ *call) error {
	body, e := readBody(r, a.opts.MaxBodyBytes)
	if e != nil {
		return e
	}
	if e := decodeEmpty(body); e != nil {
		return e
	}
	if err := a.opts.Daemon.Reload(); err != nil {
		return newError(CodeReloadFailed, "reload failed: %v", err)
	}
	writeJSON(w, http.StatusOK, StatusMessage{Status: "reloaded"})
	return nil
}

// WriteNotReady writes the not_ready error body with message: for a guard
// in front of the API that refuses a request the API would take.
func WriteNotReady(w http.ResponseWriter, message string) {
	e := newError(CodeNotReady, "%s", message)
	writeJSON(w, e.Status, e)
}
