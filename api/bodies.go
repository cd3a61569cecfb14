package api

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/patrol"
)

// actionWire is the body of POST /api/v1/findings/{id}/{action}. Pointers
// tell an absent field from an empty one.
type actionWire struct {
	For    *string `json:"for"`
	Reason *string `json:"reason"`
	Note   *string `json:"note"`
}

// actionFields lists the body fields each action accepts.
var actionFields = map[findings.Action][]string{
	findings.ActionSnooze:  {"for"},
	findings.ActionDismiss: {"reason"},
	findings.ActionResolve: {"note"},
}

// knownAction reports whether name is an operator action.
func knownAction(name string) bool {
	for _, a := range findings.Actions {
		if string(a) == name {
			return true
		}
	}
	return false
}

// decodeAction decodes an action body. Range and reason checks belong to
// findings.ApplyAction; this only checks shape, presence and syntax.
func decodeAction(action string, body []byte) (findings.ActionRequest, *Error) {
	if !knownAction(action) {
		return findings.ActionRequest{}, invalid("action", "%q is not one of ack, snooze, dismiss, undismiss, suppress, unsuppress, resolve", action)
	}
	req := findings.ActionRequest{Action: findings.Action(action)}
	var w actionWire
	if !isEmptyBody(body) {
		if e := strictDecode(body, &w, ""); e != nil {
			return req, e
		}
	}
	given := map[string]bool{"for": w.For != nil, "reason": w.Reason != nil, "note": w.Note != nil}
	allowed := map[string]bool{}
	for _, f := range actionFields[req.Action] {
		allowed[f] = true
	}
	for _, f := range []string{"for", "reason", "note"} {
		if given[f] && !allowed[f] {
			return req, invalid(f, "not accepted by %s", action)
		}
	}
	switch req.Action {
	case findings.ActionSnooze:
		if w.For == nil {
			return req, invalid("for", "required (a duration such as \"4h\")")
		}
		d, e := decodeDuration("for", *w.For)
		if e != nil {
			return req, e
		}
		req.For = d
	case findings.ActionDismiss:
		if w.Reason != nil {
			req.Reason = *w.Reason
		}
	case findings.ActionResolve:
		if w.Note != nil {
			req.Note = *w.Note
		}
	}
	return req, nil
}

// SilenceRequest is the body of POST /api/v1/silences: the silence fields,
// with either ends_at or duration (counted from starts_at, default now).
// author defaults to the token name.
type SilenceRequest struct {
	Matchers findings.Matchers `json:"matchers"`
	Comment  string            `json:"comment"`
	Author   string            `json:"author,omitempty"`
	StartsAt *time.Time        `json:"starts_at,omitempty"`
	EndsAt   *time.Time        `json:"ends_at,omitempty"`
	Duration string            `json:"duration,omitempty"`
}

// silenceWire decodes times and matchers by hand so errors name them.
type silenceWire struct {
	Matchers json.RawMessage `json:"matchers"`
	Comment  string          `json:"comment"`
	Author   string          `json:"author"`
	StartsAt *string         `json:"starts_at"`
	EndsAt   *string         `json:"ends_at"`
	Duration *string         `json:"duration"`
}

// decodeSilence decodes and validates a silence body at now; actor is the
// default author.
func decodeSilence(body []byte, now time.Time, actor string) (findings.Silence, *Error) {
	var sil findings.Silence
	if isEmptyBody(body) {
		return sil, invalid("body", "required: a JSON object with matchers, comment and ends_at or duration")
	}
	var w silenceWire
	if e := strictDecode(body, &w, ""); e != nil {
		return sil, e
	}
	if len(w.Matchers) > 0 && string(w.Matchers) != "null" {
		if e := strictDecode(w.Matchers, &sil.Matchers, "matchers."); e != nil {
			return sil, e
		}
	}
	sil.Comment, sil.Author = w.Comment, w.Author
	if strings.TrimSpace(sil.Author) == "" {
		sil.Author = actor
	}
	sil.StartsAt = now
	if w.StartsAt != nil {
		t, e := decodeTime("starts_at", *w.StartsAt)
		if e != nil {
			return sil, e
		}
		sil.StartsAt = t
	}
	switch {
	case w.EndsAt != nil && w.Duration != nil:
		return sil, invalid("duration", "give either ends_at or duration, not both")
	case w.EndsAt != nil:
		t, e := decodeTime("ends_at", *w.EndsAt)
		if e != nil {
			return sil, e
		}
		sil.EndsAt = t
	case w.Duration != nil:
		d, e := decodeDuration("duration", *w.Duration)
		if e != nil {
			return sil, e
		}
		if d <= 0 {
			return sil, invalid("duration", "%s is not positive", d)
		}
		if d > findings.MaxSilence {
			return sil, invalid("duration", "%s is longer than the maximum of %s", d, findings.MaxSilence)
		}
		sil.EndsAt = sil.StartsAt.Add(d)
	default:
		return sil, invalid("ends_at", "required (or give duration)")
	}
	if err := sil.ValidateAt(now); err != nil {
		return sil, validationError(err)
	}
	return sil, nil
}

// RunRequest is the optional body of POST /api/v1/runs: resources make
// the run a scoped run over them (their parents and children too),
// reason says why (docs/API.md#scoped-runs).
type RunRequest struct {
	Resources []string `json:"resources,omitempty"`
	Reason    string   `json:"reason,omitempty"`
}

// decodeRunRequest decodes and checks a run request; an empty body is a
// full run.
func decodeRunRequest(body []byte) (RunRequest, *Error) {
	var req RunRequest
	if isEmptyBody(body) {
		return req, nil
	}
	if e := strictDecode(body, &req, ""); e != nil {
		return req, e
	}
	if req.Resources == nil && req.Reason != "" {
		return req, invalid("resources", "required with reason (a full run takes no body)")
	}
	if req.Resources != nil && len(req.Resources) == 0 {
		return req, invalid("resources", "empty (omit the body for a full run)")
	}
	if err := patrol.CheckScope(req.Resources, req.Reason); err != nil {
		return req, validationError(err)
	}
	return req, nil
}
