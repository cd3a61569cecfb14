package docs

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/notify"
)

var notifyMetricRow = regexp.MustCompile("(?m)^\\| `(patrold_notify_[a-z_]+)` \\|")

// notifyCodeMetrics returns the metric families a Runner with one sink of
// each kind registers.
func notifyCodeMetrics(t *testing.T) []string {
	t.Helper()
	b, err := bus.New(bus.Options{Embedded: bus.EmbeddedOptions{Listen: "127.0.0.1:0", StoreDir: t.TempDir()}}, nil, nil, bus.WithEmbedded(embedded.Start))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	reg := prometheus.NewRegistry()
	_, err = notify.New(notify.RunnerOptions{JetStream: b.JetStream(), Prefix: b.Prefix(), Registerer: reg, Options: notify.Options{Sinks: []notify.SinkOptions{
		{Name: "am", Kind: notify.KindAlertmanager, Alertmanager: notify.AlertmanagerOptions{URLs: []string{"http://127.0.0.1:9093"}}},
		{Name: "hook", Kind: notify.KindWebhook, Webhook: notify.WebhookOptions{URL: "http://127.0.0.1:1/"}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	return names
}

// checkNotifyDoc compares the metrics table and the webhook headers of
// NOTIFY.md with the code.
func checkNotifyDoc(doc string, metrics []string) []string {
	var problems []string
	documented := map[string]bool{}
	for _, m := range notifyMetricRow.FindAllStringSubmatch(doc, -1) {
		documented[m[1]] = true
	}
	code := map[string]bool{}
	for _, m := range metrics {
		code[m] = true
		if !documented[m] {
			problems = append(problems, "NOTIFY.md: metric "+m+" is not in the metrics table")
		}
	}
	for m := range documented {
		if !code[m] {
			problems = append(problems, "NOTIFY.md: "+m+" is not a metric of the notify package")
		}
	}
	for _, h := range []string{notify.HeaderSignature, notify.HeaderEventID, notify.HeaderAttempt, notify.AlertsPath} {
		if !strings.Contains(doc, h) {
			problems = append(problems, fmt.Sprintf("NOTIFY.md: %s is not documented", h))
		}
	}
	sort.Strings(problems)
	return problems
}

func TestNotifyDocMatchesCode(t *testing.T) {
	metrics := notifyCodeMetrics(t)
	if len(metrics) < 6 {
		t.Fatalf("only %d notify metrics gathered: %v", len(metrics), metrics)
	}
	doc := readDoc(t, "NOTIFY.md")
	for _, p := range checkNotifyDoc(doc, metrics) {
		t.Error(p)
	}
	drift := map[string][]string{
		"row removed":    checkNotifyDoc(strings.Replace(doc, "| `patrold_notify_lag_messages` |", "| lag |", 1), metrics),
		"unknown metric": checkNotifyDoc(doc+"\n| `patrold_notify_bogus_total` | counter | x |\n", metrics),
		"header renamed": checkNotifyDoc(strings.ReplaceAll(doc, notify.HeaderSignature, "X-Sig"), metrics),
	}
	for name, p := range drift {
		if len(p) == 0 {
			t.Errorf("%s: the guard reported nothing", name)
		}
	}
}
