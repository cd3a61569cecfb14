package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func decoded(t *testing.T, row contracts.OutboxEvent) *findingEvent {
	t.Helper()
	body, err := json.Marshal(map[string]any{"specversion": "1.0", "id": row.ID, "source": "patrold/test", "type": row.Type,
		"time": row.Time, "subject": row.ResourceID, "datacontenttype": "application/json", "data": row.Data})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := decodeFindingEvent(body)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func testAMSink(t testing.TB, c *clock) *amSink {
	m, err := newMetrics(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := SinkOptions{Name: "am", Kind: KindAlertmanager, Alertmanager: AlertmanagerOptions{URLs: []string{"http://am"},
		Labels: map[string]string{"team": "infra"}, Link: "https://patrold.example/findings/{finding_id}?r={resource_id}"}}.withDefaults()
	return newAMSink(opts, http.DefaultClient, m, slog.New(slog.DiscardHandler), c.now)
}

func TestAlertmanagerAlertLifecycle(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)}
	s := testAMSink(t, c)
	f := testFinding("storage/pve1/local-zfs", "storage", findings.CategoryCapacity, "high_disk", findings.SeverityWarning)
	f.Recommendation = "free space"
	labels := model.LabelSet{"alertname": "high_disk", "resource_id": "storage/pve1/local-zfs", "resource_kind": "storage",
		"severity": "warning", "category": "capacity", "finding_id": model.LabelValue(f.ID), "team": "infra", "source": "deterministic"}
	link := "https://patrold.example/findings/" + f.ID + "?r=storage%2Fpve1%2Flocal-zfs"
	ann := model.LabelSet{"summary": "high_disk on storage/pve1/local-zfs", "description": "described",
		"recommendation": "free space", "link": model.LabelValue(link)}
	firing := model.Alert{Labels: labels, Annotations: ann, StartsAt: f.DetectedAt, EndsAt: c.now().Add(4 * time.Minute), GeneratorURL: link}

	got := s.apply(decoded(t, findingRow(t, "e1", "opened", f, c.now())), 10)
	if want := []model.Alert{firing}; !reflect.DeepEqual(got, want) {
		t.Fatalf("opened:\n%+v\nwant\n%+v", got, want)
	}
	// a redelivery of the same (or an older) event re-posts the state, changes nothing
	c.add(time.Minute)
	again := firing
	again.EndsAt = c.now().Add(4 * time.Minute)
	if got := s.apply(decoded(t, findingRow(t, "e1", "opened", f, c.now())), 10); !reflect.DeepEqual(got, []model.Alert{again}) {
		t.Fatalf("redelivery:\n%+v", got)
	}
	// severity change: a new alert (new label set), the old one ended now
	f.Severity = findings.SeverityCritical
	got = s.apply(decoded(t, findingRow(t, "e2", "updated", f, c.now())), 11)
	crit := again
	crit.Labels = labels.Clone()
	crit.Labels["severity"] = "critical"
	ended := firing
	ended.EndsAt = c.now()
	if want := []model.Alert{crit, ended}; !reflect.DeepEqual(got, want) {
		t.Fatalf("severity change:\n%+v\nwant\n%+v", got, want)
	}
	// resolved: endsAt is the resolution time; nothing is re-posted after
	c.add(time.Minute)
	resolvedAt := c.now().Add(-10 * time.Second)
	f.Status, f.ResolvedAt = findings.StatusResolved, &resolvedAt
	got = s.apply(decoded(t, findingRow(t, "e3", "resolved", f, c.now())), 12)
	res := crit
	res.EndsAt = resolvedAt
	if want := []model.Alert{res}; !reflect.DeepEqual(got, want) {
		t.Fatalf("resolved:\n%+v\nwant\n%+v", got, want)
	}
	if due := s.due(); len(due) != 0 {
		t.Fatalf("a resolved alert is re-posted: %+v", due)
	}
	// reopened: starts at the event, not at the first detection
	c.add(time.Hour)
	f.Status, f.ResolvedAt, f.RegressionCount = findings.StatusActive, nil, 1
	got = s.apply(decoded(t, findingRow(t, "e4", "reopened", f, c.now())), 13)
	re := crit
	re.StartsAt, re.EndsAt = c.now(), c.now().Add(4*time.Minute)
	if want := []model.Alert{re}; !reflect.DeepEqual(got, want) {
		t.Fatalf("reopened:\n%+v\nwant\n%+v", got, want)
	}
	// dismissed (a finding state, whatever the event) ends it
	f.DismissedReason = findings.DismissWillFixLater
	got = s.apply(decoded(t, findingRow(t, "e5", "repeated", f, c.now())), 14)
	dis := re
	dis.EndsAt = c.now()
	if want := []model.Alert{dis}; !reflect.DeepEqual(got, want) {
		t.Fatalf("dismissed:\n%+v\nwant\n%+v", got, want)
	}
	// undismissed and unsuppressed raise it again, starting at the event
	for i, kind := range []string{"undismissed", "unsuppressed"} {
		c.add(time.Minute)
		f.DismissedReason = ""
		got = s.apply(decoded(t, findingRow(t, fmt.Sprintf("e%d", 6+i), kind, f, c.now())), uint64(15+2*i))
		back := re
		back.StartsAt, back.EndsAt = c.now(), c.now().Add(4*time.Minute)
		if want := []model.Alert{back}; !reflect.DeepEqual(got, want) {
			t.Fatalf("%s:\n%+v\nwant\n%+v", kind, got, want)
		}
		// and the next dismissal ends it again
		c.add(time.Minute)
		f.DismissedReason = findings.DismissNotAnIssue
		got = s.apply(decoded(t, findingRow(t, fmt.Sprintf("s%d", 6+i), "dismissed", f, c.now())), uint64(16+2*i))
		back.EndsAt = c.now()
		if want := []model.Alert{back}; !reflect.DeepEqual(got, want) {
			t.Fatalf("%s then dismissed:\n%+v\nwant\n%+v", kind, got, want)
		}
	}
}

func TestAlertmanagerResendAndForget(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)}
	s := testAMSink(t, c)
	a := testFinding("vm/101", "vm", findings.CategoryPerformance, "high_memory", findings.SeverityWarning)
	b := testFinding("node/pve2", "node", findings.CategoryPerformance, "high_cpu", findings.SeverityWarning)
	s.apply(decoded(t, findingRow(t, "a1", "opened", a, c.now())), 1)
	c.add(20 * time.Hour)
	s.apply(decoded(t, findingRow(t, "b1", "opened", b, c.now())), 2)
	due := s.due()
	if len(due) != 2 || !due[0].EndsAt.Equal(c.now().Add(4*time.Minute)) || !due[1].EndsAt.Equal(c.now().Add(4*time.Minute)) {
		t.Fatalf("both active alerts are re-posted valid for 4 resend intervals: %+v", due)
	}
	// a has had no event for more than forget_after (24h): ended once, then forgotten
	c.add(5 * time.Hour)
	due = s.due()
	if len(due) != 2 {
		t.Fatalf("due: %+v", due)
	}
	for _, al := range due {
		wantEnd := c.now().Add(4 * time.Minute)
		if al.Labels["finding_id"] == model.LabelValue(a.ID) {
			wantEnd = c.now()
		}
		if !al.EndsAt.Equal(wantEnd) {
			t.Errorf("%s ends %s, want %s", al.Labels["alertname"], al.EndsAt, wantEnd)
		}
	}
	if act := s.active(); len(act) != 1 || act[0].Labels["finding_id"] != model.LabelValue(b.ID) {
		t.Fatalf("active after forgetting: %+v", act)
	}
}

// TestAlertmanagerPostErrors: every URL is posted; one refusing fails the
// delivery with its status and body in the error.
func TestAlertmanagerPostErrors(t *testing.T) {
	var mu sync.Mutex
	var got [][]model.Alert
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var alerts []model.Alert
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != AlertsPath || r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &alerts) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, alerts)
		mu.Unlock()
	}))
	defer ok.Close()
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "patrold" || p != "pw" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		http.Error(w, "maintenance", http.StatusServiceUnavailable)
	}))
	defer bad.Close()
	c := &clock{t: time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)}
	s := testAMSink(t, c)
	withAuth := "http://patrold:pw@" + strings.TrimPrefix(bad.URL, "http://") + "/"
	s.opts.Alertmanager.URLs = []string{ok.URL, withAuth}
	reg := prometheus.NewRegistry()
	if s.m, _ = newMetrics(reg, []SinkOptions{s.opts}); s.m == nil {
		t.Fatal("metrics")
	}
	alerts := s.apply(decoded(t, findingRow(t, "a1", "opened", testFinding("vm/101", "vm", findings.CategoryPerformance, "high_memory", findings.SeverityWarning), c.now())), 1)
	err := s.post(context.Background(), alerts)
	// the URL's user info is sent as basic auth, its password never shown
	want := "alertmanager http://patrold:xxxxx@" + strings.TrimPrefix(bad.URL, "http://") + "/: HTTP 503: maintenance"
	if err == nil || err.Error() != want {
		t.Fatalf("post: %v, want %s", err, want)
	}
	if len(got) != 1 || !reflect.DeepEqual(got[0][0].Labels, alerts[0].Labels) || !got[0][0].StartsAt.Equal(alerts[0].StartsAt) {
		t.Fatalf("the healthy Alertmanager got %+v", got)
	}
	s.resend(context.Background())
	if ok, diff := metricsMatch(reg, `
# HELP patrold_notify_resends_total Re-posts of the active alerts to one Alertmanager, by result (ok or error).
# TYPE patrold_notify_resends_total counter
patrold_notify_resends_total{result="error",sink="am"} 1
patrold_notify_resends_total{result="ok",sink="am"} 1
# HELP patrold_notify_active_alerts Active alerts an alertmanager sink re-posts every resend_interval.
# TYPE patrold_notify_active_alerts gauge
patrold_notify_active_alerts{sink="am"} 1
`, "patrold_notify_resends_total", "patrold_notify_active_alerts"); !ok {
		t.Fatal(diff)
	}
}

// fakeAM is a loopback stand-in for Alertmanager's POST endpoint that
// refuses while down and records the alerts it accepted, by finding id.
type fakeAM struct {
	mu       sync.Mutex
	down     bool
	accepted map[model.LabelValue]model.Alert
	srv      *httptest.Server
}

func newFakeAM(t *testing.T) *fakeAM {
	f := &fakeAM{accepted: map[model.LabelValue]model.Alert{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		var alerts []model.Alert
		if f.down || json.NewDecoder(r.Body).Decode(&alerts) != nil {
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		for _, a := range alerts {
			f.accepted[a.Labels["finding_id"]] = a
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAM) set(down bool) { f.mu.Lock(); f.down = down; f.mu.Unlock() }

func (f *fakeAM) ids() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for id := range f.accepted {
		out = append(out, string(id))
	}
	slices.Sort(out)
	return out
}

// TestAlertmanagerHealsAfterDeadLetter: an event dead-lettered while
// Alertmanager refused is still posted by the next resend once it accepts;
// events published before the sink started are rebuilt from the stream.
func TestAlertmanagerHealsAfterDeadLetter(t *testing.T) {
	b := startBus(t)
	am := newFakeAM(t)
	before := testFinding("node/pve2", "node", findings.CategoryPerformance, "high_cpu", findings.SeverityWarning)
	publish(t, b, findingRow(t, "ev-before", "opened", before, time.Now().UTC())) // before the sink exists
	am.set(true)
	reg := prometheus.NewRegistry()
	startRunner(t, b, Options{Sinks: []SinkOptions{{Name: "am", Kind: KindAlertmanager, MaxDeliver: 2,
		Backoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
		Alertmanager: AlertmanagerOptions{URLs: []string{am.srv.URL}, ResendInterval: time.Second}}}}, reg, time.Now)
	during := testFinding("vm/101", "vm", findings.CategoryPerformance, "high_memory", findings.SeverityWarning)
	publish(t, b, findingRow(t, "ev-during", "opened", during, time.Now().UTC()))
	testkit.EventuallyState(t, 10*time.Second, "the event dead-lettered", func() (bool, string) {
		return metricsMatch(reg, `
# HELP patrold_notify_dead_letters_total Events given up after max_deliver failed deliveries, or that do not decode.
# TYPE patrold_notify_dead_letters_total counter
patrold_notify_dead_letters_total{sink="am"} 1
# HELP patrold_notify_active_alerts Active alerts an alertmanager sink re-posts every resend_interval.
# TYPE patrold_notify_active_alerts gauge
patrold_notify_active_alerts{sink="am"} 2
`, "patrold_notify_dead_letters_total", "patrold_notify_active_alerts")
	})
	if ids := am.ids(); len(ids) != 0 {
		t.Fatalf("accepted while down: %v", ids)
	}
	am.set(false)
	want := []string{before.ID, during.ID}
	slices.Sort(want)
	testkit.EventuallyState(t, 10*time.Second, "both alerts after Alertmanager accepts again", func() (bool, string) {
		return slices.Equal(am.ids(), want), fmt.Sprint(am.ids())
	})
}

// TestAlertmanagerNodeLabel: an alert carries the node of its finding's
// resource, so operators group by host; a finding without one has none.
func TestAlertmanagerNodeLabel(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)}
	s := testAMSink(t, c)
	f := testFinding("vm/101", "vm", findings.CategoryBackup, "backup_failed", findings.SeverityWarning)
	f.ResourceNode = "pve2"
	got := s.apply(decoded(t, findingRow(t, "e1", "opened", f, c.now())), 10)
	want := model.LabelSet{"alertname": "backup_failed", "resource_id": "vm/101", "resource_kind": "vm", "node": "pve2",
		"severity": "warning", "category": "backup", "finding_id": model.LabelValue(f.ID), "team": "infra", "source": "deterministic"}
	if len(got) != 1 || !reflect.DeepEqual(got[0].Labels, want) {
		t.Fatalf("labels %+v, want %+v", got, want)
	}
	g := testFinding("vm/102", "vm", findings.CategoryBackup, "backup_failed", findings.SeverityWarning)
	if got := s.apply(decoded(t, findingRow(t, "e2", "opened", g, c.now())), 11); len(got) != 1 || got[0].Labels["node"] != "" {
		t.Fatalf("no node: %+v", got)
	}
}

// TestAlertmanagerExplainsCount: a parent finding's alert says how many
// findings it explains (their own alerts are never posted: they are not
// published); a finding that explains none has no such annotation.
func TestAlertmanagerExplainsCount(t *testing.T) {
	c := &clock{t: time.Date(2026, 11, 29, 11, 0, 0, 0, time.UTC)}
	s := testAMSink(t, c)
	f := testFinding("node/pve1", "node", findings.CategoryReliability, "node_offline", findings.SeverityCritical)
	f.Inhibits = 3
	got := s.apply(decoded(t, findingRow(t, "e1", "opened", f, c.now())), 10)
	want := model.LabelSet{"summary": model.LabelValue(f.Title), "explains": "3 findings"}
	for k, v := range map[model.LabelName]string{"description": f.Description, "recommendation": f.Recommendation} {
		if v != "" {
			want[k] = model.LabelValue(v)
		}
	}
	if len(got) == 1 {
		want["link"] = model.LabelValue(got[0].GeneratorURL)
	}
	if len(got) != 1 || !reflect.DeepEqual(got[0].Annotations, want) {
		t.Fatalf("annotations %+v, want %+v", got, want)
	}
	g := testFinding("vm/102", "vm", findings.CategoryBackup, "backup_failed", findings.SeverityWarning)
	if got := s.apply(decoded(t, findingRow(t, "e2", "opened", g, c.now())), 11); len(got) != 1 || got[0].Annotations["explains"] != "" {
		t.Fatalf("explains nothing: %+v", got)
	}
}
