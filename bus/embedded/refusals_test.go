package embedded_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/internal/testkit"
)

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// records are the WARN and ERROR lines logged: level, message, kind and
// the subject the detail names.
func (b *syncBuffer) records(t *testing.T) []string {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		var r struct{ Level, Msg, Kind, Detail string }
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if r.Level != "WARN" && r.Level != "ERROR" {
			continue
		}
		subject := ""
		if i := strings.Index(r.Detail, `Subject "`); i >= 0 {
			subject = r.Detail[i+len(`Subject "`):]
			subject = subject[:strings.Index(subject, `"`)]
		}
		out = append(out, r.Level+" "+r.Kind+" "+subject)
	}
	return out
}

// Item 6 of the replay issue: a client's refused request is the client's
// problem, not the daemon's. The server's log of each distinct refusal
// is one WARN line (never ERROR), every refusal is counted by kind.
func TestRefusedRequestsAreWarnedOnceAndCounted(t *testing.T) {
	dir := t.TempDir()
	reg := prometheus.NewRegistry()
	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := embedded.Auth{Dir: dir, Names: testNames, Registerer: reg}.Starter()("127.0.0.1:0", t.TempDir(), logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	s := connectRole(t, srv.ClientURL(), dir, embedded.RoleSubscriber)
	for range 3 {
		if s.Try(t, "$JS.API.STREAM.DELETE.PATROL", nil) {
			t.Fatal("the subscriber deleted the stream")
		}
	}
	if s.Try(t, "$JS.API.CONSUMER.CREATE.PATROL.intruder.patrol.>", nil) {
		t.Fatal("the subscriber created a consumer of its own naming")
	}
	for range 2 {
		s.Denied(t, "read remediation requests", "Subscription", "patrol.remediation.requests",
			func(context.Context) error { _, err := s.NC.SubscribeSync("patrol.remediation.requests"); return err })
	}
	for range 2 {
		_, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(0))
		if !errors.Is(err, nats.ErrAuthorization) {
			t.Fatalf("no credentials: %v, want an authorization violation", err)
		}
	}
	want := map[string]float64{"publish": 4, "subscribe": 2, "authentication": 2}
	testkit.Eventually(t, 10*time.Second, "the refusals are counted", func() bool {
		return reflect.DeepEqual(refusedTotals(t, reg), want)
	})
	if got, wantLog := logs.records(t), []string{
		"WARN publish $JS.API.STREAM.DELETE.PATROL",
		"WARN publish $JS.API.CONSUMER.CREATE.PATROL.intruder.patrol.>",
		"WARN subscribe patrol.remediation.requests",
		"WARN authentication ",
	}; !reflect.DeepEqual(got, wantLog) {
		t.Fatalf("logged\n%q\nwant\n%q", got, wantLog)
	}
}

// refusedTotals reads patrold_nats_refused_total by kind.
func refusedTotals(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "patrold_nats_refused_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			out[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	return out
}
