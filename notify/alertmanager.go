package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/common/model"
)

// AlertsPath is the Alertmanager API v2 endpoint alerts are posted to.
const AlertsPath = "/api/v2/alerts"

const maxErrorBody = 512

// amSink posts findings to Alertmanager as alerts. It keeps, in memory,
// the latest state of every finding it saw within forget_after: active ones
// are re-posted every resend_interval (Alertmanager ends an alert that is
// not re-posted before its endsAt). On start the state is rebuilt by
// replaying the finding events of the last forget_after from the stream,
// so a sink needs no database and a restart re-announces what is active.
type amSink struct {
	opts   SinkOptions // defaults applied
	client *http.Client
	m      *metrics
	log    *slog.Logger
	now    func() time.Time

	mu    sync.Mutex
	state map[string]*amEntry // by finding id
}

// amEntry is the latest known state of one finding's alert.
type amEntry struct {
	seq   uint64 // stream sequence of the event it came from
	alert model.Alert
	ended bool
	seen  time.Time // time of that event
}

func newAMSink(opts SinkOptions, client *http.Client, m *metrics, log *slog.Logger, now func() time.Time) *amSink {
	return &amSink{opts: opts, client: client, m: m, log: log, now: now, state: map[string]*amEntry{}}
}

// labels builds the alert labels of a finding.
func (s *amSink) labels(ev *findingEvent) model.LabelSet {
	f := &ev.Finding.Finding
	ls := model.LabelSet{}
	for k, v := range s.opts.Alertmanager.Labels {
		ls[model.LabelName(k)] = model.LabelValue(v)
	}
	ls["alertname"] = model.LabelValue(f.Key)
	ls["resource_id"] = model.LabelValue(f.ResourceID)
	ls["severity"] = model.LabelValue(f.Severity)
	ls["category"] = model.LabelValue(f.Category)
	ls["finding_id"] = model.LabelValue(f.ID)
	if f.ResourceKind != "" {
		ls["resource_kind"] = model.LabelValue(f.ResourceKind)
	}
	if f.Node != "" {
		// Operators group by host.
		ls["node"] = model.LabelValue(f.Node)
	}
	if f.Source != "" {
		// model or deterministic: routing can tell the model's findings
		// from the net's.
		//mutate:alert-carries-source ./notify ^TestAlertmanager
		ls["source"] = model.LabelValue(f.Source)
	}
	return ls
}

func (s *amSink) alert(ev *findingEvent, prev *amEntry) model.Alert {
	f := &ev.Finding.Finding
	ann := model.LabelSet{"summary": model.LabelValue(f.Title)}
	for k, v := range map[model.LabelName]string{"description": f.Description, "recommendation": f.Recommendation} {
		if v != "" {
			ann[k] = model.LabelValue(v)
		}
	}
	if f.Inhibits > 0 {
		// Its children are held, never posted: the parent says how many
		// alerts it stands for.
		ann["explains"] = model.LabelValue(fmt.Sprintf("%d findings", f.Inhibits))
	}
	a := model.Alert{Labels: s.labels(ev), Annotations: ann, StartsAt: f.DetectedAt.UTC()}
	if link := s.opts.Alertmanager.Link; link != "" {
		a.GeneratorURL = linkReplacer(f.ID, f.ResourceID, f.Key).Replace(link)
		ann["link"] = model.LabelValue(a.GeneratorURL)
	}
	switch {
	case prev != nil && !prev.ended:
		a.StartsAt = prev.alert.StartsAt // an alert keeps its start while active
	case ev.shownAgain():
		a.StartsAt = ev.Event.Time.UTC()
	}
	return a
}

// apply records an event and returns the alerts to post: the finding's
// alert in its new state, plus its previous alert ended when the labels
// changed (a severity change is a new alert in Alertmanager). An event not
// newer than the recorded state (a redelivery, or one the start-up replay
// already read) changes nothing and returns the recorded state.
func (s *amSink) apply(ev *findingEvent, seq uint64) []model.Alert {
	now := s.now().UTC()
	s.mu.Lock()
	defer s.mu.Unlock()
	id := ev.Finding.Finding.ID
	prev := s.state[id]
	if prev != nil && seq != 0 && seq <= prev.seq {
		return []model.Alert{s.current(prev, now)}
	}
	a := s.alert(ev, prev)
	e := &amEntry{seq: seq, alert: a, seen: ev.Event.Time, ended: ev.ended()}
	if e.ended {
		e.alert.EndsAt = endTime(ev, a.StartsAt)
	}
	s.state[id] = e
	out := []model.Alert{s.current(e, now)}
	if prev != nil && !prev.ended && !prev.alert.Labels.Equal(a.Labels) {
		old := prev.alert
		old.EndsAt = now
		out = append(out, old)
	}
	s.m.active.WithLabelValues(s.opts.Name).Set(float64(s.activeCount()))
	return out
}

// current is the alert to post for an entry now: an active one is valid
// for resendFactor resend intervals.
func (s *amSink) current(e *amEntry, now time.Time) model.Alert {
	a := e.alert
	if !e.ended {
		a.EndsAt = now.Add(resendFactor * s.opts.Alertmanager.ResendInterval)
	}
	return a
}

func endTime(ev *findingEvent, start time.Time) time.Time {
	end := ev.Event.Time.UTC()
	if r := ev.Finding.Finding.ResolvedAt; r != nil {
		end = r.UTC()
	}
	if end.Before(start) {
		end = start
	}
	return end
}

func (s *amSink) activeCount() int {
	n := 0
	for _, e := range s.state {
		if !e.ended {
			n++
		}
	}
	return n
}

// Active returns the active alerts in label order (tests and debugging).
func (s *amSink) active() []model.Alert {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []model.Alert
	for _, e := range s.state {
		if !e.ended {
			out = append(out, e.alert)
		}
	}
	slices.SortFunc(out, func(a, b model.Alert) int { return strings.Compare(a.Labels.String(), b.Labels.String()) })
	return out
}

// deliver is the consumer's delivery function.
func (s *amSink) deliver(ctx context.Context, msg jetstream.Msg) error {
	ev, err := decodeFindingEvent(msg.Data())
	if err != nil {
		return &permanentError{err}
	}
	var seq uint64
	if md, err := msg.Metadata(); err == nil {
		seq = md.Sequence.Stream
	}
	return s.post(ctx, s.apply(ev, seq))
}

// due returns what a resend posts now: every active alert, and the ended
// alert of every active one not heard of for forget_after (then dropped).
// Ended entries older than forget_after are dropped without a post.
func (s *amSink) due() []model.Alert {
	now := s.now().UTC()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []model.Alert
	for id, e := range s.state {
		stale := now.Sub(e.seen) > s.opts.Alertmanager.ForgetAfter
		switch {
		case stale && !e.ended:
			s.log.Info("no event for the finding within forget_after; its alert ends", "finding", id, "last_event", e.seen)
			a := e.alert
			a.EndsAt = now
			out = append(out, a)
			delete(s.state, id)
		case stale:
			delete(s.state, id)
		case !e.ended:
			out = append(out, s.current(e, now))
		}
	}
	s.m.active.WithLabelValues(s.opts.Name).Set(float64(s.activeCount()))
	return out
}

// resend posts the due alerts to every Alertmanager, counting each result.
func (s *amSink) resend(ctx context.Context) {
	alerts := s.due()
	if len(alerts) == 0 {
		return
	}
	for _, u := range s.opts.Alertmanager.URLs {
		if err := s.postOne(ctx, u, alerts); err != nil {
			s.m.resends.WithLabelValues(s.opts.Name, "error").Inc()
			s.log.Warn("re-post of active alerts failed", "url", redactPassword(u), "alerts", len(alerts), "err", err)
			continue
		}
		s.m.resends.WithLabelValues(s.opts.Name, "ok").Inc()
	}
}

// resendLoop re-posts every resend_interval until ctx ends.
func (s *amSink) resendLoop(ctx context.Context) {
	t := time.NewTicker(s.opts.Alertmanager.ResendInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.resend(ctx)
		}
	}
}

// post sends alerts to every Alertmanager (in parallel); the delivery is
// accepted only when every one accepted it.
func (s *amSink) post(ctx context.Context, alerts []model.Alert) error {
	urls := s.opts.Alertmanager.URLs
	errs := make([]error, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.postOne(ctx, u, alerts)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (s *amSink) postOne(ctx context.Context, base string, alerts []model.Alert) error {
	name := redactPassword(base)
	body, err := json.Marshal(alerts)
	if err != nil {
		return fmt.Errorf("encode alerts: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Alertmanager.Timeout)
	defer cancel()
	target := strings.TrimRight(base, "/") + AlertsPath
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("alertmanager %s: %w", name, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", userAgent)
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("alertmanager %s: %w", name, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("alertmanager %s: HTTP %d: %s", name, resp.StatusCode, strings.TrimSpace(string(msg)))
	}
	return nil
}

// replay rebuilds the state from the finding events of the last
// forget_after on the stream, through the sink's replay consumer: the
// notify role may read no consumer it does not name (docs/NATS.md).
// Nothing is posted or acknowledged. The consumer is not deleted (serve's
// user, running notify in_serve, may delete none): it expires
// replayInactive after its last pull, and a replay that finds it still
// there fails and is retried.
func (s *amSink) replay(ctx context.Context, js jetstream.JetStream, stream, filter string) (int, error) {
	start := s.now().Add(-s.opts.Alertmanager.ForgetAfter)
	oc, err := js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{
		Name: ReplayConsumer(s.opts.Name), FilterSubject: filter, DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &start,
		AckPolicy: jetstream.AckNonePolicy, MemoryStorage: true, InactiveThreshold: replayInactive,
	})
	if err != nil {
		return 0, fmt.Errorf("replay %s: %w", filter, err)
	}
	if oc.CachedInfo().NumPending == 0 {
		return 0, nil
	}
	n := 0
	for {
		fctx, cancel := context.WithTimeout(ctx, pullWait)
		msg, err := oc.Next(jetstream.FetchContext(fctx))
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return n, ctx.Err()
			}
			return n, fmt.Errorf("replay %s after %d events: %w", filter, n, err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return n, fmt.Errorf("replay %s: %w", filter, err)
		}
		n++
		if ev, err := decodeFindingEvent(msg.Data()); err != nil {
			s.log.Warn("replay: event does not decode; skipped", "stream_seq", md.Sequence.Stream, "err", err)
		} else {
			s.apply(ev, md.Sequence.Stream)
		}
		if md.NumPending == 0 {
			return n, nil
		}
	}
}

// redactPassword hides the password of a URL (errors and logs).
func redactPassword(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return hiddenURL
	}
	return u.Redacted()
}
