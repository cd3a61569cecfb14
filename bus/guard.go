package bus

import (
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/bus/msgauth"
	"github.com/patrold/patrold/contracts"
)

// RefusedLog is the line logged, once per subject, reason and sender,
// when a message does not authenticate (docs/NATS.md, docs/CLUSTER.md).
const RefusedLog = "message refused: not authenticated with the deployment key (further refusals from this sender are counted, not logged)"

// maxLogged bounds the senders whose refusals are logged: the key id is
// the sender's own claim, so a flood of invented ids logs at most this
// many lines.
const maxLogged = 256

// Guard signs the state-changing messages a process sends and verifies
// the ones it receives, with the deployment key (docs/NATS.md, trust
// boundaries). A refused message is:
//   - counted in patrold_bus_refused_total{subject,reason};
//   - logged once per subject, reason and sender (its key id);
//   - never applied (the caller drops it).
//
// A nil Guard signs nothing and verifies everything: a test that is not
// about trust.
type Guard struct {
	auth    *msgauth.Auth
	refused *prometheus.CounterVec
	log     *slog.Logger

	mu     sync.Mutex
	logged map[string]bool
}

// NewGuard returns a guard over auth and registers its counter on reg
// (nil: not exported).
func NewGuard(auth *msgauth.Auth, log *slog.Logger, reg prometheus.Registerer) (*Guard, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "patrold_bus_refused_total",
		Help: "State-changing NATS messages refused because they did not authenticate with the deployment key, by subject and reason.",
	}, []string{"subject", "reason"})
	for _, s := range contracts.SignedSubjects {
		for _, r := range msgauth.Reasons {
			c.WithLabelValues(s, r)
		}
	}
	if err := register(reg, c); err != nil {
		return nil, err
	}
	return &Guard{auth: auth, refused: c, log: log.With("component", "bus_trust"), logged: map[string]bool{}}, nil
}

// Auth is the guard's signer and verifier (nil for a nil guard).
func (g *Guard) Auth() *msgauth.Auth {
	if g == nil {
		return nil
	}
	return g.auth
}

// Sign signs m; call it once m's subject, headers and body are final.
func (g *Guard) Sign(m *nats.Msg) {
	if g == nil {
		return
	}
	if m.Header == nil {
		m.Header = nats.Header{}
	}
	g.auth.Sign(m.Subject, m.Header, m.Data)
}

// SignAnswer signs ans, the answer to req.
func (g *Guard) SignAnswer(req, ans *nats.Msg) {
	if g == nil {
		return
	}
	if ans.Header == nil {
		ans.Header = nats.Header{}
	}
	g.auth.SignAnswer(req.Subject, req.Header, ans.Header, ans.Data)
}

// Check verifies m, a message on the signed subject label: at is the
// reference time of the replay window (when the stream stored it, or now
// for a call), once refuses a nonce seen before (calls). A refusal is
// counted and logged; the caller must not apply m.
func (g *Guard) Check(label string, m *nats.Msg, at time.Time, once bool) error {
	if g == nil {
		return nil
	}
	return g.refuse(label, m.Header, g.auth.Verify(m.Subject, m.Header, m.Data, at, once))
}

// CheckNow is Check for a call: now is the reference time and a nonce
// counts once.
func (g *Guard) CheckNow(label string, m *nats.Msg) error {
	if g == nil {
		return nil
	}
	return g.Check(label, m, g.auth.Now(), true)
}

// CheckAnswer verifies ans, the answer to req, on the subject label.
func (g *Guard) CheckAnswer(label string, req, ans *nats.Msg) error {
	if g == nil {
		return nil
	}
	return g.refuse(label, ans.Header, g.auth.VerifyAnswer(req.Subject, req.Header, ans.Header, ans.Data))
}

// Refused counts and logs a refusal found by someone else (the session
// service verifies its own calls).
func (g *Guard) Refused(label, reason string) {
	if g != nil {
		g.refused.WithLabelValues(label, reason).Inc()
	}
}

func (g *Guard) refuse(label string, h nats.Header, err error) error {
	if err == nil {
		return nil
	}
	reason := msgauth.Reason(err)
	if reason == "" {
		return err
	}
	g.Refused(label, reason)
	sender := strings.Join(h[msgauth.HeaderKey], ",")
	if len(sender) > 40 {
		sender = sender[:40]
	}
	key := label + "/" + reason + "/" + sender
	g.mu.Lock()
	first := !g.logged[key] && len(g.logged) < maxLogged
	if first {
		g.logged[key] = true
	}
	g.mu.Unlock()
	if first {
		g.log.Warn(RefusedLog,
			"subject", label, "reason", reason, "key", sender, "err", err)
	}
	return err
}
