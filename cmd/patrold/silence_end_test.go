package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/patrol"
)

// TestSilenceEndPublishesWithoutARun: a finding that opened under a
// silence is published when the silence ends, with no run after it (the
// schedule is an hour away): serve sweeps at the silence's end.
func TestSilenceEndPublishesWithoutARun(t *testing.T) {
	faults, _ := filepath.Abs("../../examples/small-faults.json")
	dir := t.TempDir()
	snap := filepath.Join(dir, "snapshot.json")
	const disk = "storage/pve1/local-zfs"
	setUsage(t, faults, snap, disk, 50)
	c := newCLI(t, "http: {listen: '"+freeAddr(t)+"'}\nnats: {embedded: {listen: '127.0.0.1:0'}}\nlog: {level: info}\n"+
		"schedule: {cron: '@every 1h', startup_delay: 1h}\nsource: {kind: file, file: {path: "+snap+"}}\n")
	cfg, err := (&app{configPath: c.cfg}).loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	logs := &testkit.LogBuffer{}
	reg := prometheus.NewRegistry()
	d, err := daemon.New(daemon.Options{Config: cfg, Registerer: reg, Gatherer: reg, Stderr: logs})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.Stop(context.Background())
		if t.Failed() {
			t.Logf("daemon log:\n%s", logs.String())
		}
	})
	ctx := context.Background()
	const hold = 8 * time.Second
	start := time.Now()
	if _, err := d.Store().AddSilence(ctx, findings.Silence{Matchers: findings.Matchers{Resource: disk}, Comment: "disk swap", Author: "ops",
		EndsAt: start.Add(hold)}, start); err != nil {
		t.Fatal(err)
	}
	setUsage(t, faults, snap, disk, 96.3)
	rep, err := d.RunNow(ctx, patrol.TriggerManual)
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) >= hold {
		t.Fatalf("the run took %s, longer than the silence (%s): cannot tell a sweep from the run", time.Since(start), hold)
	}
	var id string
	for _, f := range rep.Findings {
		if f.ResourceID == disk {
			id = f.ID
		}
	}
	if id == "" {
		t.Fatalf("no finding on %s", disk)
	}
	f, err := d.Store().Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Silenced || f.LastPublishedAt != nil {
		t.Fatalf("under the silence: silenced %v, published at %v; want held", f.Silenced, f.LastPublishedAt)
	}
	testkit.EventuallyState(t, hold+30*time.Second, "the finding is published once its silence ends", func() (bool, string) {
		f, err := d.Store().Get(ctx, id)
		if err != nil {
			return false, err.Error()
		}
		return !f.Silenced && f.LastPublishedEvent == findings.EventOpened && f.LastPublishedAt != nil,
			"silenced " + boolText(f.Silenced) + ", last published " + f.LastPublishedEvent
	})
	if f, _ := d.Store().Get(ctx, id); f.LastPublishedAt.Before(start.Add(hold)) {
		t.Fatalf("published at %s, before the silence ended at %s", f.LastPublishedAt, start.Add(hold))
	}
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
