package docs

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/patrol"
)

// TestLifecycleEventsMatchSchemas drives findings through every published
// part of their lifecycle in a real daemon:
//   - runs that open, resolve and reopen;
//   - dismiss, undismiss, suppress, unsuppress, snooze, acknowledge,
//     resolve;
//   - a silence and a will_fix_later dismissal that expire in the sweep.
//
// It validates every event that reaches NATS against the shipped schema
// of its type, with an independent JSON Schema validator.
func TestLifecycleEventsMatchSchemas(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	snap := filepath.Join(dir, "snapshot.json")
	faults, err := os.ReadFile(filepath.Join("..", "examples", "small-faults.json"))
	if err != nil {
		t.Fatal(err)
	}
	healthy, err := os.ReadFile(filepath.Join("..", "examples", "small-healthy.json"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(data []byte) {
		t.Helper()
		if err := os.WriteFile(snap, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(faults)
	w := startWireDaemon(t, snap)
	st := w.d.Store()
	now := time.Now().UTC()
	// A silence in force before the first run: its finding is recorded,
	// not published, until the silence expires.
	if _, err := st.AddSilence(ctx, findings.Silence{Matchers: findings.Matchers{Resource: "disk/pve1/sdb"}, Comment: "maintenance",
		Author: "test", StartsAt: now, EndsAt: now.Add(time.Hour)}, now); err != nil {
		t.Fatal(err)
	}
	run := func() {
		t.Helper()
		if _, err := w.d.RunNow(ctx, patrol.TriggerManual); err != nil {
			t.Fatal(err)
		}
	}
	run()
	write(healthy)
	run()
	write(faults)
	run()
	active, err := st.Active(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, f := range active {
		if !f.Silenced {
			ids = append(ids, f.ID)
		}
	}
	sort.Strings(ids)
	if len(ids) < 5 {
		t.Fatalf("%d unsilenced active findings, need 5: %+v", len(ids), active)
	}
	act := func(id string, req findings.ActionRequest) {
		t.Helper()
		if _, err := st.Act(ctx, id, req, time.Now().UTC()); err != nil {
			t.Fatalf("%s %s: %v", req.Action, id, err)
		}
	}
	act(ids[0], findings.ActionRequest{Action: findings.ActionDismiss, Reason: findings.DismissNotAnIssue, Actor: "test"})
	act(ids[0], findings.ActionRequest{Action: findings.ActionUndismiss, Actor: "test"})
	act(ids[1], findings.ActionRequest{Action: findings.ActionSuppress, Actor: "test"})
	act(ids[1], findings.ActionRequest{Action: findings.ActionUnsuppress, Actor: "test"})
	act(ids[2], findings.ActionRequest{Action: findings.ActionSnooze, For: 4 * time.Hour, Actor: "test"})
	act(ids[2], findings.ActionRequest{Action: findings.ActionAcknowledge, Actor: "test"})
	act(ids[3], findings.ActionRequest{Action: findings.ActionDismiss, Reason: findings.DismissWillFixLater, Actor: "test"})
	act(ids[4], findings.ActionRequest{Action: findings.ActionResolve, Note: "fixed by hand", Actor: "test"})
	// The sweep after the silence and the snooze ended, then after the
	// will_fix_later reminder fell due.
	policy := findings.DefaultPublishPolicy()
	for _, at := range []time.Duration{2 * time.Hour, 5 * time.Hour, findings.WillFixLaterRemind + time.Hour} {
		if _, err := st.Sweep(ctx, now.Add(at), 30*24*time.Hour, policy); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 10*time.Second, "the outbox is published", func() bool {
		n, err := st.PendingCount(ctx)
		return err == nil && n == 0
	})
	want := []string{"patrold.run.completed", "patrold.remediation.request"}
	for _, e := range []contracts.FindingEvent{contracts.FindingOpened, contracts.FindingResolved, contracts.FindingReopened,
		contracts.FindingDismissed, contracts.FindingUndismissed, contracts.FindingSuppressed, contracts.FindingUnsuppressed,
		contracts.FindingRepeated} {
		want = append(want, contracts.TypeFindingPrefix+string(e))
	}
	got := w.await(t, want...)
	// Every reason the lifecycle should carry, by event.
	wantReasons := map[string][]string{
		"opened": {findings.ReasonFirst}, "resolved": {findings.ReasonResolved}, "reopened": {findings.ReasonReopened},
		"dismissed": {findings.ReasonDismissed}, "undismissed": {findings.ReasonUndismissed},
		"suppressed": {findings.ReasonSuppressed}, "unsuppressed": {findings.ReasonUnsuppressed}, "repeated": {findings.ReasonRepeat},
	}
	schemas := compileSchemas(t)
	n := 0
	reasons := map[string][]string{}
	sweptOpen := false // the silenced finding, opened by the sweep
	for typ, msgs := range got {
		s := schemas[schemaFor(typ)]
		if s == nil {
			t.Errorf("%s: no schema", typ)
			continue
		}
		for _, raw := range msgs {
			n++
			ev, err := contracts.DecodeEvent(raw)
			if err != nil {
				t.Errorf("%s envelope: %v\n%s", typ, err, raw)
				continue
			}
			if err := validate(s, ev.Data); err != nil {
				t.Errorf("%s against %s: %v\n%s", typ, schemaFor(typ), err, ev.Data)
			}
			if kind, ok := strings.CutPrefix(typ, contracts.TypeFindingPrefix); ok {
				var d findings.FindingEventData
				if err := json.Unmarshal(ev.Data, &d); err != nil {
					t.Fatal(err)
				}
				if kind == "opened" && d.Finding.ResourceID == "disk/pve1/sdb" {
					sweptOpen = d.RunID == "" && !sweptOpen
				}
				if !slices.Contains(reasons[kind], d.Reason) {
					reasons[kind] = append(reasons[kind], d.Reason)
				}
			}
		}
	}
	for kind, rs := range wantReasons {
		for _, r := range rs {
			if !slices.Contains(reasons[kind], r) {
				t.Errorf("no %s event with reason %s; reasons seen by event: %v", kind, r, reasons)
			}
		}
	}
	if !sweptOpen {
		t.Error("the silenced finding was not opened once, by the sweep, when its silence expired")
	}
	t.Logf("%d events validated: %v", n, keys(got))
}
