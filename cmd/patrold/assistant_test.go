package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/patrold/patrold/findings"
)

// TestAssistantAndApprovalsCLI: under autonomy approval a session for the
// full pool queues its write; the operator approves it from the CLI and the
// resumed session verifies the fix with a fresh read.
func TestAssistantAndApprovalsCLI(t *testing.T) {
	dir := t.TempDir()
	faults, _ := filepath.Abs("../../examples/small-faults.json")
	healthy, _ := filepath.Abs("../../examples/small-healthy.json")
	snap := filepath.Join(dir, "snapshot.json")
	data, _ := os.ReadFile(faults)
	os.WriteFile(snap, data, 0o600)
	action := filepath.Join(dir, "grow.sh")
	os.WriteFile(action, []byte("#!/bin/sh\ncp "+healthy+" "+snap+"\n"), 0o755)
	c := newCLI(t, "source: {kind: file, file: {path: "+snap+"}}\npatrol: {autonomy: approval}\n"+
		"actions: [{name: grow-pool, command: ["+action+", '{resource_id}'], risk: low, kinds: [storage], signals: [high_disk]}]\n")
	if out, code := c.run("run", "--snapshot", faults); code != 0 {
		t.Fatal(out)
	}
	id := findings.ID("storage/pve1/local-zfs", findings.CategoryCapacity, "high_disk")
	out, code := c.run("assistant", "run", "--finding", id, "--output", "json")
	var tr struct {
		Outcome    string `json:"outcome"`
		FinalState string `json:"final_state"`
		Steps      []struct {
			Tool   string `json:"tool"`
			Status string `json:"status"`
		} `json:"steps"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &tr) != nil || tr.Outcome != "fix_queued" {
		t.Fatalf("assistant run: %d %s", code, out)
	}
	out, code = c.run("approvals", "list")
	fields := strings.Fields(out)
	if code != 0 || len(fields) == 0 || !strings.Contains(out, "grow-pool") {
		t.Fatalf("approvals list: %d %s", code, out)
	}
	approval := fields[0]
	out, code = c.run("approvals", "approve", approval)
	if code != 0 || !strings.Contains(out, "fix_verified") {
		t.Fatalf("approve: %d %s", code, out)
	}
	if _, code = c.run("approvals", "approve", approval); code == 0 {
		t.Fatal("approving twice succeeded")
	}
	if _, code = c.run("assistant", "run"); code != 2 {
		t.Fatal("assistant run without --finding is not a usage error")
	}
}
