package store_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/store"
)

// published is one outbox row as the test compares it: everything but
// the sequence number and the id, with the data decoded.
type published struct {
	Subject, Type, ResourceID string
	Time                      time.Time
	Data                      any
}

// newEvents returns the outbox rows after seq, decoded, and the last seq.
func newEvents(t *testing.T, st *store.Store, after int64) ([]published, int64) {
	t.Helper()
	rows, err := st.PendingEventsAfter(context.Background(), after, 1000)
	if err != nil {
		t.Fatal(err)
	}
	out := []published{}
	for _, r := range rows {
		var data any
		if err := json.Unmarshal(r.Data, &data); err != nil {
			t.Fatal(err)
		}
		out = append(out, published{r.Subject, r.Type, r.ResourceID, r.Time.UTC(), data})
		after = r.Seq
	}
	return out, after
}

// eventOf is the event the stored finding id must have been published as.
func eventOf(t *testing.T, st *store.Store, id, event, reason, runID string, at time.Time) published {
	t.Helper()
	f, err := st.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	d := findings.FindingEvent(&f, findings.Decision{Publish: true, Event: event, Reason: reason}, runID, at)
	raw, err := json.Marshal(d.Data)
	if err != nil {
		t.Fatal(err)
	}
	var data any
	if err := json.Unmarshal(raw, &data); err != nil {
		t.Fatal(err)
	}
	return published{d.Subject, d.Type, d.ResourceID, at.UTC(), data}
}

// TestSilenceReleasesWhatItHeld: a finding subscribers saw open resolves
// under a silence and its resolution is published at once; reopened under
// the silence it stays quiet, and the silence's expiry publishes it
// reopened. Every outbox row is compared whole.
func TestSilenceReleasesWhatItHeld(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	pol := findings.DefaultPublishPolicy()
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	o := fobs("vm/100", "high_cpu", findings.SeverityWarning, "cpu 97")
	id := o.Normalize()
	commit(t, st, t0, true, o)
	evs, seq := newEvents(t, st, 0)
	if want := []published{eventOf(t, st, id, findings.EventOpened, findings.ReasonFirst, lastRun(t, st, id), t0)}; !reflect.DeepEqual(evs, want) {
		t.Fatalf("opened:\n%+v\nwant\n%+v", evs, want)
	}

	sil, err := st.AddSilence(ctx, findings.Silence{Matchers: findings.Matchers{Resource: "vm/100"}, Comment: "maintenance", Author: "ops", EndsAt: t0.Add(2 * time.Hour)}, t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	// the condition clears under the silence: a complete run without it
	t1 := t0.Add(10 * time.Minute)
	commit(t, st, t1, true)
	evs, seq = newEvents(t, st, seq)
	if want := []published{eventOf(t, st, id, findings.EventResolved, findings.ReasonResolved, lastRun(t, st, id), t1)}; !reflect.DeepEqual(evs, want) {
		t.Fatalf("resolved under a silence:\n%+v\nwant\n%+v", evs, want)
	}

	// back under the silence: held, nothing published
	t2 := t1.Add(10 * time.Minute)
	commit(t, st, t2, true, o)
	if _, err := st.Sweep(ctx, t2, 30*24*time.Hour, pol); err != nil {
		t.Fatal(err)
	}
	evs, seq = newEvents(t, st, seq)
	if len(evs) != 0 {
		t.Fatalf("reopened under a silence published %+v", evs)
	}

	// the operator expires the silence; the next sweep releases it
	t3 := t2.Add(5 * time.Minute)
	if err := st.ExpireSilence(ctx, sil.ID, t3); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Sweep(ctx, t3, 30*24*time.Hour, pol); err != nil {
		t.Fatal(err)
	}
	evs, _ = newEvents(t, st, seq)
	if want := []published{eventOf(t, st, id, findings.EventReopened, findings.ReasonReopened, "", t3)}; !reflect.DeepEqual(evs, want) {
		t.Fatalf("silence expired:\n%+v\nwant\n%+v", evs, want)
	}
}

func lastRun(t *testing.T, st *store.Store, id string) string {
	t.Helper()
	f, err := st.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return f.LastRunID
}
