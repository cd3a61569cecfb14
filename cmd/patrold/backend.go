package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/store"
)

// backend is where store commands go: the running daemon's API, or the
// database directly when no daemon answers. Behaviour is the same.
type backend interface {
	List(ctx context.Context, f findings.ListFilter, p findings.Page) ([]findings.Finding, string, error)
	Show(ctx context.Context, id string) (findings.Finding, []findings.Event, error)
	Act(ctx context.Context, id string, req findings.ActionRequest) (findings.Finding, error)
	Runs(ctx context.Context, p findings.Page) ([]findings.RunRecord, string, error)
	Run(ctx context.Context, id string) (json.RawMessage, error)
	Close() error
}

// backend picks the API when the daemon answers on http.listen (with a
// token from the configuration: admin for changes, read or admin for
// reads), else the database. A daemon without an admin token cannot take
// changes over HTTP; the change then goes to the database directly, which
// SQLite serialises with the daemon's writes.
func (a *app) backend(ctx context.Context, mutating bool) (backend, error) {
	c, err := a.liveClient(ctx, mutating, 30*time.Second)
	if err != nil {
		return nil, err
	}
	if c != nil {
		return &apiBackend{c: c}, nil
	}
	root, st, err := a.openExistingStore(ctx)
	if err != nil {
		return nil, err
	}
	return &storeBackend{root: root, st: st}, nil
}

// liveClient returns a client of the daemon answering on http.listen with
// a token good enough for the call, or nil when none answers (or no
// token fits): the caller then uses the database.
func (a *app) liveClient(ctx context.Context, mutating bool, timeout time.Duration) (*api.Client, error) {
	cfg, err := a.loadConfig()
	if err != nil {
		return nil, err
	}
	token, ok := pickToken(cfg, mutating)
	if !ok {
		return nil, nil
	}
	c, err := api.NewClient("http://"+cfg.HTTP.Listen, token, &http.Client{Timeout: timeout})
	if err != nil || c.Ping(ctx) != nil {
		return nil, nil
	}
	return c, nil
}

// pickToken returns a configured token good enough for the call ("" with
// ok when no tokens are configured and the call only reads).
func pickToken(cfg *config.Config, mutating bool) (string, bool) {
	if len(cfg.HTTP.Tokens) == 0 {
		return "", !mutating
	}
	root, err := daemon.NewRoot(cfg, daemon.RootOptions{})
	if err != nil {
		return "", false
	}
	tokens, err := root.Tokens() // builds nothing: no Close
	if err != nil {
		return "", false
	}
	best := ""
	for _, t := range tokens {
		if t.Scope == api.ScopeAdmin || (!mutating && best == "" && t.Scope != api.ScopeTrigger) {
			best = t.Secret
		}
	}
	return best, best != ""
}

type storeBackend struct {
	root *daemon.Root
	st   *store.Store
}

func (b *storeBackend) List(ctx context.Context, f findings.ListFilter, p findings.Page) ([]findings.Finding, string, error) {
	return b.st.ListPage(ctx, f, p)
}

func (b *storeBackend) Show(ctx context.Context, id string) (findings.Finding, []findings.Event, error) {
	f, err := b.st.Get(ctx, id)
	if err != nil {
		return f, nil, err
	}
	ev, err := b.st.Events(ctx, id)
	return f, ev, err
}

func (b *storeBackend) Act(ctx context.Context, id string, req findings.ActionRequest) (findings.Finding, error) {
	return b.st.Act(ctx, id, req, time.Now())
}

func (b *storeBackend) Runs(ctx context.Context, p findings.Page) ([]findings.RunRecord, string, error) {
	return b.st.RunsPage(ctx, p)
}

func (b *storeBackend) Run(ctx context.Context, id string) (json.RawMessage, error) {
	r, err := b.st.Run(ctx, id)
	return r.Report, err
}

func (b *storeBackend) Close() error { return b.root.Close() }

type apiBackend struct{ c *api.Client }

func (b *apiBackend) List(ctx context.Context, f findings.ListFilter, p findings.Page) ([]findings.Finding, string, error) {
	page, err := b.c.FindingsPage(ctx, f, p)
	out := make([]findings.Finding, 0, len(page.Findings))
	for _, v := range page.Findings {
		out = append(out, v.Finding)
	}
	return out, page.NextCursor, apiErr(err)
}

func (b *apiBackend) Show(ctx context.Context, id string) (findings.Finding, []findings.Event, error) {
	d, err := b.c.Finding(ctx, id)
	if err != nil {
		return findings.Finding{}, nil, apiErr(err)
	}
	return d.Finding.Finding, d.Events, nil
}

func (b *apiBackend) Act(ctx context.Context, id string, req findings.ActionRequest) (findings.Finding, error) {
	v, err := b.c.Act(ctx, id, req)
	if err != nil {
		return findings.Finding{}, apiErr(err)
	}
	return v.Finding, nil
}

func (b *apiBackend) Runs(ctx context.Context, p findings.Page) ([]findings.RunRecord, string, error) {
	r, err := b.c.RunsPage(ctx, p)
	return r.Runs, r.NextCursor, apiErr(err)
}

func (b *apiBackend) Run(ctx context.Context, id string) (json.RawMessage, error) {
	r, err := b.c.Run(ctx, id)
	return r, apiErr(err)
}

func (b *apiBackend) Close() error { return nil }

// apiErr maps API error codes onto the same errors the store returns, so
// exit codes do not depend on the backend.
func apiErr(err error) error {
	var ae *api.Error
	if !errors.As(err, &ae) {
		return err
	}
	switch ae.Code {
	case api.CodeFindingNotFound, api.CodeNotFound:
		return fmt.Errorf("%s: %w", ae.Message, findings.ErrNotFound)
	case api.CodeFindingActionNotAllowed:
		return fmt.Errorf("%s: %w", ae.Message, findings.ErrActionNotAllowed)
	case api.CodeInvalidRequest:
		// The message is "field: problem", as the store's InputError
		// renders it; split it back so the CLI prints it once.
		field, _ := ae.Details["field"].(string)
		return &findings.InputError{Field: field, Problem: strings.TrimPrefix(ae.Message, field+": ")}
	}
	return err
}
