package mask_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"pgregory.net/rapid"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/leakcheck"
	"github.com/patrold/patrold/internal/modelfake"
	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/anthropic"
	"github.com/patrold/patrold/model/mask"
	"github.com/patrold/patrold/model/openai"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/patrol/analyst"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

var leakNow = time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)

// leakAPIs are the wire formats a hosted model speaks, each a real
// client of a fake server on loopback.
var leakAPIs = []struct {
	name   string
	server func(testing.TB, ...modelfake.Turn) *modelfake.Server
	client func(*modelfake.Server) (model.Provider, error)
}{
	{"openai", modelfake.OpenAI, func(srv *modelfake.Server) (model.Provider, error) {
		return openai.New(openai.Options{Endpoint: model.EndpointOptions{BaseURL: srv.URL + "/v1", Model: "fake-7b", Timeout: 20 * time.Second}})
	}},
	{"anthropic", modelfake.Anthropic, func(srv *modelfake.Server) (model.Provider, error) {
		return anthropic.New(anthropic.Options{Endpoint: model.EndpointOptions{BaseURL: srv.URL, Model: "fake-7b", Timeout: 20 * time.Second}})
	}},
}

// leakFleet is a drawn fleet: a node, a guest and a backup datastore,
// every name drawn. Every free-text field carries every name in a drawn
// variant, after a mark that shows the field reached the model.
type leakFleet struct {
	snap   *snapshot.Snapshot
	active []findings.Finding
	terms  []string // every name, id and address that must not leave
	marks  []string // one per free-text field
}

func drawFleet(t *rapid.T) leakFleet {
	n := leakcheck.Names(t, 13)
	node, guest, pool, goneNode, goneStore, pbsNode, pbsStore, job, tag, label, domain, errHost, urlHost :=
		n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7], n[8], n[9], n[10], n[11], n[12]
	vmID := fmt.Sprintf("vm/%d", rapid.IntRange(1000, 9999).Draw(t, "vmid"))
	ctID := fmt.Sprintf("ct/%d", rapid.IntRange(1000, 9999).Draw(t, "ctid"))
	octet := rapid.IntRange(100, 250)
	v4 := fmt.Sprintf("10.%d.%d.%d", octet.Draw(t, "a"), octet.Draw(t, "b"), octet.Draw(t, "c"))
	v6 := fmt.Sprintf("fd%02x:%x::%x", rapid.IntRange(16, 255).Draw(t, "p"), rapid.IntRange(4096, 65535).Draw(t, "q"), rapid.IntRange(4096, 65535).Draw(t, "r"))
	fl := leakFleet{terms: []string{node, guest, pool, goneNode, goneStore, pbsNode, pbsStore, job, tag, label, domain, errHost, urlHost,
		vmID, ctID, "node/" + node, "storage/" + node + "/" + pool, v4, v6}}
	written := append([]string(nil), fl.terms...)
	text := func(field string) string {
		mark := "qqmark-" + field
		fl.marks = append(fl.marks, mark)
		return leakcheck.Text(t, field, mark, written)
	}
	poolID := "storage/" + node + "/" + pool
	at := leakNow.Add(-4 * time.Hour)
	resources := []snapshot.Resource{
		{ID: "node/" + node, Kind: snapshot.KindNode, Name: node, Status: "online", Addresses: []string{v4 + ":8006"},
			Metrics: snapshot.Metrics{{Name: "cpu_percent", Value: 20}, {Name: "memory_percent", Value: 30}}, Logs: []string{text("node-log")}},
		{ID: vmID, Kind: snapshot.KindVM, Name: guest, Parent: "node/" + node, Parents: []string{poolID, "storage/" + goneNode + "/" + goneStore},
			Status: "running", Tags: []string{tag}, Labels: map[string]string{"team": label, domain + "/owner": "x1"},
			Addresses: []string{"[" + v6 + "]:22"}, Metrics: snapshot.Metrics{{Name: "memory_percent", Value: 93}, {Name: "cpu_percent", Value: 5}},
			Backup: &snapshot.Backup{LastStatus: "failed", LastFinishedAt: &at, LastSuccessAt: &at, Storage: "storage/" + pbsNode + "/" + pbsStore,
				LastError: text("backup-error") + " lookup " + errHost + ": no such host"},
			Notes: text("notes") + " https://" + urlHost + "/wiki", Logs: []string{text("guest-log"), text("guest-log-2")}},
		{ID: poolID, Kind: snapshot.KindStorage, Name: pool, Parent: "node/" + node, Status: "online",
			Metrics: snapshot.Metrics{{Name: "usage_percent", Value: 40}},
			BackupStore: &snapshot.BackupStore{Jobs: []snapshot.Job{{ID: job, Type: "verify", LastStatus: "failed", LastFinishedAt: &at, LastError: text("job-error")}},
				VerifyFailed: []string{ctID + "/2026-11-28T02:00:00Z"}}},
	}
	fl.snap = &snapshot.Snapshot{Version: snapshot.Version, TakenAt: leakNow, Source: "test", Resources: resources}
	fl.active = []findings.Finding{{ID: "f-1", Key: "high_memory", ResourceID: vmID, ResourceName: guest, Category: findings.CategoryPerformance,
		Severity: findings.SeverityWarning, Source: findings.SourceDeterministic, Title: text("finding-title"), Evidence: text("finding-evidence"),
		DetectedAt: leakNow.Add(-time.Hour), LastSeenAt: leakNow.Add(-time.Hour), TimesRaised: 1, Status: findings.StatusActive}}
	return fl
}

// TestPropertyPatrolRunSendsNoName is the property of model.mask_names
// in a patrol run. Names are drawn and free text writes them in every
// variant (leakcheck.Variants). No request body holds one, in any
// string, folded. The model reads every resource by placeholder, so
// every free-text field is in a body (its mark is).
func TestPropertyPatrolRunSendsNoName(t *testing.T) {
	pol, err := alerts.New(alerts.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	for _, api := range leakAPIs {
		t.Run(api.name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				fl := drawFleet(rt)
				ref := mask.New(mask.ForSnapshot(fl.snap, fl.active[0].ResourceID))
				var reads []modelfake.Call
				for _, r := range fl.snap.Resources {
					reads = append(reads, modelfake.Call{Name: analyst.ToolGetResource, Args: fmt.Sprintf(`{"id":%q}`, ref.Mask(r.ID))})
				}
				srv := api.server(t, modelfake.Turn{Calls: reads}, modelfake.Turn{Text: "Read them all."})
				provider, err := api.client(srv)
				if err != nil {
					rt.Fatal(err)
				}
				a, err := analyst.New(analyst.Options{Provider: provider, Model: "fake-7b", Registerer: prometheus.NewRegistry(), MaskNames: true, Now: func() time.Time { return leakNow }})
				if err != nil {
					rt.Fatal(err)
				}
				act := signals.Active{{Type: signals.TypeHighMemory, ResourceID: fl.active[0].ResourceID}: true}
				in := patrol.AnalysisInput{RunID: "run-1", Now: leakNow, Snapshot: fl.snap, Signals: signals.Detect(fl.snap, pol, act), Active: fl.active, Thresholds: pol}
				if _, err := a.Analyze(context.Background(), in); err != nil {
					rt.Fatal(err)
				}
				reqs := srv.Requests()
				if len(reqs) < 2 {
					rt.Fatalf("%d requests", len(reqs))
				}
				for i, body := range reqs {
					if leaks := leakcheck.Leaks(body, fl.terms); len(leaks) > 0 {
						rt.Fatalf("request %d carries %q:\n%s", i+1, leaks, body)
					}
				}
				for _, mark := range fl.marks {
					if !anyCarries(reqs, mark) {
						rt.Fatalf("no request carries the field %s", mark)
					}
				}
			})
		})
	}
}

func anyCarries(reqs [][]byte, text string) bool {
	for _, b := range reqs {
		if leakcheck.Carries(b, text) {
			return true
		}
	}
	return false
}
