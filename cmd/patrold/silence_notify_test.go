package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/patrold/patrold/bus/embedded/natstest"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/patrol"
)

// hookBodies records the bodies a webhook receiver accepted, by type.
type hookBodies struct {
	mu     sync.Mutex
	byType map[string][][]byte
}

func (h *hookBodies) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var env struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(body, &env)
	h.mu.Lock()
	h.byType[env.Type] = append(h.byType[env.Type], body)
	h.mu.Unlock()
}

func (h *hookBodies) last(typ string) []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	if b := h.byType[typ]; len(b) > 0 {
		return b[len(b)-1]
	}
	return nil
}

// TestSilencedResolutionReachesEverySink: a finding Alertmanager shows
// clears under a patrold silence. Its alert leaves a real Alertmanager
// before the silence even ends (so within resend_interval of its end), the
// resolved event is on the stream and the webhook got it byte for byte.
// Reopened under the silence it stays quiet; the silence's end raises the
// alert again.
func TestSilencedResolutionReachesEverySink(t *testing.T) {
	am := startAlertmanager(t)
	url, _ := startExternalNATS(t)
	hook := &hookBodies{byType: map[string][][]byte{}}
	hs := httptest.NewServer(hook)
	t.Cleanup(hs.Close)
	faults, _ := filepath.Abs("../../examples/small-faults.json")
	dir := t.TempDir()
	snap := filepath.Join(dir, "snapshot.json")
	const disk = "storage/pve1/local-zfs"
	setUsage(t, faults, snap, disk, 96.3)
	c := newCLI(t, "http: {listen: '"+freeAddr(t)+"'}\nnats: {url: '"+url+"'}\nlog: {level: warn}\n"+
		"schedule: {startup_delay: 1h}\nsource: {kind: file, file: {path: "+snap+"}}\n"+
		"notify:\n  sinks:\n"+
		"    - {name: am, kind: alertmanager, backoff: 200ms, max_backoff: 1s, max_deliver: 1000,\n"+
		"       alertmanager: {urls: ['http://"+am.addr+"'], labels: {team: infra}, resend_interval: 1s,\n"+
		"                      link: 'https://patrold.example/findings/{finding_id}'}}\n"+
		"    - {name: hook, kind: webhook, backoff: 200ms, max_backoff: 1s, webhook: {url: '"+hs.URL+"'}}\n")
	d := startDaemon(t, c)
	ctx := context.Background()
	if _, err := d.RunNow(ctx, patrol.TriggerManual); err != nil {
		t.Fatal(err)
	}
	want := expectedAlerts(t, d.Store())
	testkit.EventuallyState(t, 20*time.Second, "alerts after the first run", func() (bool, string) { return matchAlerts(am, want, "") })

	now := time.Now()
	sil, err := d.Store().AddSilence(ctx, findings.Silence{Matchers: findings.Matchers{Resource: disk}, Comment: "disk swap", Author: "ops",
		EndsAt: now.Add(time.Hour)}, now)
	if err != nil {
		t.Fatal(err)
	}
	setUsage(t, faults, snap, disk, 50)
	rep, err := d.RunNow(ctx, patrol.TriggerManual)
	if err != nil || len(rep.Resolved) != 1 {
		t.Fatalf("run under the silence: %v, resolved %v", err, rep.Resolved)
	}
	id := rep.Resolved[0]
	want = expectedAlerts(t, d.Store())
	testkit.EventuallyState(t, 20*time.Second, "the alert of the finding resolved under the silence ends", func() (bool, string) {
		return matchAlerts(am, want, "")
	})

	// The stream and the webhook hold the whole resolved event.
	f, err := d.Store().Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	subject, typ := findings.FindingSubject(findings.EventResolved, f.Severity)
	var hooked []byte
	testkit.EventuallyState(t, 20*time.Second, "the webhook got the resolution", func() (bool, string) {
		hooked = hook.last(typ)
		return hooked != nil, string(hook.last(""))
	})
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stream, err := natstest.JetStream(t, url).Stream(sctx, "PATROL")
	if err != nil {
		t.Fatal(err)
	}
	msg, err := stream.GetLastMsgForSubject(sctx, "patrol."+subject)
	if err != nil {
		t.Fatalf("resolved event on the stream: %v", err)
	}
	if string(msg.Data) != string(hooked) {
		t.Fatalf("webhook body differs from the stream:\n%s\n%s", hooked, msg.Data)
	}
	var env struct {
		Type    string          `json:"type"`
		Subject string          `json:"subject"`
		Data    json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(msg.Data, &env); err != nil {
		t.Fatal(err)
	}
	var gotData, wantData any
	wantRaw, _ := json.Marshal(findings.NewFindingEventData(&f, findings.ReasonResolved, f.LastRunID, *f.ResolvedAt))
	_ = json.Unmarshal(wantRaw, &wantData)
	if err := json.Unmarshal(env.Data, &gotData); err != nil {
		t.Fatal(err)
	}
	if env.Type != typ || env.Subject != disk || !reflect.DeepEqual(gotData, wantData) {
		t.Fatalf("resolved event %s %s\n%s\nwant data\n%s", env.Type, env.Subject, env.Data, wantRaw)
	}
	if f.Status != findings.StatusResolved || !f.Silenced {
		t.Fatalf("finding %s: status %s silenced %v, want resolved under the silence", id, f.Status, f.Silenced)
	}

	// Back under the silence: held. The silence's end raises it again.
	setUsage(t, faults, snap, disk, 96.3)
	if _, err := d.RunNow(ctx, patrol.TriggerManual); err != nil {
		t.Fatal(err)
	}
	if err := d.Store().ExpireSilence(ctx, sil.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := d.RunNow(ctx, patrol.TriggerManual); err != nil {
		t.Fatal(err)
	}
	want = expectedAlerts(t, d.Store())
	testkit.EventuallyState(t, 20*time.Second, "the alert is back after the silence ended", func() (bool, string) { return matchAlerts(am, want, id) })
}
