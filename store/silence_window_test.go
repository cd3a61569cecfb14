package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/store"
)

// TestAddSilenceWindow: the store refuses windows far from now with an
// *InputError naming the field, and stores nothing.
func TestAddSilenceWindow(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	base := findings.Silence{Matchers: findings.Matchers{Kind: "vm"}, Comment: "c", Author: "ops"}
	cases := []struct {
		starts, ends time.Time
		want         findings.InputError
	}{
		{time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1970, 1, 1, 1, 0, 0, 0, time.UTC),
			findings.InputError{Field: "starts_at", Problem: "1970-01-01T00:00:00Z is more than 24h0m0s in the past; ends_at: 1970-01-01T01:00:00Z is not in the future"}},
		{time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 30, 0, 0, time.UTC),
			findings.InputError{Field: "starts_at", Problem: "9999-12-31T23:00:00Z is more than 8760h0m0s ahead"}},
		{now.Add(-2 * time.Hour), now.Add(-time.Hour),
			findings.InputError{Field: "ends_at", Problem: "2026-11-29T09:00:00Z is not in the future"}},
		{now, now.Add(91 * 24 * time.Hour),
			findings.InputError{Field: "ends_at", Problem: "a silence may last at most 2160h0m0s"}},
	}
	for _, c := range cases {
		sil := base
		sil.StartsAt, sil.EndsAt = c.starts, c.ends
		_, err := st.AddSilence(context.Background(), sil, now)
		var ie *findings.InputError
		if !errors.As(err, &ie) || *ie != c.want {
			t.Errorf("%s..%s: %v, want %v", c.starts, c.ends, err, &c.want)
		}
	}
	if list, _ := st.Silences(context.Background(), now, false); len(list) != 0 {
		t.Fatalf("refused silences were stored: %v", list)
	}
	sil := base
	sil.StartsAt, sil.EndsAt = now.Add(-time.Hour), now.Add(time.Hour)
	if _, err := st.AddSilence(context.Background(), sil, now); err != nil {
		t.Fatalf("an hour-old start: %v", err)
	}
}

// TestSourceFailingKeyKeepsItsSpelling: patrold's own key is stored as
// documented (source_failing), like the catalogue's keys.
func TestSourceFailingKeyKeepsItsSpelling(t *testing.T) {
	for _, in := range []string{"source_failing", "source-failing", "Source Failing"} {
		if got := findings.NormalizeKey(in); got != "source_failing" {
			t.Errorf("NormalizeKey(%q) = %q", in, got)
		}
	}
}
