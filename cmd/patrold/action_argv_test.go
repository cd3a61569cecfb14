package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/patrold/patrold/agent"
	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/store"
	"github.com/patrold/patrold/store/storetest"
)

// TestActionArgvOptionRefused: a placeholder value that starts with "-"
// never reaches an action's argv (issue 37 item 9: a source id "--all"
// reached the argv as "--all"). A snapshot can no longer carry such an id,
// so the value here is a stored finding's key (a row written by hand or
// by an older patrold). A fully compliant model resolves the target and
// runs the action: the registry refuses it, POLICY_BLOCKED by the
// target_kind check, and the executor never starts.
func TestActionArgvOptionRefused(t *testing.T) {
	dir := t.TempDir()
	snap := filepath.Join(dir, "snapshot.json")
	if err := os.WriteFile(snap, []byte(fleet(96.3)), 0o600); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(dir, "executed")
	act := filepath.Join(dir, "action.sh")
	if err := os.WriteFile(act, []byte("#!/bin/sh\necho \"$@\" >> "+marker+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "script.yaml")
	turns := "turns:\n  - tool_calls: [{name: resolve_target, arguments: {}}]\n  - tool_calls: [{name: run_action, arguments: {action: prune}}]\n  - text: \"Cannot.\"\n"
	if err := os.WriteFile(script, []byte(turns), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newCLI(t, fmt.Sprintf("source: {kind: file, file: {path: %q}}\npatrol: {autonomy: full}\nmodel: {provider: script, script: {path: %q}}\n"+
		"actions:\n  - {name: prune, description: prune snapshots, risk: low, kinds: [storage], signals: [\"*\"], command: [%q, \"{resource_id}\", \"{key}\"]}\n",
		snap, script, act))
	dbPath := filepath.Join(c.dir, "var", "patrold.db")
	id := seedFinding(t, dbPath, "storage/pve1/local-zfs", "high_disk", "capacity")
	st, err := store.Open(context.Background(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := storetest.RawDB(t, st.Path()).Exec(`UPDATE findings SET key = '--all' WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
	st.Close()

	out, code := c.run("assistant", "run", "--finding", id, "--output", "json")
	if code != 0 {
		t.Fatalf("assistant run: exit %d: %s", code, out)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the executor ran the action: %v", err)
	}
	var tr assistant.Transcript
	if err := json.Unmarshal([]byte(out), &tr); err != nil {
		t.Fatalf("transcript: %v: %s", err, out)
	}
	want := assistant.Transcript{SessionID: tr.SessionID, FindingID: id, Driver: contracts.DriverModel, Outcome: contracts.OutcomeCannotFix, FinalState: agent.StateReading,
		Steps: []assistant.Step{
			{Turn: 1, Tool: "resolve_target", Kind: agent.KindResolve, Status: agent.StatusOK, StateBefore: agent.StateResolving, StateAfter: agent.StateReading},
			{Turn: 2, Tool: "run_action", Kind: agent.KindWrite, Status: agent.StatusBlocked, Code: agent.CodePolicyBlocked,
				StateBefore: agent.StateReading, StateAfter: agent.StateReading},
		},
		FinalAnswer: tr.FinalAnswer}
	if !reflect.DeepEqual(tr, want) || tr.FinalAnswer.String() != "Cannot." {
		t.Fatalf("transcript\n%+v\nwant\n%+v and the answer \"Cannot.\"", tr, want)
	}
	// What the model was told, whole.
	st, err = store.Open(context.Background(), dbPath)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec, err := assistant.SessionExchange(context.Background(), st, tr.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	var refusal map[string]any
	for _, ex := range rec.Exchanges {
		for _, m := range ex.Request.Messages {
			if m.Role == model.RoleTool && m.ToolName == "run_action" {
				for _, line := range strings.Split(m.Content, "\n") {
					var env struct {
						Error map[string]any `json:"error"`
					}
					if json.Unmarshal([]byte(line), &env) == nil && env.Error != nil {
						refusal = env.Error
					}
				}
			}
		}
	}
	wantRefusal := map[string]any{"code": "POLICY_BLOCKED",
		"message": `action prune is not run on this finding: the value of {key} in command[2] starts with "-": the program would read it as an option`,
		"details": map[string]any{"action": "prune", "check": "target_kind"}}
	if !reflect.DeepEqual(refusal, wantRefusal) {
		t.Fatalf("the model saw\n%v\nwant\n%v", refusal, wantRefusal)
	}
}
