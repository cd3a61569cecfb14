package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/notify"
	"github.com/patrold/patrold/patrol"
)

// TestNotifyInServe: with notify.in_serve a webhook sink runs inside the
// daemon and receives, signed, the finding event of every new finding;
// its dataref, and the alert's generatorURL an Alertmanager sink posts,
// are the finding's web page under http.public_url.
func TestNotifyInServe(t *testing.T) {
	const public = "https://patrold.example.net/ops"
	var mu sync.Mutex
	var got, links []string
	secret := []byte("in-serve-secret")
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev struct {
			Type    string `json:"type"`
			DataRef string `json:"dataref"`
			Data    struct {
				Finding struct {
					ID string `json:"id"`
				} `json:"finding"`
			} `json:"data"`
		}
		if !notify.Verify(secret, body, r.Header.Get(notify.HeaderSignature)) || json.Unmarshal(body, &ev) != nil {
			http.Error(w, "bad signature or body", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, ev.Type+" "+ev.Data.Finding.ID+" "+ev.DataRef)
		mu.Unlock()
	}))
	defer hook.Close()
	am := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var alerts []struct {
			Labels       map[string]string `json:"labels"`
			GeneratorURL string            `json:"generatorURL"`
		}
		if r.URL.Path != "/api/v2/alerts" || json.NewDecoder(r.Body).Decode(&alerts) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, a := range alerts {
			links = append(links, a.Labels["finding_id"]+" "+a.GeneratorURL)
		}
		mu.Unlock()
	}))
	defer am.Close()
	dir := t.TempDir()
	useSnapshot(t, dir, "faults.json")
	cfg := testConfig(t, dir, "", "")
	secretFile := dir + "/hook.secret"
	if err := writeSecret(secretFile, secret); err != nil {
		t.Fatal(err)
	}
	cfg.Notify = notify.Options{InServe: true, Sinks: []notify.SinkOptions{
		{Name: "hook", Kind: notify.KindWebhook, Webhook: notify.WebhookOptions{URL: hook.URL, SecretFile: secretFile}},
		{Name: "am", Kind: notify.KindAlertmanager, Alertmanager: notify.AlertmanagerOptions{URLs: []string{am.URL}}}}}
	cfg.HTTP.PublicURL = public + "/"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	d := start(t, cfg)
	rep, err := d.RunNow(context.Background(), patrol.TriggerManual)
	if err != nil {
		t.Fatal(err)
	}
	var want, wantLinks []string
	for _, f := range rep.Findings {
		want = append(want, "patrold.finding.opened "+f.ID+" "+public+"/ui/findings/"+f.ID)
		wantLinks = append(wantLinks, f.ID+" "+public+"/ui/findings/"+f.ID)
	}
	slices.Sort(want)
	slices.Sort(wantLinks)
	testkit.EventuallyState(t, 15*time.Second, "the webhook got every opened finding, the alertmanager its alert", func() (bool, string) {
		mu.Lock()
		have := slices.Sorted(slices.Values(got))
		haveLinks := slices.Compact(slices.Sorted(slices.Values(links)))
		mu.Unlock()
		return slices.Equal(have, want) && slices.Equal(haveLinks, wantLinks),
			fmt.Sprintf("webhook got\n%v\nwant\n%v\nalertmanager got\n%v\nwant\n%v", have, want, haveLinks, wantLinks)
	})
	root, err := daemon.NewRoot(cfg, daemon.RootOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	err = root.Notify(context.Background(), "", nil)
	if want := `nats.url: required for patrold notify when nats.embedded.listen ("127.0.0.1:0") names no fixed port`; err == nil || err.Error() != want {
		t.Fatalf("patrold notify with an embedded listen port 0: %v, want %s", err, want)
	}
}

func writeSecret(path string, b []byte) error { return os.WriteFile(path, b, 0o600) }
