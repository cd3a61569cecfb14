package main

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
)

// TestStartPublishesResolutionsASilenceHeld: a database from before
// resolutions were published whatever held them has a finding stored
// resolved whose last published event is still "opened". serve publishes
// its resolution once when it starts; a second start publishes nothing.
func TestStartPublishesResolutionsASilenceHeld(t *testing.T) {
	faults, _ := filepath.Abs("../../examples/small-faults.json")
	dir := t.TempDir()
	high, low := filepath.Join(dir, "high.json"), filepath.Join(dir, "low.json")
	const disk = "storage/pve1/local-zfs"
	setUsage(t, faults, high, disk, 96.3)
	setUsage(t, faults, low, disk, 50)
	c := newCLI(t, "http: {listen: '"+freeAddr(t)+"'}\nnats: {embedded: {listen: '127.0.0.1:0'}}\nlog: {level: warn}\n"+
		"schedule: {cron: '@every 1h', startup_delay: 1h}\n")
	for _, snap := range []string{high, low} {
		if out, code := c.run("run", "--snapshot", snap); code != 0 {
			t.Fatalf("run %s: %d %s", snap, code, out)
		}
	}
	// What a silence left before the fix: resolved, never published so.
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(c.dir, "var", "patrold.db"))
	if err != nil {
		t.Fatal(err)
	}
	var id string
	if err := db.QueryRow(`SELECT id FROM findings WHERE resource_id = ? AND status = 'resolved'`, disk).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE findings SET last_published_event = 'opened', silenced = 1 WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
	db.Close()

	d := startDaemon(t, c)
	ctx := context.Background()
	var published time.Time
	testkit.EventuallyState(t, 30*time.Second, "the held resolution is published at start", func() (bool, string) {
		f, err := d.Store().Get(ctx, id)
		if err != nil {
			return false, err.Error()
		}
		if f.LastPublishedEvent != findings.EventResolved || f.LastPublishedAt == nil {
			return false, "last published " + f.LastPublishedEvent
		}
		published = *f.LastPublishedAt
		return true, ""
	})
	// Once: the row no longer matches, and nothing else did.
	ids, err := d.Store().PublishHeldResolutions(ctx, time.Now())
	if err != nil || len(ids) != 0 {
		t.Fatalf("a second pass published %v (%v); want nothing", ids, err)
	}
	if f, _ := d.Store().Get(ctx, id); !f.LastPublishedAt.Equal(published) {
		t.Fatalf("published again at %s", f.LastPublishedAt)
	}
}
