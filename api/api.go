// Package api serves patrold's HTTP API: the REST surface under /api/v1,
// /metrics, /healthz, /readyz and /-/reload, with bearer-token auth and an
// audit trail of every mutating call. It holds no business rules: it
// decodes and validates input, calls the findings store or the daemon, and
// maps their errors to stable codes. Client is the matching HTTP client the
// CLI uses while the daemon runs.
package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/store/records"
)

// Defaults.
const (
	// DefaultMaxBodyBytes bounds request bodies (1 MiB).
	DefaultMaxBodyBytes int64 = 1 << 20
	// DefaultRunsLimit is how many runs GET /api/v1/runs returns without ?limit.
	DefaultRunsLimit = 50
	// MaxRunsLimit is the largest ?limit accepted.
	MaxRunsLimit = 1000
)

// Store is what the API needs of the store: findings, runs, silences, and
// appending audit events.
type Store interface {
	ListPage(ctx context.Context, filter findings.ListFilter, page findings.Page) ([]findings.Finding, string, error)
	Get(ctx context.Context, id string) (findings.Finding, error)
	Events(ctx context.Context, id string) ([]findings.Event, error)
	Investigations(ctx context.Context, id string) ([]findings.InvestigationRecord, error)
	// Session returns a stored remediation session with its transcript.
	Session(ctx context.Context, id string) (records.SessionRecord, error)
	Act(ctx context.Context, id string, req findings.ActionRequest, now time.Time) (findings.Finding, error)
	RunsPage(ctx context.Context, page findings.Page) ([]findings.RunRecord, string, error)
	Run(ctx context.Context, id string) (findings.RunRecord, error)
	SilencesPage(ctx context.Context, now time.Time, activeOnly bool, page findings.Page) ([]findings.Silence, string, error)
	AddSilence(ctx context.Context, sil findings.Silence, now time.Time) (findings.Silence, error)
	ExpireSilence(ctx context.Context, id string, now time.Time) error
	InsertAudit(ctx context.Context, ev records.AuditEvent) error
}

// Daemon is what the API needs of the running daemon.
type Daemon interface {
	// TriggerRun admits a run and returns its id without waiting for it to
	// finish; the run must not depend on ctx (the request's context). When
	// a run is in progress it returns *patrol.BusyError.
	TriggerRun(ctx context.Context) (runID string, err error)
	// TriggerScopedRun is TriggerRun for a scoped run over resources
	// (checked by patrol.CheckScope), with the reason it was asked for.
	TriggerScopedRun(ctx context.Context, resources []string, reason string) (runID string, err error)
	// Reload re-reads and applies the configuration.
	Reload() error
	// Status is served as JSON at GET /api/v1/status.
	Status(ctx context.Context) (Status, error)
	// Ready returns nil when the daemon can serve (GET /readyz).
	Ready(ctx context.Context) error
}

// Approvals lists and decides pending write approvals. Implementations
// report an unknown id with ErrApprovalNotFound (findings.ErrNotFound is
// accepted too), an expired one with ErrApprovalExpired and one already
// decided with ErrApprovalDecided, wrapped as they like.
type Approvals interface {
	// List returns one page of the pending approvals (a JSON array)
	// and the next page's cursor.
	List(ctx context.Context, page findings.Page) (any, string, error)
	Approve(ctx context.Context, id, actor string) (any, error)
	Deny(ctx context.Context, id, actor string) (any, error)
}

// Errors an Approvals implementation returns (wrapped) so the API can map
// them to stable codes. They are the assistant's, which produces them; the
// names here are the same values, for the API's own clients.
var (
	ErrApprovalNotFound = assistant.ErrApprovalNotFound
	ErrApprovalExpired  = assistant.ErrApprovalExpired
	ErrApprovalDecided  = assistant.ErrApprovalDecided
)

var _ Approvals = (*assistant.Assistant)(nil)

// Options configure an API.
type Options struct {
	Store  Store  // required
	Daemon Daemon // required
	// Approvals may be nil: the list is empty and approve/deny answer 404.
	Approvals Approvals
	// Tokens are the bearer tokens. None: reads are open, mutations refused.
	Tokens []Token
	// Capabilities is served at GET /api/v1/agent/capabilities (nil: 404).
	Capabilities func() Capabilities
	// Gatherer is served at GET /metrics (nil: 404).
	Gatherer prometheus.Gatherer
	// Registerer receives the API metrics (nil: a private registry).
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	Now        func() time.Time
	// MaxBodyBytes bounds request bodies (0: DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// Pprof serves net/http/pprof under /debug/pprof/ to admin tokens.
	Pprof bool
	// Triggers takes the scoped runs POST /api/v1/hooks/alertmanager asks
	// for (nil: the hook answers "ignored").
	Triggers Triggerer
	// AlertLabels map alert labels to resource ids (nil:
	// patrol.DefaultAlertLabels).
	AlertLabels []AlertLabel
}

// API is the HTTP API. It is safe for concurrent use.
type API struct {
	opts Options
	log  *slog.Logger
	auth *authTable
	// throttle counts failed tokens by client address (docs/API.md#throttling).
	throttle *authThrottle
	metrics  *metrics
	audit    *auditor
	prom     http.Handler // nil without a Gatherer
	handler  http.Handler
	web      *webUI
}

// New validates opts and builds the API.
func New(opts Options) (*API, error) {
	var errs []error
	if opts.Store == nil {
		errs = append(errs, errors.New("Store: required"))
	}
	if opts.Daemon == nil {
		errs = append(errs, errors.New("Daemon: required"))
	}
	if opts.MaxBodyBytes < 0 {
		errs = append(errs, fmt.Errorf("MaxBodyBytes: %d is negative", opts.MaxBodyBytes))
	}
	if err := validateTokens(opts.Tokens); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	if opts.AlertLabels == nil {
		opts.AlertLabels = patrol.DefaultAlertLabels()
	}
	if opts.MaxBodyBytes == 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Registerer == nil {
		opts.Registerer = prometheus.NewRegistry()
	}
	a := &API{opts: opts, log: opts.Logger.With("component", "api"), auth: newAuthTable(opts.Tokens), throttle: newAuthThrottle(opts.Now)}
	if opts.Gatherer != nil {
		a.prom = promhttp.HandlerFor(opts.Gatherer, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	}
	routes := a.routes()
	names := make([]string, 0, len(routes))
	for _, r := range routes {
		names = append(names, r.name)
	}
	m, err := newMetrics(opts.Registerer, names)
	if err != nil {
		return nil, fmt.Errorf("api: Registerer: %w", err)
	}
	a.metrics = m
	a.audit = &auditor{store: opts.Store, log: a.log, failures: m.auditFailures}
	if a.web, err = newWebUI(a); err != nil {
		return nil, fmt.Errorf("api: %w", err)
	}
	a.handler = LimitBodies(a.mount(routes), opts.MaxBodyBytes)
	return a, nil
}

// Handler returns the API's root handler. Serve it on loopback or behind a
// proxy: /healthz, /readyz and /metrics answer without a token.
func (a *API) Handler() http.Handler { return a.handler }
