package signals_test

import (
	"slices"
	"testing"

	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// TestMatchByKey: a finding covers a signal only under the signal's own
// key. A key of the model's own, or another catalogue key of the same
// category, on the same resource and at a higher severity covers
// nothing: the net files its own finding beside it.
func TestMatchByKey(t *testing.T) {
	mem := signals.Signal{Type: signals.TypeHighMemory, ResourceID: "vm/101", Category: "performance", Severity: signals.SeverityWarning}
	disk := signals.Signal{Type: signals.TypeHighDisk, ResourceID: "storage/pve2/tank", Category: "capacity", Severity: signals.SeverityWarning}
	for _, tc := range []struct {
		filed   signals.Filed
		sig     signals.Signal
		matched bool
	}{
		{signals.Filed{ResourceID: "vm/101", Key: "memory-pressure", Category: "performance", Severity: "critical"}, mem, false},
		{signals.Filed{ResourceID: "vm/101", Key: "high_cpu", Category: "performance", Severity: "critical"}, mem, false},
		{signals.Filed{ResourceID: "vm/101", Key: "", Category: "performance", Severity: "critical"}, mem, false},
		{signals.Filed{ResourceID: "vm/101", Key: "high_memory", Category: "performance", Severity: "warning"}, mem, true},
		{signals.Filed{ResourceID: "storage/pve2/tank", Key: "capacity_forecast", Category: "capacity", Severity: "critical"}, disk, false},
		{signals.Filed{ResourceID: "storage/pve2/tank", Key: "high_disk", Category: "capacity", Severity: "critical"}, disk, true},
	} {
		m, u := signals.Match([]signals.Signal{tc.sig}, []signals.Filed{tc.filed})
		if got := len(m) == 1 && len(u) == 0; got != tc.matched || len(m)+len(u) != 1 {
			t.Errorf("%+v vs %s signal: matched %v unmatched %v, want matched=%v", tc.filed, tc.sig.Type, m, u, tc.matched)
		}
	}
}

// TestJudgedKindsAgreeWithDetection: for every catalogue type and kind,
// detection evaluates the type on a resource of that kind (with every
// field it reads) exactly when Judges says it judges it. The forecast,
// which the resource alone never decides, is judged on the kinds
// ForecastMetric measures.
func TestJudgedKindsAgreeWithDetection(t *testing.T) {
	reachable, temp, wear, scheduled := true, int64(40), int64(50), false
	for _, kind := range snapshot.Kinds {
		r := snapshot.Resource{ID: string(kind) + "/x", Kind: kind, Status: snapshot.StatusRunning,
			Metrics: snapshot.MetricsOf(map[string]float64{snapshot.MetricCPU: 1, snapshot.MetricMemory: 1, snapshot.MetricDisk: 1, snapshot.MetricUsage: 1,
				snapshot.MetricSwap: 1, snapshot.MetricIOWait: 1}),
			Backup: &snapshot.Backup{Verify: &snapshot.Verify{State: snapshot.VerifyNone}}, Reachable: &reachable, Smart: &snapshot.Smart{TemperatureC: &temp, WearoutPercent: &wear},
			ZFS: &snapshot.ZFS{State: "ONLINE", Scrub: &snapshot.Scrub{State: snapshot.ScrubRunning}}, BackupStore: &snapshot.BackupStore{},
			HA: &snapshot.HA{}, Replication: &snapshot.Replication{},
			Certificate: &snapshot.Certificate{}, Updates: &snapshot.Updates{},
			Guest: &snapshot.GuestState{BackupScheduled: &scheduled, Snapshots: &snapshot.Snapshots{}}}
		if kind == snapshot.KindNode || kind == snapshot.KindStorage {
			r.Status = snapshot.StatusOnline
		}
		for _, typ := range signals.Types {
			want := signals.Evaluated(&r, typ)
			if typ == signals.TypeCapacityForecast {
				want = signals.ForecastMetric(&r) != ""
			}
			if got := signals.Judges(typ, kind); got != want {
				t.Errorf("%s on a %s: Judges %v, detection evaluates it %v", typ, kind, got, want)
			}
			if got := slices.Contains(signals.JudgedKinds(typ), kind); got != want {
				t.Errorf("%s on a %s: JudgedKinds holds it %v, want %v", typ, kind, got, want)
			}
		}
	}
}
