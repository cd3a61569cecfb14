package assistant

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/leakcheck"
	"github.com/patrold/patrold/internal/modelfake"
	"github.com/patrold/patrold/model/mask"
	"github.com/patrold/patrold/snapshot/file"
)

// drawnFleet is the fixture's fleet with drawn names around its pool: a
// guest with parents, labels, addresses and a backup, and a datastore
// job. Every free-text field carries every name in a drawn variant,
// after a mark.
type drawnFleet struct {
	doc      []byte
	evidence string
	guest    string // the guest's id
	terms    []string
	marks    []string
}

func drawSessionFleet(t *rapid.T) drawnFleet {
	n := leakcheck.Names(t, 10)
	guest, goneNode, goneStore, pbsNode, pbsStore, job, tag, label, errHost, urlHost := n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7], n[8], n[9]
	vmID := fmt.Sprintf("vm/%d", rapid.IntRange(1000, 9999).Draw(t, "vmid"))
	ctID := fmt.Sprintf("ct/%d", rapid.IntRange(1000, 9999).Draw(t, "ctid"))
	octet := rapid.IntRange(100, 250)
	v4 := fmt.Sprintf("10.%d.%d.%d", octet.Draw(t, "a"), octet.Draw(t, "b"), octet.Draw(t, "c"))
	v6 := fmt.Sprintf("fd%02x:%x::%x", rapid.IntRange(16, 255).Draw(t, "p"), rapid.IntRange(4096, 65535).Draw(t, "q"), rapid.IntRange(4096, 65535).Draw(t, "r"))
	fl := drawnFleet{guest: vmID, terms: []string{guest, goneNode, goneStore, pbsNode, pbsStore, job, tag, label, errHost, urlHost,
		vmID, ctID, v4, v6, testResource, "node/pve1", "pve1", "local-zfs"}}
	written := append([]string(nil), fl.terms...)
	text := func(field string) string {
		mark := "qqmark-" + field
		fl.marks = append(fl.marks, mark)
		return leakcheck.Text(t, field, mark, written)
	}
	at := t0.Add(-4 * time.Hour).Format(time.RFC3339)
	doc := map[string]any{"version": 1, "taken_at": t0.Format(time.RFC3339), "source": "test", "resources": []any{
		map[string]any{"id": "node/pve1", "kind": "node", "name": "pve1", "status": "online", "addresses": []string{v4 + ":8006"},
			"metrics": map[string]float64{"cpu_percent": 10, "memory_percent": 20}, "logs": []string{text("node-log")}},
		map[string]any{"id": vmID, "kind": "vm", "name": guest, "parent": "node/pve1", "parents": []string{testResource, "storage/" + goneNode + "/" + goneStore},
			"status": "running", "tags": []string{tag}, "labels": map[string]string{"team": label}, "addresses": []string{"[" + v6 + "]:22"},
			"metrics": map[string]float64{"cpu_percent": 5, "memory_percent": 40},
			"backup": map[string]any{"last_status": "failed", "last_finished_at": at, "last_success_at": at, "storage": "storage/" + pbsNode + "/" + pbsStore,
				"last_error": text("backup-error") + " lookup " + errHost + ": no such host"},
			"notes": text("guest-notes") + " https://" + urlHost + "/wiki", "logs": []string{text("guest-log")}},
		map[string]any{"id": testResource, "kind": "storage", "name": "local-zfs", "parent": "node/pve1", "status": "online",
			"notes": text("pool-notes"), "metrics": map[string]float64{"usage_percent": 96.3},
			"backup_store": map[string]any{"jobs": []any{map[string]any{"id": job, "type": "verify", "last_status": "failed", "last_finished_at": at, "last_error": text("job-error")}},
				"verify_failed": []string{ctID + "/2026-11-28T02:00:00Z"}}},
	}}
	var err error
	if fl.doc, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	fl.evidence = text("finding-evidence")
	return fl
}

// TestPropertySessionSendsNoName is the property of model.mask_names in
// an investigation session, through the real session path and both wire
// formats. Names are drawn and free text (the snapshot's and the
// finding's) writes them in every variant. The model reads the finding,
// its target and every resource by placeholder. No request body holds a
// name in any string, folded; every free-text field reached a body.
func TestPropertySessionSendsNoName(t *testing.T) {
	for _, api := range maskedAPIs {
		t.Run(api.name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				fl := drawSessionFleet(rt)
				fx := newFixture(t)
				for _, path := range []string{fx.snapPath, fx.goodPath} {
					if err := os.WriteFile(path, fl.doc, 0o600); err != nil {
						rt.Fatal(err)
					}
				}
				fx.finding = fx.seed(testResource, testKey, "performance", fl.evidence)
				ref := mask.New(findingVocabulary(&fx.finding))
				src, err := file.New(file.Options{Path: fx.snapPath})
				if err != nil {
					rt.Fatal(err)
				}
				snap, _, err := src.Collect(context.Background())
				if err != nil {
					rt.Fatal(err)
				}
				ref.Add(mask.ForSnapshot(snap, fx.finding.ResourceID))
				srv := api.server(t,
					modelfake.Turn{Calls: []modelfake.Call{{Name: ToolGetFinding, Args: `{}`}}},
					modelfake.Turn{Calls: []modelfake.Call{{Name: ToolResolveTarget, Args: `{}`}}},
					modelfake.Turn{Calls: []modelfake.Call{{Name: ToolGetResource, Args: fmt.Sprintf(`{"id":%q}`, ref.Mask(fl.guest))},
						{Name: ToolGetResource, Args: fmt.Sprintf(`{"id":%q}`, ref.Mask("node/pve1"))}}},
					modelfake.Turn{Text: "Read them all; nothing to change."},
				)
				fx.run(fx.assistant(fx.masked(t, findings.AutonomyApproval, api.client, srv)))
				reqs := srv.Requests()
				if len(reqs) != 4 {
					rt.Fatalf("%d requests, want 4", len(reqs))
				}
				for i, body := range reqs {
					if leaks := leakcheck.Leaks(body, fl.terms); len(leaks) > 0 {
						rt.Fatalf("request %d carries %q:\n%s", i+1, leaks, body)
					}
				}
				for _, mark := range fl.marks {
					if !carried(reqs, mark) {
						rt.Fatalf("no request carries the field %s:\n%s", mark, reqs[len(reqs)-1])
					}
				}
			})
		})
	}
}

func carried(reqs [][]byte, text string) bool {
	for _, b := range reqs {
		if leakcheck.Carries(b, text) {
			return true
		}
	}
	return false
}
