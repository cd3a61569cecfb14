package api

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/snapshot"
)

// HookResult is the answer to a trigger hook: what became of the request
// (patrol.TriggerOutcome, or "ignored" when no alert named a resource),
// the run started, and the resources asked for.
type HookResult struct {
	Outcome   string   `json:"outcome"`
	RunID     string   `json:"run_id,omitempty"`
	Resources []string `json:"resources"`
}

// HookIgnored is the outcome of a hook whose alerts name no resource.
const HookIgnored = "ignored"

// Triggerer is what the hooks need of the daemon: a scoped run asked for
// by an outside monitor, under the trigger limits.
type Triggerer interface {
	TriggerFromHook(ctx context.Context, resources []string, reason string) (HookResult, error)
}

// AlertLabel maps one alert label to a resource id
// (patrol.triggers.alert_labels).
type AlertLabel = patrol.AlertLabel

// amWebhook is the part of Alertmanager's webhook payload (version 4)
// the hook reads.
type amWebhook struct {
	Version string    `json:"version"`
	Status  string    `json:"status"`
	Alerts  []amAlert `json:"alerts"`
}

type amAlert struct {
	Status string            `json:"status"`
	Labels map[string]string `json:"labels"`
}

// decodeAlertmanagerHook returns the resources the firing alerts of an
// Alertmanager webhook payload name (each alert's first mapped label;
// patrold's own alerts, carrying finding_id, are skipped so a route back
// to patrold cannot loop), and a reason naming the alerts.
func decodeAlertmanagerHook(body []byte, labels []AlertLabel) ([]string, string, *Error) {
	var p amWebhook
	if err := json.Unmarshal(body, &p); err != nil {
		return nil, "", invalid("body", "not an Alertmanager webhook payload: %v", err)
	}
	if p.Version != "4" {
		return nil, "", invalid("version", "%q, want \"4\" (Alertmanager's webhook payload)", p.Version)
	}
	var ids, names []string
	for _, a := range p.Alerts {
		if a.Status != "firing" || a.Labels["finding_id"] != "" {
			continue
		}
		id := alertResource(a.Labels, labels)
		if id == "" || snapshot.IDProblem(id) != "" || slices.Contains(ids, id) || len(ids) == patrol.MaxScopeResources {
			continue
		}
		ids = append(ids, id)
		if n := a.Labels["alertname"]; n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	reason := "alertmanager: " + strings.Join(names, ", ")
	if len(reason) > patrol.MaxScopeReasonBytes {
		reason = strings.ToValidUTF8(reason[:patrol.MaxScopeReasonBytes-3], "") + "..."
	}
	if err := patrol.CheckScope(ids, reason); err != nil {
		reason = "alertmanager" // an alert name patrold will not record
	}
	return ids, reason, nil
}

// alertResource is the resource id the first mapped label of an alert
// gives, canonical, or "".
func alertResource(ls map[string]string, labels []AlertLabel) string {
	for _, m := range labels {
		v := strings.TrimSpace(ls[m.Label])
		if v == "" {
			continue
		}
		host := v
		if h, _, err := net.SplitHostPort(v); err == nil {
			host = h
		}
		return snapshot.CanonicalID(strings.NewReplacer("{value}", v, "{host}", host).Replace(m.ID))
	}
	return ""
}

func (a *API) alertmanagerHook(w http.ResponseWriter, r *http.Request, c *call) error {
	body, e := readBody(r, a.opts.MaxBodyBytes)
	if e != nil {
		return e
	}
	ids, reason, e := decodeAlertmanagerHook(body, a.opts.AlertLabels)
	if e != nil {
		return e
	}
	if len(ids) == 0 || a.opts.Triggers == nil {
		writeJSON(w, http.StatusOK, HookResult{Outcome: HookIgnored, Resources: []string{}})
		return nil
	}
	res, err := a.opts.Triggers.TriggerFromHook(r.Context(), ids, reason)
	if err != nil {
		return err
	}
	c.target = res.RunID
	// 200 whatever the outcome: a refused or coalesced trigger is not an
	// error Alertmanager should retry.
	writeJSON(w, http.StatusOK, res)
	return nil
}
