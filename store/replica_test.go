package store_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/store"
	"github.com/patrold/patrold/store/records"
	"github.com/patrold/patrold/store/storetest"
)

// TestDropUnsentKeepsTheNamedTypes: a deposed writer's outbox loses every
// unsent event but the kept types; sent rows are never touched.
func TestDropUnsentKeepsTheNamedTypes(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	row := func(id, typ string) findings.OutboxEvent {
		return findings.OutboxEvent{ID: id, Subject: "x.y", Type: typ, Time: at, Data: json.RawMessage(`{}`)}
	}
	if err := st.Enqueue(ctx, row("sent", "patrold.finding.opened")); err != nil {
		t.Fatal(err)
	}
	pending, _ := st.PendingEvents(ctx, 10)
	if err := st.MarkSent(ctx, []int64{pending[0].Seq}, at); err != nil {
		t.Fatal(err)
	}
	if err := st.Enqueue(ctx, row("a", "patrold.finding.opened"), row("b", "patrold.state.change"), row("c", "patrold.remediation.outcome")); err != nil {
		t.Fatal(err)
	}
	n, err := st.DropUnsent(ctx, "patrold.remediation.outcome")
	if err != nil || n != 2 {
		t.Fatalf("DropUnsent = %d, %v; want 2", n, err)
	}
	left, err := st.PendingEvents(ctx, 10)
	if err != nil || len(left) != 1 || left[0].ID != "c" {
		t.Fatalf("left pending: %+v %v; want only c", left, err)
	}
}

// TestDivergenceOutlivesARestartUntilReseeded: the divergence is recorded
// with the dropped rows in the database itself, so a second start still
// knows. A copy that is itself diverged, or of another schema version, is
// refused and changes nothing. A good copy ends the divergence.
func TestDivergenceOutlivesARestartUntilReseeded(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "patrold.db")
	st, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	change := `{"origin":"a","epoch":1,"n":1,"table":"silences","op":"upsert","rowid":3,"row":{"id":"sil-1"}}`
	if err := st.Enqueue(ctx, findings.OutboxEvent{ID: "st-1", Subject: "x.y", Type: "patrold.state.change", ResourceID: "silences", Time: at, Data: json.RawMessage(change)},
		findings.OutboxEvent{ID: "ev-1", Subject: "x.y", Type: "patrold.finding.acknowledged", ResourceID: "f-1", Time: at, Data: json.RawMessage(`{}`)},
		findings.OutboxEvent{ID: "oc-1", Subject: "x.y", Type: "patrold.remediation.outcome", ResourceID: "f-1", Time: at, Data: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.db")
	if _, err := st.SeedCopy(ctx, good); err != nil {
		t.Fatal(err)
	}
	d, err := st.DropDiverged(ctx, "b", at, "patrold.remediation.outcome")
	if err != nil {
		t.Fatal(err)
	}
	want := records.Divergence{Since: at, LastWriter: "b", Count: 2,
		Rows: []records.DroppedRow{{Kind: "silences upsert", ID: "sil-1"}, {Kind: "patrold.finding.acknowledged", ID: "f-1"}}}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("DropDiverged = %+v, want %+v", d, want)
	}
	if left, err := st.PendingEvents(ctx, 10); err != nil || len(left) != 1 || left[0].ID != "oc-1" {
		t.Fatalf("left pending: %+v %v; want only the outcome", left, err)
	}
	diverged := filepath.Join(dir, "diverged.db")
	if _, err := st.SeedCopy(ctx, diverged); err != nil {
		t.Fatal(err)
	}
	raw := storetest.RawDB(t, diverged)
	if _, err := raw.Exec(`UPDATE replica_state SET diverged = '{"last_writer":"c"}'`); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "old.db")
	if _, err := st.SeedCopy(ctx, old); err != nil {
		t.Fatal(err)
	}
	raw = storetest.RawDB(t, old)
	if _, err := raw.Exec(`INSERT INTO goose_db_version (version_id, is_applied) VALUES (9999, 1)`); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st, err = store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if got, err := st.Divergence(ctx); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Divergence after a restart = %+v, %v; want %+v", got, err, want)
	}
	before := storetest.DumpDB(t, path)
	for copyPath, wantErr := range map[string]string{
		diverged: "reseed from " + diverged + ": the copy is itself diverged",
		old:      "reseed from " + old + ": migrate: schema version 9999",
	} {
		if _, err := st.Reseed(ctx, copyPath); err == nil || !strings.HasPrefix(err.Error(), wantErr) {
			t.Errorf("Reseed(%s) = %v, want %q...", filepath.Base(copyPath), err, wantErr)
		}
		storetest.SameDB(t, "after a refused copy", storetest.DumpDB(t, path), before)
	}
	if _, err := st.Reseed(ctx, good); err != nil {
		t.Fatal(err)
	}
	if got, err := st.Divergence(ctx); err != nil || got.Diverged() {
		t.Fatalf("Divergence after the re-seed = %+v, %v", got, err)
	}
	if left, err := st.PendingEvents(ctx, 10); err != nil || len(left) != 1 || left[0].ID != "oc-1" {
		t.Fatalf("the re-seed touched the outbox: %+v %v", left, err)
	}
}

// TestReseedRefusedWhileCapturing: a copy comes with capture off, so a
// database that captures (its instance is the writer) is never replaced
// under it: the writer would answer changes no other instance gets. The
// refusal changes nothing; once capture is off the copy goes in, and
// capture comes back only in an epoch above those replaced.
func TestReseedRefusedWhileCapturing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "patrold.db")
	st, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	good := filepath.Join(dir, "good.db")
	if _, err := st.SeedCopy(ctx, good); err != nil {
		t.Fatal(err)
	}
	if err := st.EnableCapture(ctx, "patrold.state.changes", "a", 3); err != nil {
		t.Fatal(err)
	}
	before := storetest.DumpDB(t, path)
	want := "reseed from " + good + ": this database captures state changes (its instance writes): stop writing first"
	if _, err := st.Reseed(ctx, good); err == nil || err.Error() != want {
		t.Fatalf("Reseed while capturing = %v, want %q", err, want)
	}
	storetest.SameDB(t, "after the refused copy", storetest.DumpDB(t, path), before)
	if err := st.DisableCapture(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Reseed(ctx, good); err != nil {
		t.Fatalf("Reseed after capture went off: %v", err)
	}
	// Its epoch-3 changes still on their way are not in the copy: it
	// captures again only in a later epoch.
	if got, err := st.ReplicaStatus(ctx); err != nil || got.OwnSince != 4 {
		t.Fatalf("ReplicaStatus after the re-seed = %+v, %v; want OwnSince 4", got, err)
	}
	want = "enable capture: epoch 3 is below 4, the first this database may capture in since its re-seed"
	if err := st.EnableCapture(ctx, "patrold.state.changes", "a", 3); err == nil || err.Error() != want {
		t.Fatalf("EnableCapture(3) after the re-seed = %v, want %q", err, want)
	}
	if err := st.EnableCapture(ctx, "patrold.state.changes", "a", 4); err != nil {
		t.Fatalf("EnableCapture(4) after the re-seed: %v", err)
	}
}
