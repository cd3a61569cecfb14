package patrol

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of the trigger limits (docs/API.md#triggers).
const (
	// DefaultTriggerPerResource is how long after a trigger for a
	// resource another for it is refused.
	DefaultTriggerPerResource = 2 * time.Minute
	// DefaultTriggerGlobal is how long after a triggered run any trigger
	// is refused.
	DefaultTriggerGlobal = 30 * time.Second
)

// TriggerOutcome is what became of a trigger request.
type TriggerOutcome string

// Trigger outcomes (the outcome label of patrold_patrol_triggers_total).
const (
	// TriggerTaken: a scoped run was started for it.
	TriggerTaken TriggerOutcome = "taken"
	// TriggerCoalesced: a run was in progress; its resources join the
	// scoped run started when that run ends.
	TriggerCoalesced TriggerOutcome = "coalesced"
	// TriggerRefused: a rate limit refused it (or it named nothing new).
	TriggerRefused TriggerOutcome = "refused"
)

// TriggerOutcomes lists the outcomes.
var TriggerOutcomes = []TriggerOutcome{TriggerTaken, TriggerCoalesced, TriggerRefused}

// TriggerOptions configure Triggers.
type TriggerOptions struct {
	// PerResource and Global are the rate limits; 0 is the default, a
	// negative value none.
	PerResource, Global time.Duration
	// Now is the clock (tests pass a fake one).
	Now func() time.Time
	// Start starts a scoped run; it returns an ErrBusy error while a run
	// is in progress.
	Start func(ro RunOptions) (runID string, err error)
	// Registerer takes patrold_patrol_triggers_total (nil: none).
	Registerer prometheus.Registerer
}

// Triggers admits the runs that alerts and other monitors ask for. Each
// is a scoped run over the resources named, under a per-resource and a
// global rate limit. Requests that arrive while a run is in progress are
// coalesced into one scoped run started when it ends (RunEnded).
type Triggers struct {
	opts    TriggerOptions
	counted *prometheus.CounterVec

	mu      sync.Mutex
	last    map[string]time.Time // resource -> when a trigger for it was accepted
	lastRun time.Time            // when the last triggered run started
	pending []string             // coalesced resources, in arrival order
	reasons []string             // their reasons
}

// NewTriggers returns Triggers; Start is required.
func NewTriggers(o TriggerOptions) (*Triggers, error) {
	if o.Start == nil {
		return nil, errors.New("trigger options: Start is required")
	}
	if o.PerResource == 0 {
		o.PerResource = DefaultTriggerPerResource
	}
	if o.Global == 0 {
		o.Global = DefaultTriggerGlobal
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	t := &Triggers{opts: o, last: map[string]time.Time{},
		counted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "patrold_patrol_triggers_total",
			Help: "Trigger requests (alerts, hooks) by outcome: taken (a scoped run started), coalesced (joined the run after the one in progress), refused (rate limited)."},
			[]string{"outcome"})}
	for _, oc := range TriggerOutcomes {
		t.counted.WithLabelValues(string(oc))
	}
	if o.Registerer != nil {
		if err := o.Registerer.Register(t.counted); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Request asks for a scoped run over resources (already checked by
// CheckScope) for reason. Resources triggered within PerResource are
// dropped from it; nothing left, or a triggered run within Global, is
// refused. runID is the started run's, "" otherwise.
func (t *Triggers) Request(resources []string, reason string) (TriggerOutcome, string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.opts.Now()
	var fresh []string
	for _, id := range canonicalIDs(resources) {
		if at, ok := t.last[id]; (!ok || now.Sub(at) >= t.opts.PerResource) && !slices.Contains(fresh, id) {
			fresh = append(fresh, id)
		}
	}
	if len(fresh) == 0 || (!t.lastRun.IsZero() && now.Sub(t.lastRun) < t.opts.Global) {
		return t.count(TriggerRefused), "", nil
	}
	id, err := t.opts.Start(RunOptions{Scope: fresh, Reason: reason})
	switch {
	case errors.Is(err, ErrBusy):
		for _, r := range fresh {
			t.last[r] = now
			if !slices.Contains(t.pending, r) && len(t.pending) < MaxScopeResources {
				t.pending = append(t.pending, r)
			}
		}
		t.reasons = append(t.reasons, reason)
		return t.count(TriggerCoalesced), "", nil
	case err != nil:
		return "", "", err
	}
	for _, r := range fresh {
		t.last[r] = now
	}
	t.lastRun = now
	return t.count(TriggerTaken), id, nil
}

// RunEnded starts the scoped run of the coalesced requests, if any (the
// daemon calls it when any run ends). A run that cannot start now keeps
// them pending for the next end.
func (t *Triggers) RunEnded() (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.pending) == 0 {
		return "", nil
	}
	id, err := t.opts.Start(RunOptions{Scope: t.pending, Reason: coalescedReason(t.reasons)})
	if err != nil {
		if errors.Is(err, ErrBusy) {
			return "", nil
		}
		return "", err
	}
	t.pending, t.reasons, t.lastRun = nil, nil, t.opts.Now()
	return id, nil
}

func (t *Triggers) count(o TriggerOutcome) TriggerOutcome {
	t.counted.WithLabelValues(string(o)).Inc()
	return o
}

// coalescedReason joins the distinct reasons of coalesced requests,
// within MaxScopeReasonBytes.
func coalescedReason(reasons []string) string {
	var out []string
	for _, r := range reasons {
		if r != "" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	s := strings.Join(out, "; ")
	if len(s) > MaxScopeReasonBytes {
		s = strings.ToValidUTF8(s[:MaxScopeReasonBytes-3], "") + "..."
	}
	return s
}
