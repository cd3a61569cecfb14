package outcome_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/findings/outcome"
	"github.com/patrold/patrold/store"
)

func TestUnknownFindingDroppedBadOutcomeRefused(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "patrold.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var log bytes.Buffer
	applied := 0
	h := outcome.Handler{Recorder: st, Logger: slog.New(slog.NewTextHandler(&log, nil)), Applied: func() { applied++ },
		Now: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }}
	gone := findings.Outcome{FindingID: "f-gone", SessionID: "s1", Attempt: 1, Outcome: findings.OutcomeFixVerified}
	if err := h.Handle(context.Background(), gone); err != nil {
		t.Fatalf("outcome for an unknown finding: %v, want nil (dropped)", err)
	}
	if want := `msg="outcome for an unknown finding dropped" finding=f-gone session=s1`; !strings.Contains(log.String(), want) {
		t.Fatalf("log %q, want %q", log.String(), want)
	}
	bad := findings.Outcome{FindingID: "f-gone", SessionID: "s1", Attempt: 1, Outcome: "exploded"}
	err = h.Handle(context.Background(), bad)
	var ie *findings.InputError
	if !errors.As(err, &ie) || *ie != (findings.InputError{Field: "outcome", Problem: `unknown outcome "exploded"`}) {
		t.Fatalf("unknown outcome: %v", err)
	}
	if applied != 0 {
		t.Fatalf("applied called %d times for outcomes that changed nothing", applied)
	}
}
