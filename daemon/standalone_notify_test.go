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
// daemon and receives, signed, the finding event of every new finding.
func TestNotifyInServe(t *testing.T) {
	var mu sync.Mutex
	var got []string
	secret := []byte("in-serve-secret")
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ev struct {
			Type string `json:"type"`
			Data struct {
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
		got = append(got, ev.Type+" "+ev.Data.Finding.ID)
		mu.Unlock()
	}))
	defer hook.Close()
	dir := t.TempDir()
	useSnapshot(t, dir, "faults.json")
	cfg := testConfig(t, dir, "", "")
	secretFile := dir + "/hook.secret"
	if err := writeSecret(secretFile, secret); err != nil {
		t.Fatal(err)
	}
	cfg.Notify = notify.Options{InServe: true, Sinks: []notify.SinkOptions{
		{Name: "hook", Kind: notify.KindWebhook, Webhook: notify.WebhookOptions{URL: hook.URL, SecretFile: secretFile}}}}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	d := start(t, cfg)
	rep, err := d.RunNow(context.Background(), patrol.TriggerManual)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range rep.Findings {
		want = append(want, "patrold.finding.opened "+f.ID)
	}
	slices.Sort(want)
	testkit.EventuallyState(t, 15*time.Second, "the webhook got every opened finding", func() (bool, string) {
		mu.Lock()
		have := slices.Sorted(slices.Values(got))
		mu.Unlock()
		return slices.Equal(have, want), fmt.Sprintf("webhook got\n%v\nwant\n%v", have, want)
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
