package embedded

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// maxRefusalsLogged bounds how many distinct refusals are logged at WARN:
// a client can invent subjects without end, so later ones go to DEBUG.
const maxRefusalsLogged = 256

// Refusals counts what the server refused its clients (a permission
// violation, a failed authentication) and logs each distinct refusal
// once at WARN: a client's refused request is not patrold's error.
type Refusals struct {
	total *prometheus.CounterVec

	mu   sync.Mutex
	seen map[string]bool
}

// NewRefusals registers patrold_nats_refused_total on reg (nil: not
// exported); a second registration shares the first counter.
func NewRefusals(reg prometheus.Registerer) (*Refusals, error) {
	total := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "patrold_nats_refused_total",
		Help: "Requests the embedded NATS server refused a client: publish or subscribe permission violations, failed authentications.",
	}, []string{"kind"})
	if reg != nil {
		if err := reg.Register(total); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, fmt.Errorf("register metrics: %w", err)
			}
			total = are.ExistingCollector.(*prometheus.CounterVec)
		}
	}
	return &Refusals{total: total, seen: map[string]bool{}}, nil
}

// violation matches nats-server's log line of a permission violation:
// its kind and the subject (the SID after it changes every time).
var violation = regexp.MustCompile(`(Publish|Subscription) Violation[^-]* - (?:Subject|Reply) ("[^"]*")`)

// refusal names the client's refused request a server error line reports:
// its kind and what makes it distinct; ok is false for any other line.
func refusal(line string) (kind, key string, ok bool) {
	if m := violation.FindStringSubmatch(line); m != nil {
		kind = "publish"
		if m[1] == "Subscription" {
			kind = "subscribe"
		}
		return kind, kind + " " + m[2], true
	}
	if authentication.MatchString(line) {
		return "authentication", "authentication", true
	}
	return "", "", false
}

var authentication = regexp.MustCompile(` - authentication error\b`)

// note counts a refusal and logs it: at WARN the first time, at DEBUG
// after, or once maxRefusalsLogged distinct ones were logged.
func (r *Refusals) note(l *slog.Logger, kind, key, line string) {
	r.total.WithLabelValues(kind).Inc()
	r.mu.Lock()
	first := !r.seen[key] && len(r.seen) < maxRefusalsLogged
	if first {
		r.seen[key] = true
	}
	r.mu.Unlock()
	if first {
		l.Warn("nats client refused (logged once; counted in patrold_nats_refused_total)", "kind", kind, "detail", line)
		return
	}
	l.Debug("nats client refused", "kind", kind, "detail", line)
}
