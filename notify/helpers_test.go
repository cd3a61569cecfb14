package notify

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
)

const testPrefix = "patrol"

// startBus starts a real Bus: an embedded nats-server with JetStream in a
// temp dir and the PATROL stream, as the daemon runs it.
func startBus(t *testing.T) *bus.Bus {
	t.Helper()
	b, err := bus.New(bus.Options{Embedded: bus.EmbeddedOptions{Listen: "127.0.0.1:0", StoreDir: t.TempDir()}}, nil, nil, bus.WithEmbedded(embedded.Start))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// testFinding is a finding as the store would publish it.
func testFinding(resource, kind string, cat findings.Category, key string, sev findings.Severity) findings.Finding {
	return findings.Finding{
		ID: findings.ID(resource, cat, key), Key: key, ResourceID: resource, ResourceKind: kind, Category: cat,
		Severity: sev, Source: findings.SourceDeterministic, Title: key + " on " + resource,
		Description: "described", Status: findings.StatusActive,
		DetectedAt: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), LastSeenAt: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC),
	}
}

// findingRow builds the outbox row of a finding event, like the store.
func findingRow(t testing.TB, id, event string, f findings.Finding, at time.Time) contracts.OutboxEvent {
	t.Helper()
	subject, typ, err := contracts.FindingSubject(contracts.FindingEvent(event), string(f.Severity))
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(findings.NewFindingEventData(&f, "first", "run-1", at))
	if err != nil {
		t.Fatal(err)
	}
	return contracts.OutboxEvent{ID: id, Subject: subject, Type: typ, ResourceID: f.ResourceID, Time: at, Data: data}
}

// publish publishes a row as the relay does and returns the body on the wire.
func publish(t testing.TB, b *bus.Bus, row contracts.OutboxEvent) []byte {
	t.Helper()
	msg, err := bus.EventMessage(b.Prefix(), b.Source(), row)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.JetStream().PublishMsg(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	return msg.Data
}

// publishRaw publishes arbitrary bytes on a full subject.
func publishRaw(t testing.TB, b *bus.Bus, subject string, body []byte) {
	t.Helper()
	if _, err := b.JetStream().Publish(context.Background(), subject, body, jetstream.WithMsgID(subject+string(body))); err != nil {
		t.Fatal(err)
	}
}

// startRunner builds and runs a Runner on b until the test ends.
func startRunner(t *testing.T, b *bus.Bus, opts Options, reg *prometheus.Registry, now func() time.Time) *Runner {
	t.Helper()
	r, err := New(RunnerOptions{Options: opts, JetStream: b.JetStream(), Prefix: b.Prefix(), Stream: b.StreamName(),
		Registerer: reg, Now: now, Client: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.EnsureConsumers(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("runner: %v", err)
		}
	})
	return r
}

// metricsMatch compares the named metric families with the expected text.
func metricsMatch(reg *prometheus.Registry, expected string, names ...string) (bool, string) {
	err := testutil.GatherAndCompare(reg, strings.NewReader(expected), names...)
	if err != nil {
		return false, err.Error()
	}
	return true, ""
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
