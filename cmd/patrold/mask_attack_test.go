package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/internal/leakcheck"
	"github.com/patrold/patrold/internal/modelfake"
	"github.com/patrold/patrold/model/mask"
	"github.com/patrold/patrold/snapshot"
)

// maskAttackFleet is issue 37's masking attack. Names are in typographic
// quotes, next to an em dash, in other case and in fullwidth letters.
// Labels, a backup storage, a parent not in the snapshot. IPv6 in
// another form, hosts inside a URL and an error.
const maskAttackFleet = `{"version":1,"taken_at":"2026-11-29T06:00:00Z","source":"test","resources":[
 {"id":"node/pve-alpha","kind":"node","name":"pve-alpha","status":"online","addresses":["192.0.2.10:8006"],
  "metrics":{"cpu_percent":20,"memory_percent":30},"logs":["pveproxy: peer “PVE-ALPHA”—ｐｖｅ－ａｌｐｈａ refused"]},
 {"id":"vm/210","kind":"vm","name":"billing-db","parent":"node/pve-alpha","parents":["storage/pve-alpha/local-zfs","storage/pve-gone/tank-old"],
  "status":"running","tags":["prod-eu"],"labels":{"team":"payments-core","acme.example/owner":"jdoe"},"addresses":["[fd00:20::40]:22"],
  "metrics":{"cpu_percent":5,"memory_percent":91},
  "backup":{"last_status":"failed","last_finished_at":"2026-11-29T02:00:00Z","last_success_at":"2026-11-28T02:00:00Z",
   "storage":"storage/pbs-offsite/archive-eu","last_error":"dial tcp pbs-main.corp.lan:8007: connect: connection refused"},
  "notes":"replica of “billing-db”—BILLING-DB on ｐｖｅ－ａｌｐｈａ, peer FD00:20:0::40, wiki https://wiki.corp.lan/billing, old disks on tank-old of pve-gone, owner jdoe of payments-core"},
 {"id":"storage/pve-alpha/local-zfs","kind":"storage","name":"local-zfs","parent":"node/pve-alpha","status":"online","metrics":{"usage_percent":40}}]}`

// maskAttackTerms are every name, id, label, storage, parent, address
// and host of maskAttackFleet.
var maskAttackTerms = []string{"vm/210", "node/pve-alpha", "pve-alpha", "billing-db", "storage/pve-alpha/local-zfs", "local-zfs", "prod-eu",
	"payments-core", "jdoe", "acme.example", "fd00:20::40", "192.0.2.10", "storage/pve-gone/tank-old", "pve-gone", "tank-old",
	"storage/pbs-offsite/archive-eu", "pbs-offsite", "archive-eu", "pbs-main.corp.lan", "wiki.corp.lan"}

// writeMaskFleet writes the fleet and returns its path and the
// placeholders the daemon's masker gives its ids.
func writeMaskFleet(t *testing.T, dir string) (string, *mask.Masker) {
	t.Helper()
	path := filepath.Join(dir, "fleet.json")
	if err := os.WriteFile(path, []byte(maskAttackFleet), 0o600); err != nil {
		t.Fatal(err)
	}
	snap, _, err := snapshot.Decode([]byte(maskAttackFleet), snapshot.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return path, mask.New(mask.ForSnapshot(snap))
}

// assertNoName checks every whole request body: no term in any of its
// strings (folded, JSON inside strings too), nor in its raw bytes.
func assertNoName(t *testing.T, reqs [][]byte) {
	t.Helper()
	if len(reqs) == 0 {
		t.Fatal("no request reached the model")
	}
	for i, body := range reqs {
		if leaks := leakcheck.Leaks(body, maskAttackTerms); len(leaks) > 0 {
			t.Errorf("request %d carries %q:\n%s", i+1, leaks, body)
		}
		for _, term := range maskAttackTerms {
			if bytes.Contains(bytes.ToLower(body), []byte(term)) {
				t.Errorf("request %d carries %q as bytes", i+1, term)
			}
		}
	}
}

// placeholderShape finds what a placeholder looks like.
var placeholderShape = regexp.MustCompile(`masked-(?:id|name|tag|addr)-[0-9]+`)

// TestMaskedPatrolRunSendsNoName is the attack through `patrold run`
// with model.mask_names: the model reads every resource by placeholder
// and files a finding by placeholder. No request body holds a real name;
// the finding is stored on the real guest, and nothing stored carries a
// placeholder.
func TestMaskedPatrolRunSendsNoName(t *testing.T) {
	dir := t.TempDir()
	fleet, ref := writeMaskFleet(t, dir)
	vm := ref.Mask("vm/210")
	if !strings.HasPrefix(vm, "vm/masked-id-") {
		t.Fatalf("vm/210 masks as %q", vm)
	}
	srv := modelfake.OpenAI(t,
		modelfake.Turn{Calls: []modelfake.Call{{Name: "get_resource", Args: fmt.Sprintf(`{"id":%q}`, vm)},
			{Name: "get_resource", Args: fmt.Sprintf(`{"id":%q}`, ref.Mask("node/pve-alpha"))},
			{Name: "get_resource", Args: fmt.Sprintf(`{"id":%q}`, ref.Mask("storage/pve-alpha/local-zfs"))}}},
		modelfake.Turn{Calls: []modelfake.Call{{Name: "report_finding", Args: fmt.Sprintf(`{"resource_id":%q,"category":"performance","key":"high_memory",`+
			`"severity":"warning","title":"Guest is short of memory","evidence":"memory_percent 91 on %s"}`, vm, vm)}}},
		modelfake.Turn{Text: "Filed " + vm + "."},
	)
	c := newCLIIn(t, dir, fmt.Sprintf("model: {provider: openai, mask_names: true, openai: {base_url: %q, model: fake-7b, max_retries: 0}}\n", srv.URL+"/v1"))
	out, code := c.run("run", "--snapshot", fleet, "--output", "json")
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, out)
	}
	var rep attackReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	if rep.Analysis != "model" {
		t.Fatalf("analysis %q: the model stages did not run\n%s", rep.Analysis, out)
	}
	reqs := srv.Requests()
	assertNoName(t, reqs)
	// Every field reached the model, masked: the reads came back.
	if !leakcheck.Carries(reqs[1], "old disks on "+ref.Mask("tank-old")) || !leakcheck.Carries(reqs[1], "dial tcp "+ref.Mask("pbs-main.corp.lan")+":8007") {
		t.Errorf("the guest's notes and backup error did not reach the model masked:\n%s", reqs[1])
	}
	if placeholderShape.MatchString(out) {
		t.Errorf("the report carries a placeholder:\n%s", out)
	}
	db := openDB(t, c.dir)
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM findings WHERE resource_id = 'vm/210' AND key = 'high_memory' AND status = 'active'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("high_memory on vm/210: %d findings, err %v", n, err)
	}
	if err := db.QueryRow(`SELECT count(*) FROM findings WHERE resource_id LIKE '%masked-%' OR title LIKE '%masked-%' OR evidence LIKE '%masked-%'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d findings carry a placeholder, err %v", n, err)
	}
}

// TestMaskedAssistantRunSendsNoName is the attack through `patrold
// assistant run` with model.mask_names: the session reads the finding,
// its target and the guest by placeholder, then answers.
// No request body holds a real name; the transcript has the real ones.
func TestMaskedAssistantRunSendsNoName(t *testing.T) {
	dir := t.TempDir()
	fleet, ref := writeMaskFleet(t, dir)
	vm := ref.Mask("vm/210")
	srv := modelfake.OpenAI(t,
		modelfake.Turn{Calls: []modelfake.Call{{Name: assistant.ToolGetFinding, Args: `{}`}}},
		modelfake.Turn{Calls: []modelfake.Call{{Name: assistant.ToolResolveTarget, Args: `{}`}}},
		modelfake.Turn{Calls: []modelfake.Call{{Name: assistant.ToolGetResource, Args: fmt.Sprintf(`{"id":%q}`, vm)}}},
		modelfake.Turn{Text: "Read the pool and its guest; nothing to change."},
	)
	c := newCLIIn(t, dir, fmt.Sprintf("source: {kind: file, file: {path: %q}}\npatrol: {autonomy: approval}\n"+
		"model: {provider: openai, mask_names: true, openai: {base_url: %q, model: fake-7b, max_retries: 0}}\n", fleet, srv.URL+"/v1"))
	id := seedFinding(t, filepath.Join(dir, "var", "patrold.db"), "storage/pve-alpha/local-zfs", "high_disk", "capacity")
	out, code := c.run("assistant", "run", "--finding", id, "--output", "json")
	if code != 0 {
		t.Fatalf("assistant run: exit %d: %s", code, out)
	}
	var tr assistant.Transcript
	if err := json.Unmarshal([]byte(out), &tr); err != nil {
		t.Fatalf("transcript: %v: %s", err, out)
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	assertNoName(t, reqs)
	if !leakcheck.Carries(reqs[3], "old disks on "+ref.Mask("tank-old")) {
		t.Errorf("the guest's notes did not reach the model masked:\n%s", reqs[3])
	}
	if want := "Read the pool and its guest; nothing to change."; tr.FinalAnswer.String() != want {
		t.Errorf("final answer %q, want %q", tr.FinalAnswer, want)
	}
	if placeholderShape.MatchString(out) || len(tr.Steps) != 3 || tr.Steps[2].Status != "ok" {
		t.Errorf("the reads by placeholder did not reach the real resources:\n%s", out)
	}
}
