package config_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/notify"
)

// TestNotifySection decodes the section exactly as the issue writes it;
// every sink setting left out holds its default, so `config check` prints
// what the sinks use.
func TestNotifySection(t *testing.T) {
	cfg, err := config.Load([]byte(`
notify:
  in_serve: false
  sinks:
    - {name: am, kind: alertmanager, alertmanager: {urls: ["http://127.0.0.1:9093", "http://127.0.0.1:9094"], labels: {team: infra}}}
    - {name: chat, kind: webhook, max_deliver: 3, backoff: 1s, webhook: {url: "https://hooks.example/x", secret_file: /etc/patrold/hook.secret,
       subjects: ["patrol.findings.*.critical"], timeout: 3s}}
`), []string{"PATROLD_NOTIFY_IN_SERVE=true"})
	if err != nil {
		t.Fatal(err)
	}
	want := notify.Options{InServe: true, Sinks: []notify.SinkOptions{
		{Name: "am", Kind: "alertmanager", MaxDeliver: 10, Backoff: 5 * time.Second, MaxBackoff: 5 * time.Minute,
			Alertmanager: notify.AlertmanagerOptions{URLs: []string{"http://127.0.0.1:9093", "http://127.0.0.1:9094"},
				Labels: map[string]string{"team": "infra"}, ResendInterval: time.Minute, ForgetAfter: 24 * time.Hour, Timeout: 10 * time.Second}},
		{Name: "chat", Kind: "webhook", MaxDeliver: 3, Backoff: time.Second, MaxBackoff: 5 * time.Minute, Webhook: notify.WebhookOptions{URL: "https://hooks.example/x",
			SecretFile: "/etc/patrold/hook.secret", Subjects: []string{"patrol.findings.*.critical"}, Timeout: 3 * time.Second}},
	}}
	if !reflect.DeepEqual(cfg.Notify, want) {
		t.Fatalf("notify:\n%+v\nwant\n%+v", cfg.Notify, want)
	}
}

func TestNotifyProblemsNameTheKey(t *testing.T) {
	for in, want := range map[string]string{
		`notify: {sinks: [{name: am, kind: alertmanager, alertmanager: {url: "http://x"}}]}`:                                           "notify.sinks[0].alertmanager.url: unknown key",
		`notify: {sinks: [{name: am, kind: pager}]}`:                                                                                   `notify.sinks[0].kind: "pager" is not one of alertmanager, webhook`,
		`notify: {sinks: [{name: h, kind: webhook, webhook: {url: "http://x", subjects: ["other.findings.>"]}}]}`:                      `notify.sinks[0].webhook.subjects[0]: "other.findings.>" must start with patrol. (nats.subject_prefix)`,
		`{nats: {subject_prefix: p}, notify: {sinks: [{name: h, kind: webhook, webhook: {url: "http://x", subjects: ["patrol.>"]}}]}}`: `notify.sinks[0].webhook.subjects[0]: "patrol.>" must start with p. (nats.subject_prefix)`,
	} {
		_, err := config.Load([]byte(in), nil)
		if err == nil || err.Error() != "invalid configuration: "+want {
			t.Errorf("%s:\n got %v\nwant %s", in, err, want)
		}
	}
}

// TestNotifyURLsHidden: a hook URL's path and query (often the credential)
// and an Alertmanager URL's password never print.
func TestNotifyURLsHidden(t *testing.T) {
	cfg, err := config.Load([]byte(`
notify:
  sinks:
    - {name: am, kind: alertmanager, alertmanager: {urls: ["https://patrold:am-pass@am.example:9093"]}}
    - {name: chat, kind: webhook, webhook: {url: "https://hooks.example/services/T0/B0/hook-token?key=q-secret"}}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := cfg.String()
	for _, secret := range []string{"am-pass", "hook-token", "q-secret", "services"} {
		if strings.Contains(out, secret) {
			t.Errorf("config check prints %q:\n%s", secret, out)
		}
	}
	for _, shown := range []string{"https://patrold:xxxxx@am.example:9093", "url: https://hooks.example/<hidden>"} {
		if !strings.Contains(out, shown) {
			t.Errorf("config check does not show %q:\n%s", shown, out)
		}
	}
	if cfg.Notify.Sinks[1].Webhook.URL != "https://hooks.example/services/T0/B0/hook-token?key=q-secret" {
		t.Fatalf("the URL itself was changed: %q", cfg.Notify.Sinks[1].Webhook.URL)
	}
}
