package patrol_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/demo"
	"github.com/patrold/patrold/store"
)

func TestZZTiming(t *testing.T) {
	if os.Getenv("ZZ") == "" {
		t.Skip()
	}
	pol, _ := alerts.New(alerts.Settings{})
	data, _ := snapshot.Encode(demo.Generate(demo.Options{Seed: 1, Resources: 100000, FaultRate: 0.1}, time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)))
	st, _ := store.Open(context.Background(), filepath.Join(t.TempDir(), "b.db"))
	defer st.Close()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	r, _ := patrol.New(patrol.Options{Store: st, Logger: log, Settings: func() patrol.Settings {
		return patrol.Settings{Policy: pol, Publish: findings.DefaultPublishPolicy()}
	}})
	for i := 0; i < 5; i++ {
		t0 := time.Now()
		snap, probs, _ := snapshot.Decode(data, snapshot.DecodeOptions{})
		t1 := time.Now()
		r.Run(context.Background(), patrol.TriggerManual, patrol.RunOptions{Snapshot: snap, Problems: probs})
		t2 := time.Now()
		os.Stderr.WriteString("decode " + t1.Sub(t0).String() + " run " + t2.Sub(t1).String() + "\n")
	}
}
