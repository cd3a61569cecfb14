package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/patrold/patrold/findings"
)

// Findings lists the first page of findings (filter.Status "" = active,
// "all", "resolved") at the server's default limit.
func (c *Client) Findings(ctx context.Context, filter findings.ListFilter) ([]FindingView, error) {
	out, err := c.FindingsPage(ctx, filter, findings.Page{})
	return out.Findings, err
}

// FindingsPage lists one page of findings (page.Limit 0: the server
// default) and returns it with the next page's cursor.
func (c *Client) FindingsPage(ctx context.Context, filter findings.ListFilter, page findings.Page) (FindingList, error) {
	q := pageQuery(page)
	if filter.Status != "" {
		q.Set("state", filter.Status)
	}
	if filter.Severity != "" {
		q.Set("severity", string(filter.Severity))
	}
	if filter.ResourceID != "" {
		q.Set("resource", filter.ResourceID)
	}
	var out FindingList
	err := c.do(ctx, http.MethodGet, "/api/v1/findings", q, nil, &out)
	return out, err
}

func pageQuery(page findings.Page) url.Values {
	q := url.Values{}
	if page.Limit != 0 {
		q.Set("limit", strconv.Itoa(page.Limit))
	}
	if page.Cursor != "" {
		q.Set("cursor", page.Cursor)
	}
	return q
}

// Finding returns one finding with its state, events and investigations.
func (c *Client) Finding(ctx context.Context, id string) (*FindingDetail, error) {
	p, err := pathID("id", id)
	if err != nil {
		return nil, err
	}
	var out FindingDetail
	if err := c.do(ctx, http.MethodGet, "/api/v1/findings/"+p, nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Act applies an operator action. req.Actor is ignored: the daemon records
// the token name.
func (c *Client) Act(ctx context.Context, id string, req findings.ActionRequest) (*FindingView, error) {
	p, err := pathID("id", id)
	if err != nil {
		return nil, err
	}
	a, err := pathID("action", string(req.Action))
	if err != nil {
		return nil, err
	}
	var body any
	switch req.Action {
	case findings.ActionSnooze:
		body = map[string]string{"for": req.For.String()}
	case findings.ActionDismiss:
		body = map[string]string{"reason": req.Reason}
	case findings.ActionResolve:
		body = map[string]string{"note": req.Note}
	}
	var out FindingView
	if err := c.do(ctx, http.MethodPost, "/api/v1/findings/"+p+"/"+a, nil, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Runs lists the newest runs (without their reports).
func (c *Client) Runs(ctx context.Context) ([]findings.RunRecord, error) {
	return c.RunsLimit(ctx, 0)
}

// RunsLimit lists at most limit runs (0: the server default).
func (c *Client) RunsLimit(ctx context.Context, limit int) ([]findings.RunRecord, error) {
	out, err := c.RunsPage(ctx, findings.Page{Limit: limit})
	return out.Runs, err
}

// RunsPage lists one page of runs (summaries, no reports) with the next
// page's cursor.
func (c *Client) RunsPage(ctx context.Context, page findings.Page) (RunList, error) {
	var out RunList
	err := c.do(ctx, http.MethodGet, "/api/v1/runs", pageQuery(page), nil, &out)
	return out, err
}

// Run returns a stored run report as the daemon wrote it.
func (c *Client) Run(ctx context.Context, id string) (json.RawMessage, error) {
	p, err := pathID("id", id)
	if err != nil {
		return nil, err
	}
	var out json.RawMessage
	return out, c.do(ctx, http.MethodGet, "/api/v1/runs/"+p, nil, nil, &out)
}

// TriggerRun starts a run and returns its id; a busy daemon answers an
// *Error with CodePatrolAlreadyRunning and CurrentRunID set.
func (c *Client) TriggerRun(ctx context.Context) (string, error) {
	var out TriggerResponse
	if err := c.do(ctx, http.MethodPost, "/api/v1/runs", nil, nil, &out); err != nil {
		return "", err
	}
	return out.RunID, nil
}

// TriggerScopedRun starts a scoped run over resources, for reason, and
// returns its id; busy as TriggerRun.
func (c *Client) TriggerScopedRun(ctx context.Context, resources []string, reason string) (string, error) {
	var out TriggerResponse
	if err := c.do(ctx, http.MethodPost, "/api/v1/runs", nil, RunRequest{Resources: resources, Reason: reason}, &out); err != nil {
		return "", err
	}
	return out.RunID, nil
}

// Silences lists silences, only those in force when activeOnly.
func (c *Client) Silences(ctx context.Context, activeOnly bool) ([]findings.Silence, error) {
	q := url.Values{}
	if activeOnly {
		q.Set("active", "true")
	}
	var out SilenceList
	if err := c.do(ctx, http.MethodGet, "/api/v1/silences", q, nil, &out); err != nil {
		return nil, err
	}
	return out.Silences, nil
}

// AddSilence creates a silence and returns it with its id.
func (c *Client) AddSilence(ctx context.Context, req SilenceRequest) (findings.Silence, error) {
	var out findings.Silence
	return out, c.do(ctx, http.MethodPost, "/api/v1/silences", nil, req, &out)
}

// ExpireSilence ends a silence now.
func (c *Client) ExpireSilence(ctx context.Context, id string) error {
	p, err := pathID("id", id)
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodDelete, "/api/v1/silences/"+p, nil, nil, nil)
}

// Approvals returns the first page of pending approvals as the daemon
// lists them.
func (c *Client) Approvals(ctx context.Context) (json.RawMessage, error) {
	raw, _, err := c.ApprovalsPage(ctx, findings.Page{})
	return raw, err
}

// ApprovalsPage returns one page of pending approvals (a JSON array) and
// the next page's cursor.
func (c *Client) ApprovalsPage(ctx context.Context, page findings.Page) (json.RawMessage, string, error) {
	var out ApprovalList
	var raw json.RawMessage
	out.Approvals = &raw
	if err := c.do(ctx, http.MethodGet, "/api/v1/approvals", pageQuery(page), nil, &out); err != nil {
		return nil, "", err
	}
	return raw, out.NextCursor, nil
}

// Approve approves a pending write.
func (c *Client) Approve(ctx context.Context, id string) (json.RawMessage, error) {
	return c.decide(ctx, id, "approve")
}

// Deny denies a pending write.
func (c *Client) Deny(ctx context.Context, id string) (json.RawMessage, error) {
	return c.decide(ctx, id, "deny")
}

func (c *Client) decide(ctx context.Context, id, action string) (json.RawMessage, error) {
	p, err := pathID("id", id)
	if err != nil {
		return nil, err
	}
	var out json.RawMessage
	return out, c.do(ctx, http.MethodPost, "/api/v1/approvals/"+p+"/"+action, nil, nil, &out)
}

// SilencesPage returns one page of silences, only those in force when
// activeOnly, and the cursor of the next page.
func (c *Client) SilencesPage(ctx context.Context, activeOnly bool, page findings.Page) (SilenceList, error) {
	q := pageQuery(page)
	if activeOnly {
		q.Set("active", "true")
	}
	var out SilenceList
	err := c.do(ctx, http.MethodGet, "/api/v1/silences", q, nil, &out)
	return out, err
}
