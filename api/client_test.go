package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/findings"
)

func TestClientRoundTrip(t *testing.T) {
	fa := &fakeApprovals{}
	e := newEnv(t, testTokens, func(o *api.Options) { o.Approvals = fa })
	ctx := t.Context()
	c, err := api.NewClient(e.srv.URL+"/", adminSecret, e.srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}

	list, err := c.Findings(ctx, findings.ListFilter{Severity: findings.SeverityCritical})
	if err != nil || len(list) != 2 || list[0].State != findings.StateDetected {
		t.Fatalf("Findings: %v %+v", err, list)
	}
	d, err := c.Finding(ctx, e.ids["disk"])
	if err != nil || d.Finding.ID != e.ids["disk"] || len(d.Events) == 0 || d.Events[0].Kind == "" {
		t.Fatalf("Finding: %v %+v", err, d)
	}
	v, err := c.Act(ctx, e.ids["mem"], findings.ActionRequest{Action: findings.ActionSnooze, For: 4 * time.Hour})
	if err != nil || v.State != findings.StateSnoozed || !v.SnoozedUntil.Equal(e.now.Add(4*time.Hour)) {
		t.Fatalf("Act snooze: %v %+v", err, v)
	}
	if _, err := c.Act(ctx, e.ids["mem"], findings.ActionRequest{Action: findings.ActionDismiss, Reason: findings.DismissWillFixLater}); err != nil {
		t.Fatalf("Act dismiss: %v", err)
	}
	if v, err := c.Act(ctx, e.ids["disk"], findings.ActionRequest{Action: findings.ActionResolve, Note: "expanded"}); err != nil || v.ResolveNote != "expanded" {
		t.Fatalf("Act resolve: %v %+v", err, v)
	}
	_, err = c.Act(ctx, "0000000000000000", findings.ActionRequest{Action: findings.ActionAcknowledge})
	var apiErr *api.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 404 || apiErr.Code != api.CodeFindingNotFound || apiErr.Details["finding_id"] != "0000000000000000" {
		t.Fatalf("Act unknown id: %#v", err)
	}
	_, err = c.Act(ctx, e.ids["cpu"], findings.ActionRequest{Action: findings.ActionSnooze, For: time.Minute})
	if !errors.As(err, &apiErr) || apiErr.Code != api.CodeInvalidRequest || apiErr.Details["field"] != "for" {
		t.Fatalf("Act bad snooze: %#v", err)
	}

	runs, err := c.Runs(ctx)
	if err != nil || len(runs) != 1 || runs[0].ID != e.runID {
		t.Fatalf("Runs: %v %+v", err, runs)
	}
	raw, err := c.Run(ctx, e.runID)
	var rep map[string]any
	if err != nil || json.Unmarshal(raw, &rep) != nil || rep["run_id"] != e.runID {
		t.Fatalf("Run: %v %s", err, raw)
	}
	id, err := c.TriggerRun(ctx)
	if err != nil || id != "run-1" {
		t.Fatalf("TriggerRun: %v %q", err, id)
	}
	e.daemon.mu.Lock()
	e.daemon.busy = "run-1"
	e.daemon.mu.Unlock()
	_, err = c.TriggerRun(ctx)
	if !errors.As(err, &apiErr) || apiErr.Code != api.CodePatrolAlreadyRunning || apiErr.CurrentRunID != "run-1" || apiErr.Status != 409 {
		t.Fatalf("TriggerRun busy: %#v", err)
	}

	sil, err := c.AddSilence(ctx, api.SilenceRequest{Matchers: findings.Matchers{Resource: "vm/*"}, Comment: "window", Duration: "3h"})
	if err != nil || sil.ID == "" || sil.Author != "ops" || !sil.EndsAt.Equal(e.now.Add(3*time.Hour)) {
		t.Fatalf("AddSilence: %v %+v", err, sil)
	}
	end := e.now.Add(time.Hour)
	if _, err := c.AddSilence(ctx, api.SilenceRequest{Matchers: findings.Matchers{Kind: "vm"}, Comment: "w", EndsAt: &end}); err != nil {
		t.Fatalf("AddSilence ends_at: %v", err)
	}
	all, err := c.Silences(ctx, false)
	if err != nil || len(all) != 2 {
		t.Fatalf("Silences: %v %+v", err, all)
	}
	if err := c.ExpireSilence(ctx, sil.ID); err != nil {
		t.Fatalf("ExpireSilence: %v", err)
	}
	if active, err := c.Silences(ctx, true); err != nil || len(active) != 1 {
		t.Fatalf("active Silences after expiry: %v %+v", err, active)
	}
	if err := c.ExpireSilence(ctx, sil.ID); !api.IsCode(err, api.CodeNotFound) {
		t.Fatalf("ExpireSilence twice: %v", err)
	}

	if raw, err := c.Approvals(ctx); err != nil || string(raw) != `[{"action":"restart vm/101","id":"a1"}]` {
		t.Fatalf("Approvals: %v %s", err, raw)
	}
	if _, err := c.Approve(ctx, "a1"); err != nil {
		t.Fatalf("Approve: %v", err)
	}
	if _, err := c.Deny(ctx, "old"); !api.IsCode(err, api.CodeApprovalExpired) {
		t.Fatalf("Deny expired: %v", err)
	}
	if raw, err := c.Status(ctx); err != nil || len(raw) == 0 {
		t.Fatalf("Status: %v", err)
	}
	if err := c.Reload(ctx); err != nil {
		t.Fatalf("Reload: %v", err)
	}

	// A read token may read but not act; no token is refused outright.
	rc, _ := api.NewClient(e.srv.URL, readSecret, nil)
	if _, err := rc.Findings(ctx, findings.ListFilter{}); err != nil {
		t.Fatalf("read client Findings: %v", err)
	}
	if _, err := rc.TriggerRun(ctx); !api.IsCode(err, api.CodeForbidden) {
		t.Fatalf("read client TriggerRun: %v", err)
	}
	nc, _ := api.NewClient(e.srv.URL, "", nil)
	if _, err := nc.Runs(ctx); !api.IsCode(err, api.CodeUnauthorized) {
		t.Fatalf("anonymous Runs: %v", err)
	}
	if _, err := c.Finding(ctx, ".."); err == nil {
		t.Fatal("Finding(\"..\") must be refused by the client")
	}
}

func TestClientPingAndErrors(t *testing.T) {
	for _, u := range []string{"", "127.0.0.1:9477", "ftp://h", "http://"} {
		if _, err := api.NewClient(u, "", nil); err == nil {
			t.Errorf("NewClient(%q) accepted", u)
		}
	}
	// Nothing listens: Ping fails, and quickly.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, _ := api.NewClient("http://"+addr, "", nil)
	start := time.Now()
	if err := c.Ping(context.Background()); err == nil {
		t.Fatal("Ping to a closed port succeeded")
	}
	if time.Since(start) > api.DefaultPingTimeout+time.Second {
		t.Fatalf("Ping took %s", time.Since(start))
	}
}

func TestClientForeignErrorBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "upstream down", http.StatusBadGateway)
	}))
	defer srv.Close()
	c, _ := api.NewClient(srv.URL, "", nil)
	_, err := c.Runs(t.Context())
	var apiErr *api.Error
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadGateway || apiErr.Code != "" || !strings.Contains(apiErr.Message, "upstream down") {
		t.Fatalf("foreign error: %#v", err)
	}
}
