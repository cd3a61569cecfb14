package api

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/patrol"
)

// RunList is the body of GET /api/v1/runs. Records carry no report; GET
// /api/v1/runs/{id} serves it.
type RunList struct {
	Runs []findings.RunRecord `json:"runs"`
}

// TriggerResponse is the body of a 202 from POST /api/v1/runs.
type TriggerResponse struct {
	RunID string `json:"run_id"`
}

func (a *API) listRuns(w http.ResponseWriter, r *http.Request, _ *call) error {
	q := r.URL.Query()
	if e := checkQuery(q, "limit"); e != nil {
		return e
	}
	limit := DefaultRunsLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxRunsLimit {
			return invalid("limit", "%q is not an integer in 1..%d", s, MaxRunsLimit)
		}
		limit = n
	}
	runs, err := a.opts.Store.Runs(r.Context(), limit)
	if err != nil {
		return err
	}
	out := RunList{Runs: make([]findings.RunRecord, 0, len(runs))}
	for _, rec := range runs {
		rec.Report = nil
		out.Runs = append(out.Runs, rec)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
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
	if e := decodeEmpty(body); e != nil {
		return e
	}
	id, err := a.opts.Daemon.TriggerRun(r.Context())
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
