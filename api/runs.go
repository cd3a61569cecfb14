package api

import (
	"bytes"
	"errors"
	"net/http"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/patrol"
)

// RunList is the body of GET /api/v1/runs: one page of run records with
// their summaries (never their reports; GET /api/v1/runs/{id} serves a
// report) and the cursor of the next page ("" on the last).
type RunList struct {
	Runs       []findings.RunRecord `json:"runs"`
	NextCursor string               `json:"next_cursor"`
}

// TriggerResponse is the body of a 202 from POST /api/v1/runs.
type TriggerResponse struct {
	RunID string `json:"run_id"`
}

func (a *API) listRuns(w http.ResponseWriter, r *http.Request, _ *call) error {
	q, e := queryOf(r)
	if e != nil {
		return e
	}
	if e := checkQuery(q, "limit", "cursor"); e != nil {
		return e
	}
	page, e := parsePage(q, "runs", DefaultRunsLimit)
	if e != nil {
		return e
	}
	runs, next, err := a.opts.Store.RunsPage(r.Context(), page)
	if err != nil {
		return findingError("", err)
	}
	return streamList(w, "runs", len(runs), func(i int) any { return runs[i] }, field{"next_cursor", next})
}

// getRun serves the stored run report; a run still in progress (its report
// not written yet) is served as its record.
func (a *API) getRun(w http.ResponseWriter, r *http.Request, _ *call) error {
	id := r.PathValue("id")
	if e := checkText("id", id); e != nil {
		return e
	}
	rec, err := a.opts.Store.Run(r.Context(), id)
	if errors.Is(err, findings.ErrNotFound) {
		return newError(CodeNotFound, "no run %q", id).with("run_id", id)
	}
	if err != nil {
		return err
	}
	report := bytes.TrimSpace(rec.Report)
	if len(report) == 0 || bytes.Equal(report, []byte("{}")) {
		rec.Report = nil
		writeJSON(w, http.StatusOK, rec)
		return nil
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(report, '\n'))
	return nil
}

func (a *API) triggerRun(w http.ResponseWriter, r *http.Request, c *call) error {
	body, e := readBody(r, a.opts.MaxBodyBytes)
	if e != nil {
		return e
	}
	req, e := decodeRunRequest(body)
	if e != nil {
		return e
	}
	var id string
	var err error
	if len(req.Resources) > 0 {
		id, err = a.opts.Daemon.TriggerScopedRun(r.Context(), req.Resources, req.Reason)
	} else {
		id, err = a.opts.Daemon.TriggerRun(r.Context())
	}
	var busy *patrol.BusyError
	if errors.As(err, &busy) {
		c.target = busy.CurrentRunID
		e := newError(CodePatrolAlreadyRunning, "a patrol run is in progress").with("current_run_id", busy.CurrentRunID)
		e.CurrentRunID = busy.CurrentRunID
		return e
	}
	if err != nil {
		return err
	}
	c.target = id
	writeJSON(w, http.StatusAccepted, TriggerResponse{RunID: id})
	return nil
}
