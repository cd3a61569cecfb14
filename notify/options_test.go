package notify

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
)

func validOptions() Options {
	return Options{InServe: true, Sinks: []SinkOptions{
		{Name: "am", Kind: KindAlertmanager, Alertmanager: AlertmanagerOptions{URLs: []string{"http://127.0.0.1:9093"},
			Labels: map[string]string{"team": "infra"}, Link: "https://patrold.example/f/{finding_id}"}},
		{Name: "chat", Kind: KindWebhook, Webhook: WebhookOptions{URL: "https://hooks.example/x", Subjects: []string{"patrol.findings.*.critical", "patrol.runs.>"}}},
	}}
}

// TestValidateBreakOneField starts from a valid section and breaks one
// field per case; the message names the key.
func TestValidateBreakOneField(t *testing.T) {
	if err := validOptions().Validate("patrol"); err != nil {
		t.Fatalf("valid options refused: %v", err)
	}
	cases := map[string]struct {
		edit func(o *Options)
		want string
	}{
		"no name":        {func(o *Options) { o.Sinks[0].Name = "" }, "notify.sinks[0].name: required"},
		"bad name":       {func(o *Options) { o.Sinks[0].Name = "a b" }, `notify.sinks[0].name: "a b" must be 1..32 letters, digits, - and _`},
		"duplicate name": {func(o *Options) { o.Sinks[1].Name = "am" }, `notify.sinks[1].name: duplicate sink name "am"`},
		"kind":           {func(o *Options) { o.Sinks[0].Kind = "email" }, `notify.sinks[0].kind: "email" is not one of alertmanager, webhook`},
		"max_deliver":    {func(o *Options) { o.Sinks[0].MaxDeliver = -1 }, "notify.sinks[0].max_deliver: must not be negative, got -1"},
		"max_backoff":    {func(o *Options) { o.Sinks[0].Backoff = 10 * time.Minute }, "notify.sinks[0].max_backoff: 5m0s is below backoff 10m0s"},
		"no urls":        {func(o *Options) { o.Sinks[0].Alertmanager.URLs = nil }, "notify.sinks[0].alertmanager.urls: at least one Alertmanager URL is required"},
		"url scheme":     {func(o *Options) { o.Sinks[0].Alertmanager.URLs[0] = "ftp://am" }, `notify.sinks[0].alertmanager.urls[0]: "ftp://am" must be an http or https URL`},
		"url duplicate": {func(o *Options) { o.Sinks[0].Alertmanager.URLs = []string{"http://a", "http://a"} },
			"notify.sinks[0].alertmanager.urls[1]: duplicate URL http://a"},
		"label name":     {func(o *Options) { o.Sinks[0].Alertmanager.Labels = map[string]string{"a-b": "x"} }, "notify.sinks[0].alertmanager.labels.a-b: not a valid label name ([a-zA-Z_][a-zA-Z0-9_]*)"},
		"label reserved": {func(o *Options) { o.Sinks[0].Alertmanager.Labels = map[string]string{"severity": "x"} }, "notify.sinks[0].alertmanager.labels.severity: is set from the finding and cannot be configured"},
		"label empty":    {func(o *Options) { o.Sinks[0].Alertmanager.Labels = map[string]string{"team": ""} }, "notify.sinks[0].alertmanager.labels.team: an empty value is no label; remove it"},
		"link":           {func(o *Options) { o.Sinks[0].Alertmanager.Link = "/findings/{finding_id}" }, `notify.sinks[0].alertmanager.link: "/findings/0123456789abcdef" must be an http or https URL`},
		"resend":         {func(o *Options) { o.Sinks[0].Alertmanager.ResendInterval = time.Millisecond }, "notify.sinks[0].alertmanager.resend_interval: must be at least 1s, got 1ms"},
		"forget":         {func(o *Options) { o.Sinks[0].Alertmanager.ForgetAfter = 30 * time.Second }, "notify.sinks[0].alertmanager.forget_after: 30s must be longer than resend_interval 1m0s"},
		"am timeout":     {func(o *Options) { o.Sinks[0].Alertmanager.Timeout = -time.Second }, "notify.sinks[0].alertmanager.timeout: must be positive, got -1s"},
		"webhook on am":  {func(o *Options) { o.Sinks[0].Webhook.URL = "http://x" }, "notify.sinks[0].webhook: set only for kind webhook"},
		"am on webhook":  {func(o *Options) { o.Sinks[1].Alertmanager.URLs = []string{"http://x"} }, "notify.sinks[1].alertmanager: set only for kind alertmanager"},
		"no webhook url": {func(o *Options) { o.Sinks[1].Webhook.URL = "" }, "notify.sinks[1].webhook.url: required"},
		"subject token":  {func(o *Options) { o.Sinks[1].Webhook.Subjects[0] = "patrol..x" }, `notify.sinks[1].webhook.subjects[0]: "patrol..x" has an empty token`},
		"subject gt":     {func(o *Options) { o.Sinks[1].Webhook.Subjects[0] = "patrol.>.x" }, `notify.sinks[1].webhook.subjects[0]: "patrol.>.x": > must be the last token`},
		"subject wild":   {func(o *Options) { o.Sinks[1].Webhook.Subjects[0] = "patrol.find*" }, `notify.sinks[1].webhook.subjects[0]: "patrol.find*": wildcards must be whole tokens, and no spaces`},
		"subject prefix": {func(o *Options) { o.Sinks[1].Webhook.Subjects[0] = "patrol" }, `notify.sinks[1].webhook.subjects[0]: "patrol" must start with patrol. (nats.subject_prefix)`},
		"hook timeout":   {func(o *Options) { o.Sinks[1].Webhook.Timeout = -1 }, "notify.sinks[1].webhook.timeout: must be positive, got -1ns"},
	}
	for name, c := range cases {
		o := validOptions()
		c.edit(&o)
		err := o.Validate("patrol")
		if err == nil || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", name, err, c.want)
		}
	}
}

func TestBackoffDoublesToTheCap(t *testing.T) {
	var got []time.Duration
	for n := uint64(1); n <= 6; n++ {
		got = append(got, backoff(time.Second, 10*time.Second, n))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("backoff: %v, want %v", got, want)
		}
	}
}

func TestDecodeFindingEventNamesTheField(t *testing.T) {
	f := testFinding("vm/101", "vm", findings.CategoryPerformance, "high_memory", findings.SeverityWarning)
	good := envelope(t, "patrold.finding.opened", "vm/101", f)
	if _, err := decodeFindingEvent(good); err != nil {
		t.Fatalf("good event: %v", err)
	}
	bad := func(edit func(*findings.Finding)) findings.Finding { g := f; edit(&g); return g }
	for name, c := range map[string]struct {
		raw  []byte
		want string
	}{
		"type":     {envelope(t, "patrold.run.completed", "vm/101", f), `type: "patrold.run.completed" is not a finding event (patrold.finding.<[opened updated repeated resolved reopened suppressed dismissed undismissed unsuppressed]>)`},
		"id":       {envelope(t, "patrold.finding.opened", "vm/101", bad(func(g *findings.Finding) { g.ID = "0000000000000000" })), `data.finding.id: "0000000000000000" is not the identity of resource_id, category and key`},
		"severity": {envelope(t, "patrold.finding.opened", "vm/101", bad(func(g *findings.Finding) { g.Severity = "loud" })), `data.finding.severity: "loud" is not one of [info watch warning critical]`},
		"status":   {envelope(t, "patrold.finding.opened", "vm/101", bad(func(g *findings.Finding) { g.Status = "gone" })), `data.finding.status: "gone" is not active or resolved`},
		"detected": {envelope(t, "patrold.finding.opened", "vm/101", bad(func(g *findings.Finding) { g.DetectedAt = time.Time{} })), "data.finding.detected_at: required"},
		"subject":  {envelope(t, "patrold.finding.opened", "vm/102", f), `subject: "vm/102" differs from data.finding.resource_id "vm/101"`},
		"data":     {[]byte(`{"specversion":"1.0","id":"x","source":"s","type":"patrold.finding.opened","time":"2026-11-29T10:00:00Z","datacontenttype":"application/json","data":[1]}`), "data: json: cannot unmarshal array into Go value of type findings.FindingEventData"},
	} {
		_, err := decodeFindingEvent(c.raw)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s:\n got %v\nwant %s", name, err, c.want)
		}
	}
}

func envelope(t testing.TB, typ, subject string, f findings.Finding) []byte {
	t.Helper()
	data, err := json.Marshal(findings.NewFindingEventData(&f, "first", "", f.DetectedAt))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(map[string]any{"specversion": "1.0", "id": "ev-1", "source": "patrold/test", "type": typ,
		"time": "2026-11-29T10:00:00Z", "subject": subject, "datacontenttype": "application/json", "data": json.RawMessage(data)})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// FuzzDecodeFindingEvent: any payload either decodes to an event an alert
// can be built from, or is refused with an error naming a field.
func FuzzDecodeFindingEvent(f *testing.F) {
	fi := testFinding("vm/101", "vm", findings.CategoryPerformance, "high_memory", findings.SeverityWarning)
	f.Add(envelope(f, "patrold.finding.opened", "vm/101", fi))
	f.Add(envelope(f, "patrold.finding.resolved", "", fi))
	f.Add([]byte(`{"specversion":"1.0"}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		ev, err := decodeFindingEvent(raw)
		if err != nil {
			if msg := err.Error(); msg == "" || !strings.Contains(msg, ":") {
				t.Fatalf("error names no field: %q", msg)
			}
			return
		}
		if ev.Finding.Finding.ResourceID == "" || !ev.Finding.Finding.Severity.Valid() || ev.Finding.Finding.Key == "" {
			t.Fatalf("accepted an event no alert can be built from: %+v", ev.Finding)
		}
	})
}
