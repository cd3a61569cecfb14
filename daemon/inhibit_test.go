package daemon_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/patrold/patrold/bus/embedded"
	"github.com/patrold/patrold/daemon"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/testkit"
	"github.com/patrold/patrold/patrol"
)

// findingEvent is a finding event on the stream with what identifies it
// and what it says (times and run ids vary from run to run).
type findingEvent struct {
	Type, Subject, ResourceID, Key, Severity, State, Status, Reason string
	Inhibits                                                        int
}

type streamFindings struct {
	mu  sync.Mutex
	got []findingEvent
}

func subscribeFindings(t *testing.T, d *daemon.Daemon) *streamFindings {
	t.Helper()
	nc := natsAs(t, d, embedded.RoleSubscriber)
	c := &streamFindings{}
	_, err := nc.Subscribe("patrol.findings.>", func(m *nats.Msg) {
		var ev struct {
			Type string `json:"type"`
			Data struct {
				Finding struct {
					ResourceID string `json:"resource_id"`
					Key        string `json:"key"`
					Severity   string `json:"severity"`
					State      string `json:"state"`
					Status     string `json:"status"`
					Inhibits   int    `json:"inhibits"`
				} `json:"finding"`
				Reason string `json:"reason"`
			} `json:"data"`
		}
		if json.Unmarshal(m.Data, &ev) != nil {
			return
		}
		f := ev.Data.Finding
		c.mu.Lock()
		defer c.mu.Unlock()
		c.got = append(c.got, findingEvent{ev.Type, m.Subject, f.ResourceID, f.Key, f.Severity, f.State, f.Status, ev.Data.Reason, f.Inhibits})
	})
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	return c
}

// next waits for exactly n more events after the first from, sorted by
// resource then key (one run's events are in no promised order).
func (c *streamFindings) next(t *testing.T, from, n int) []findingEvent {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, "finding events arrive", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.got) >= from+n
	})
	time.Sleep(300 * time.Millisecond) // and nothing more arrives
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Clone(c.got[from:])
	slices.SortFunc(out, func(a, b findingEvent) int { return strings.Compare(a.ResourceID+a.Key, b.ResourceID+b.Key) })
	if len(out) != n {
		t.Fatalf("got %d events, want %d: %+v", len(out), n, out)
	}
	return out
}

func writeDoc(t *testing.T, dir, doc string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "snapshot.json"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
}

func fleetDoc(resources ...string) string {
	return `{"version":1,"taken_at":"2026-11-29T06:00:00Z","source":"test","resources":[` + strings.Join(resources, ",") + `]}`
}

// TestInhibitionOnTheStream: each rule, with whole events on the stream.
// The parent opens and its children are held (recorded, not published,
// not investigated); the parent resolves and each child is published or
// resolved as the data says. A full storage holds its guests' disk
// findings and not their failed backup; a degraded pool holds nothing.
func TestInhibitionOnTheStream(t *testing.T) {
	const (
		nodeUp   = `{"id":"node/pve1","kind":"node","status":"online"}`
		nodeDown = `{"id":"node/pve1","kind":"node","status":"offline"}`
		node2    = `{"id":"node/pve2","kind":"node","status":"online"}`
		vmDown   = `{"id":"vm/101","kind":"vm","parent":"node/pve1","status":"running","reachable":false}`
		vmUp     = `{"id":"vm/101","kind":"vm","parent":"node/pve1","status":"running","reachable":true}`
		vm2Down  = `{"id":"vm/201","kind":"vm","parent":"node/pve2","status":"running","reachable":false}`
		vm2Up    = `{"id":"vm/201","kind":"vm","parent":"node/pve2","status":"running","reachable":true}`
		full     = `{"id":"storage/pve2/zfs","kind":"storage","parent":"node/pve2","status":"online","metrics":{"usage_percent":97}}`
		filling  = `{"id":"storage/pve2/zfs","kind":"storage","parent":"node/pve2","status":"online","metrics":{"usage_percent":80}}`
		roomy    = `{"id":"storage/pve2/zfs","kind":"storage","parent":"node/pve2","status":"online","metrics":{"usage_percent":40}}`
		degraded = `{"id":"storage/pve2/pool","kind":"storage","parent":"node/pve2","status":"online","zfs":{"state":"DEGRADED"}}`
		healthy  = `{"id":"storage/pve2/pool","kind":"storage","parent":"node/pve2","status":"online","zfs":{"state":"ONLINE"}}`
		bkFailed = `{"id":"vm/202","kind":"vm","parent":"node/pve2","parents":["storage/pve2/zfs"],"status":"running","metrics":{"disk_percent":90},` +
			`"backup":{"last_status":"failed","last_finished_at":"2026-11-29T02:00:00Z","last_success_at":"2026-11-28T02:00:00Z","storage":"storage/pve2/zfs"}}`
		bkOK = `{"id":"vm/202","kind":"vm","parent":"node/pve2","parents":["storage/pve2/zfs"],"status":"running","metrics":{"disk_percent":40},` +
			`"backup":{"last_status":"ok","last_finished_at":"2026-11-29T02:00:00Z","last_success_at":"2026-11-29T02:00:00Z","storage":"storage/pve2/zfs"}}`
		poolVM = `{"id":"vm/203","kind":"vm","parent":"node/pve2","parents":["storage/pve2/pool"],"status":"running","reachable":false}`
	)
	dir := t.TempDir()
	cfg := testConfig(t, dir, "", "")
	cfg.Patrol.Autonomy = string(findings.AutonomyFull)
	d := start(t, cfg)
	sub := subscribeFindings(t, d)
	ctx := context.Background()
	run := func(doc string) *patrol.Report {
		t.Helper()
		writeDoc(t, dir, doc)
		rep, err := d.RunNow(ctx, patrol.TriggerManual)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	ev := func(typ, res, key, sev, state, status, reason string, inhibits int) findingEvent {
		event := strings.TrimPrefix(typ, "patrold.finding.")
		return findingEvent{typ, "patrol.findings." + event + "." + sev, res, key, sev, state, status, reason, inhibits}
	}

	// Run 1: every parent opens; vm/201 (on an online node, nothing
	// explains it), vm/202's failed backup (a full storage explains no
	// backup) and vm/203 (a degraded pool explains nothing) are
	// published, the others are held.
	rep := run(fleetDoc(nodeDown, node2, vmDown, vm2Down, full, degraded, bkFailed, poolVM))
	got := sub.next(t, 0, 6)
	want := []findingEvent{
		ev("patrold.finding.opened", "node/pve1", "node_offline", "critical", "detected", "active", "first", 1),
		ev("patrold.finding.opened", "storage/pve2/pool", "zfs_pool_degraded", "warning", "detected", "active", "first", 0),
		ev("patrold.finding.opened", "storage/pve2/zfs", "high_disk", "critical", "detected", "active", "first", 1),
		ev("patrold.finding.opened", "vm/201", "guest_unreachable", "warning", "detected", "active", "first", 0),
		ev("patrold.finding.opened", "vm/202", "backup_failed", "warning", "detected", "active", "first", 0),
		ev("patrold.finding.opened", "vm/203", "guest_unreachable", "warning", "detected", "active", "first", 0),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("run 1 events\n%+v\nwant\n%+v\n(report %+v)", got, want, rep.Findings)
	}
	held := map[string]string{
		findings.ID("vm/101", findings.CategoryReliability, "guest_unreachable"): findings.ID("node/pve1", findings.CategoryReliability, "node_offline"),
		findings.ID("vm/202", findings.CategoryCapacity, "high_disk"):            findings.ID("storage/pve2/zfs", findings.CategoryCapacity, "high_disk"),
	}
	for child, parent := range held {
		f, err := d.Store().Get(ctx, child)
		if err != nil {
			t.Fatal(err)
		}
		if f.InhibitedBy != parent || f.LastPublishedAt != nil || f.Attempt != 0 {
			t.Fatalf("%s: inhibited_by %q (want %q), published %v, attempt %d", f.ResourceID, f.InhibitedBy, parent, f.LastPublishedAt, f.Attempt)
		}
		if ok, why := findings.DefaultGate().ShouldInvestigate(&f, findings.AutonomyFull, time.Now()); ok || why != findings.RefuseInactive {
			t.Fatalf("%s: gate %v %q", f.ResourceID, ok, why)
		}
		p, err := d.Store().Get(ctx, parent)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(p.Explains, []string{child}) || p.Inhibits != 1 {
			t.Fatalf("%s explains %v (%d), want [%s]", p.ResourceID, p.Explains, p.Inhibits, child)
		}
	}

	// The parents are investigated (autonomy full, the playbook driver);
	// their children never are (attempt 0 above, and below).
	storageID := findings.ID("storage/pve2/zfs", findings.CategoryCapacity, "high_disk")
	testkit.Eventually(t, 20*time.Second, "the full storage's investigation ends", func() bool {
		f, err := d.Store().Get(ctx, storageID)
		return err == nil && f.Attempt == 1 && f.LastOutcome != ""
	})

	// Run 2: the same: nothing new on the stream.
	run(fleetDoc(nodeDown, node2, vmDown, vm2Down, full, degraded, bkFailed, poolVM))

	// Run 3: every parent resolves. vm/101 is still unreachable (opened
	// now, first published), vm/202's disk is fine now (resolved, never
	// announced: nothing) and so is its backup, vm/203 is reachable, the
	// storage above warning is still a finding (a warning high_disk
	// inhibits nothing).
	run(fleetDoc(nodeUp, node2, vmDown, vm2Up, filling, healthy, bkOK, strings.Replace(poolVM, "false", "true", 1)))
	got = sub.next(t, 6, 7)
	want = []findingEvent{
		ev("patrold.finding.resolved", "node/pve1", "node_offline", "critical", "resolved", "resolved", "resolved", 0),
		ev("patrold.finding.resolved", "storage/pve2/pool", "zfs_pool_degraded", "warning", "resolved", "resolved", "resolved", 0),
		ev("patrold.finding.updated", "storage/pve2/zfs", "high_disk", "warning", "needs_attention", "active", "severity_changed", 0),
		ev("patrold.finding.opened", "vm/101", "guest_unreachable", "warning", "detected", "active", "first", 0),
		ev("patrold.finding.resolved", "vm/201", "guest_unreachable", "warning", "resolved", "resolved", "resolved", 0),
		ev("patrold.finding.resolved", "vm/202", "backup_failed", "warning", "resolved", "resolved", "resolved", 0),
		ev("patrold.finding.resolved", "vm/203", "guest_unreachable", "warning", "resolved", "resolved", "resolved", 0),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("run 3 events\n%+v\nwant\n%+v", got, want)
	}
	// Released: vm/101, still unreachable, is investigated now; the
	// resolved children never were.
	for child := range held {
		f, err := d.Store().Get(ctx, child)
		wantAttempt := 0
		if f.ResourceID == "vm/101" {
			wantAttempt = 1
		}
		if err != nil || f.Attempt != wantAttempt || f.InhibitedBy != "" {
			t.Fatalf("%s after its parent resolved: %v attempt %d inhibited_by %q", f.ResourceID, err, f.Attempt, f.InhibitedBy)
		}
	}
	run(fleetDoc(nodeUp, node2, vmUp, vm2Up, roomy, healthy, bkOK))
	got = sub.next(t, 13, 2)
	want = []findingEvent{
		ev("patrold.finding.resolved", "storage/pve2/zfs", "high_disk", "warning", "resolved", "resolved", "resolved", 0),
		ev("patrold.finding.resolved", "vm/101", "guest_unreachable", "warning", "resolved", "resolved", "resolved", 0),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("run 4 events\n%+v\nwant\n%+v", got, want)
	}
}

// TestInhibitionReleasedBySweep: a parent resolved between runs (here by
// an operator) releases its children at the next sweep, which publishes
// those still active, as a silence's expiry does.
func TestInhibitionReleasedBySweep(t *testing.T) {
	dir := t.TempDir()
	d := start(t, testConfig(t, dir, "", ""))
	sub := subscribeFindings(t, d)
	ctx := context.Background()
	writeDoc(t, dir, fleetDoc(`{"id":"node/pve1","kind":"node","status":"offline"}`,
		`{"id":"vm/101","kind":"vm","parent":"node/pve1","status":"running","reachable":false}`))
	if _, err := d.RunNow(ctx, patrol.TriggerManual); err != nil {
		t.Fatal(err)
	}
	sub.next(t, 0, 1) // the node's opened; vm/101 held
	nodeID := findings.ID("node/pve1", findings.CategoryReliability, "node_offline")
	if _, err := d.Store().Act(ctx, nodeID, findings.ActionRequest{Action: findings.ActionResolve, Note: "cabled", Actor: "test"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	res, err := d.Store().Sweep(ctx, time.Now(), time.Hour, findings.DefaultPublishPolicy())
	if err != nil || res.Uninhibited != 1 {
		t.Fatalf("sweep: %v %+v", err, res)
	}
	got := sub.next(t, 1, 2)
	want := []findingEvent{
		{"patrold.finding.resolved", "patrol.findings.resolved.critical", "node/pve1", "node_offline", "critical", "resolved", "resolved", "resolved", 0},
		{"patrold.finding.opened", "patrol.findings.opened.warning", "vm/101", "guest_unreachable", "warning", "detected", "active", "first", 0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events\n%+v\nwant\n%+v", got, want)
	}
}

// TestNodeOfflineHoldsMissingMetrics: a guest's finding the run cannot
// evaluate any more (its node went offline, so its metrics are missing)
// is held under the node's node_offline, with whole events on the
// stream: the parent opens counting it, the child publishes nothing and
// stays active. A guest without metrics on an online node is held by
// nothing. When the node is back and the guest's CPU has cooled, both
// resolve.
func TestNodeOfflineHoldsMissingMetrics(t *testing.T) {
	const (
		nodeUp   = `{"id":"node/pve1","kind":"node","status":"online"}`
		nodeDown = `{"id":"node/pve1","kind":"node","status":"offline"}`
		node2    = `{"id":"node/pve2","kind":"node","status":"online"}`
		hot      = `{"id":"vm/101","kind":"vm","parent":"node/pve1","status":"running","metrics":{"cpu_percent":99}}`
		blind    = `{"id":"vm/101","kind":"vm","parent":"node/pve1","status":"running"}`
		cool     = `{"id":"vm/101","kind":"vm","parent":"node/pve1","status":"running","metrics":{"cpu_percent":10}}`
		hot2     = `{"id":"vm/201","kind":"vm","parent":"node/pve2","status":"running","metrics":{"cpu_percent":99}}`
		blind2   = `{"id":"vm/201","kind":"vm","parent":"node/pve2","status":"running"}`
	)
	dir := t.TempDir()
	d := start(t, testConfig(t, dir, "", ""))
	sub := subscribeFindings(t, d)
	ctx := context.Background()
	run := func(doc string) {
		t.Helper()
		writeDoc(t, dir, doc)
		if _, err := d.RunNow(ctx, patrol.TriggerManual); err != nil {
			t.Fatal(err)
		}
	}
	ev := func(event, res, key, sev, state, status, reason string, inhibits int) findingEvent {
		return findingEvent{"patrold.finding." + event, "patrol.findings." + event + "." + sev, res, key, sev, state, status, reason, inhibits}
	}
	vm := findings.ID("vm/101", findings.CategoryPerformance, "high_cpu")
	vm2 := findings.ID("vm/201", findings.CategoryPerformance, "high_cpu")
	node := findings.ID("node/pve1", findings.CategoryReliability, "node_offline")
	heldBy := func(id string) string {
		t.Helper()
		f, err := d.Store().Get(ctx, id)
		if err != nil || !f.Active() {
			t.Fatalf("%s: %+v %v, want active", id, f.Status, err)
		}
		return f.InhibitedBy
	}

	run(fleetDoc(nodeUp, node2, hot, hot2))
	got := sub.next(t, 0, 2)
	want := []findingEvent{
		ev("opened", "vm/101", "high_cpu", "warning", "detected", "active", "first", 0),
		ev("opened", "vm/201", "high_cpu", "warning", "detected", "active", "first", 0),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("run 1 events\n%+v\nwant\n%+v", got, want)
	}

	// The node goes down: its guest's figures are missing. Twice: the
	// hold lasts while the node is offline.
	for i := range 2 {
		run(fleetDoc(nodeDown, node2, blind, blind2))
		if i == 0 {
			got = sub.next(t, 2, 1)
			if want := []findingEvent{ev("opened", "node/pve1", "node_offline", "critical", "detected", "active", "first", 1)}; !reflect.DeepEqual(got, want) {
				t.Fatalf("node down events\n%+v\nwant\n%+v", got, want)
			}
		}
		if by, by2 := heldBy(vm), heldBy(vm2); by != node || by2 != "" {
			t.Fatalf("run %d: vm/101 held by %q (want %q), vm/201 by %q (want nothing)", i+2, by, node, by2)
		}
		p, err := d.Store().Get(ctx, node)
		if err != nil || !reflect.DeepEqual(p.Explains, []string{vm}) || p.Inhibits != 1 {
			t.Fatalf("run %d: node_offline explains %v (%d), want [%s]: %v", i+2, p.Explains, p.Inhibits, vm, err)
		}
	}

	run(fleetDoc(nodeUp, node2, cool, hot2))
	got = sub.next(t, 3, 2)
	want = []findingEvent{
		ev("resolved", "node/pve1", "node_offline", "critical", "resolved", "resolved", "resolved", 0),
		ev("resolved", "vm/101", "high_cpu", "warning", "resolved", "resolved", "resolved", 0),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("node back events\n%+v\nwant\n%+v", got, want)
	}
	if by := heldBy(vm2); by != "" {
		t.Fatalf("vm/201 held by %q", by)
	}
}
