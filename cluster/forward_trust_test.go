package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/bus/embedded/natstest"
	"github.com/patrold/patrold/bus/msgauth"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/store"
	"github.com/patrold/patrold/store/storetest"
)

func forwardAuth(t *testing.T, key []msgauth.Key, now func() time.Time) *msgauth.Auth {
	t.Helper()
	a, err := msgauth.New(key, msgauth.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Forwarded API mutations: the writer serves only a forwarded request
// signed with the deployment key. Unsigned, wrong-key, stale and
// replayed ones are answered 401, counted, and change nothing stored. A
// standby passes on only an answer the writer signed for its request.
func TestForwardedMutationsAuthenticated(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := natstest.Server(t)
	conn := func() *nats.Conn {
		nc, err := nats.Connect(srv.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	keys, err := msgauth.LoadFile(testkit.KeyFile(t))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	wg, err := bus.NewGuard(forwardAuth(t, keys, nil), nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	sg, err := bus.NewGuard(forwardAuth(t, keys, nil), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "patrold.db")
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	// The writer's API: a POST adds a silence.
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := st.AddSilence(r.Context(), findings.Silence{Matchers: findings.Matchers{Resource: "vm-1"}, Comment: "forwarded",
			Author: "op", StartsAt: now, EndsAt: now.Add(time.Hour)}, now); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	subj := contracts.ForwardSubject("patrol")
	writer := &clusterHTTP{log: slog.New(slog.DiscardHandler), next: api, nc: conn(), subj: subj, guard: wg, instance: "w", writer: func() bool { return true }}
	go writer.serveForwarded(ctx)
	attacker := conn()
	body, _ := json.Marshal(contracts.ForwardRequest{Method: http.MethodPost, URI: "/api/v1/silences", Header: map[string][]string{}, Body: []byte("{}")})
	request := func(auth *msgauth.Auth) *nats.Msg {
		m := nats.NewMsg(subj)
		m.Data = body
		if auth != nil {
			auth.Sign(m.Subject, m.Header, m.Data)
		}
		return m
	}
	status := func(m *nats.Msg) int {
		t.Helper()
		ans, err := attacker.RequestMsg(m, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var resp contracts.ForwardResponse
		if err := json.Unmarshal(ans.Data, &resp); err != nil {
			t.Fatal(err)
		}
		return resp.Status
	}
	testkit.Eventually(t, 5*time.Second, "the writer serves forwarded requests", func() bool {
		return writer.nc.NumSubscriptions() == 1 && writer.nc.Flush() == nil
	})
	refused := map[string]float64{}
	before := storetest.DumpDB(t, db)
	signed := request(forwardAuth(t, keys, nil))
	for _, a := range []struct {
		reason string
		m      *nats.Msg
	}{
		{msgauth.ReasonUnsigned, request(nil)},
		{msgauth.ReasonBadMAC, request(forwardAuth(t, []msgauth.Key{{ID: keys[0].ID, Secret: make([]byte, 32)}}, nil))},
		{msgauth.ReasonStale, request(forwardAuth(t, keys, func() time.Time { return time.Now().Add(-10 * time.Minute) }))},
	} {
		if got := status(a.m); got != http.StatusUnauthorized {
			t.Fatalf("%s forwarded request: status %d, want 401", a.reason, got)
		}
		refused[a.reason]++
		storetest.SameDB(t, a.reason+" forwarded request", storetest.DumpDB(t, db), before)
	}
	if got := status(signed); got != http.StatusOK {
		t.Fatalf("signed forwarded request: status %d, want 200", got)
	}
	after := storetest.DumpDB(t, db)
	if len(after["silences"]) != len(before["silences"])+1 {
		t.Fatalf("the signed request added no silence: %q", after["silences"])
	}
	if got := status(signed); got != http.StatusUnauthorized {
		t.Fatalf("replayed forwarded request: status %d, want 401", got)
	}
	refused[msgauth.ReasonReplayed]++
	storetest.SameDB(t, "replayed forwarded request", storetest.DumpDB(t, db), after)
	if err := forwardRefusals(reg, refused); err != nil {
		t.Fatal(err)
	}

	// A standby passes the writer's signed answer on, and refuses one
	// an attacker answers first.
	standby := &clusterHTTP{log: slog.New(slog.DiscardHandler), nc: conn(), subj: subj, guard: sg, writer: func() bool { return false }}
	rec := httptest.NewRecorder()
	standby.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/silences", strings.NewReader("{}")))
	if rec.Code != http.StatusOK || rec.Header().Get(HeaderForwardedBy) != "w" {
		t.Fatalf("forwarded through the standby: %d %v", rec.Code, rec.Header())
	}
	forged := contracts.ForwardSubject("attacked")
	sub, err := attacker.Subscribe(forged, func(m *nats.Msg) {
		data, _ := json.Marshal(contracts.ForwardResponse{Status: 200, Header: map[string][]string{HeaderForwardedBy: {"w"}}, Body: []byte(`{"forged":true}`)})
		_ = m.Respond(data)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := attacker.Flush(); err != nil {
		t.Fatal(err)
	}
	standby.subj = forged
	rec = httptest.NewRecorder()
	standby.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/silences", strings.NewReader("{}")))
	if want := "the leader's answer is not authenticated with the deployment key: message refused: unsigned"; rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), want) {
		t.Fatalf("forged answer through the standby: %d %s", rec.Code, rec.Body)
	}
}

func forwardRefusals(g prometheus.Gatherer, want map[string]float64) error {
	var b strings.Builder
	b.WriteString("# HELP patrold_bus_refused_total State-changing NATS messages refused because they did not authenticate with the deployment key, by subject and reason.\n# TYPE patrold_bus_refused_total counter\n")
	for _, s := range contracts.SignedSubjects {
		for _, r := range msgauth.Reasons {
			n := 0.0
			if s == contracts.StemForward {
				n = want[r]
			}
			fmt.Fprintf(&b, "patrold_bus_refused_total{reason=%q,subject=%q} %g\n", r, s, n)
		}
	}
	return testutil.GatherAndCompare(g, strings.NewReader(b.String()), "patrold_bus_refused_total")
}
