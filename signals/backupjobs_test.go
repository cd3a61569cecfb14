package signals_test

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// datastore is a backup datastore with failed jobs of its own (the first
// one's error named) and snapshots that failed verification.
func datastore(failedJobs, verifyFailed int) snapshot.Resource {
	bs := &snapshot.BackupStore{Jobs: []snapshot.Job{{ID: "ok-1", Type: "prune", LastStatus: snapshot.BackupOK}}}
	for i := range failedJobs {
		bs.Jobs = append(bs.Jobs, snapshot.Job{ID: "v-" + strconv.Itoa(i), Type: "verify", LastStatus: snapshot.BackupFailed,
			LastError: "verification failed - please check the log for details"})
	}
	for i := range verifyFailed {
		bs.VerifyFailed = append(bs.VerifyFailed, "vm/10"+strconv.Itoa(i)+"/2026-11-30T02:00:00Z")
	}
	return snapshot.Resource{ID: "storage/pbs1/store1", Kind: snapshot.KindStorage, Name: "store1", Status: "online", BackupStore: bs}
}

// TestBackupJobFailed: the failing items of a datastore are jobs whose
// last run failed and snapshots whose last verification failed. They open
// a warning at the trigger (1) and a critical at 3. An operator's trigger
// 3 and clear 1 hold the signal open down to 1.
func TestBackupJobFailed(t *testing.T) {
	def := policy(t, alerts.Settings{})
	op := policy(t, alerts.Settings{Defaults: alerts.KindSettings{Storage: alerts.StorageSettings{
		BackupJobs: alerts.ThresholdSetting{Trigger: f(3), Clear: f(1), Critical: f(5)}}}})
	active := signals.Active{{Type: signals.TypeBackupJobFailed, ResourceID: "storage/pbs1/store1"}: true}
	cases := []struct {
		name          string
		p             *alerts.Policy
		jobs, verify  int
		active        signals.Active
		severity      string // "" no signal
		threshold     float64
		trigger, clr  float64
		critical      float64
		held          bool
		summaryDetail string
	}{
		{"nothing failing", def, 0, 0, nil, "", 0, 1, 1, 3, false, ""},
		{"nothing failing, was open", def, 0, 0, active, "", 0, 1, 1, 3, false, ""},
		{"one failed job", def, 1, 0, nil, signals.SeverityWarning, 1, 1, 1, 3, false,
			"last run failed: verify v-0 (1 failing, at or above 1)"},
		{"one failed verification", def, 0, 1, nil, signals.SeverityWarning, 1, 1, 1, 3, false,
			"1 backup snapshots failed verification (1 failing, at or above 1)"},
		{"two failing", def, 1, 1, nil, signals.SeverityWarning, 1, 1, 1, 3, false,
			"last run failed: verify v-0; 1 backup snapshots failed verification (2 failing, at or above 1)"},
		{"three failing: critical", def, 2, 1, nil, signals.SeverityCritical, 3, 1, 1, 3, false,
			"last run failed: verify v-0, verify v-1; 1 backup snapshots failed verification (3 failing, at or above 3)"},
		{"operator: two below trigger", op, 2, 0, nil, "", 0, 3, 1, 5, false, ""},
		{"operator: three at trigger", op, 3, 0, nil, signals.SeverityWarning, 3, 3, 1, 5, false,
			"last run failed: verify v-0, verify v-1, verify v-2 (3 failing, at or above 3)"},
		{"operator: one held", op, 1, 0, active, signals.SeverityWarning, 3, 3, 1, 5, true,
			"last run failed: verify v-0 (1 failing, still at or above clear 1 after reaching 3)"},
		{"operator: none clears", op, 0, 0, active, "", 0, 3, 1, 5, false, ""},
		{"operator: five critical", op, 4, 1, nil, signals.SeverityCritical, 5, 3, 1, 5, false,
			"last run failed: verify v-0, verify v-1, verify v-2, verify v-3; 1 backup snapshots failed verification (5 failing, at or above 5)"},
	}
	for _, c := range cases {
		r := datastore(c.jobs, c.verify)
		sigs := detect(t, c.p, c.active, r)
		if c.severity == "" {
			if len(sigs) != 0 {
				t.Errorf("%s: %+v", c.name, sigs)
			}
			continue
		}
		n := c.jobs + c.verify
		want := signals.Signal{Type: signals.TypeBackupJobFailed, ResourceID: "storage/pbs1/store1", ResourceKind: snapshot.KindStorage,
			ResourceName: "store1", Severity: c.severity, Category: signals.CategoryBackup, Value: float64(n), Threshold: c.threshold,
			Summary:  "backup datastore store1 (storage/pbs1/store1): " + c.summaryDetail,
			Evidence: map[string]any{"failed_jobs": c.jobs, "verify_failed": c.verify, "trigger": c.trigger, "clear": c.clr, "critical": c.critical}}
		if c.jobs > 0 {
			names := "verify v-0"
			for i := 1; i < c.jobs; i++ {
				names += ", verify v-" + strconv.Itoa(i)
			}
			want.Evidence["jobs"] = names
			want.Evidence["last_error"] = "verification failed - please check the log for details"
		}
		if c.verify > 0 {
			want.Evidence["first_verify_failed"] = "vm/100/2026-11-30T02:00:00Z"
		}
		if c.held {
			want.Evidence["held_by_hysteresis"] = true
		}
		if got := *one(t, sigs); !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, want)
		}
	}
	// A trigger given alone moves the clear to it: a count has no margin.
	two := policy(t, alerts.Settings{Defaults: alerts.KindSettings{Storage: alerts.StorageSettings{BackupJobs: alerts.ThresholdSetting{Trigger: f(2)}}}})
	if sigs := detect(t, two, active, datastore(1, 0)); len(sigs) != 0 {
		t.Errorf("trigger 2 alone holds 1 failing open: %+v", sigs)
	}
	if sigs := detect(t, two, nil, datastore(2, 0)); len(sigs) != 1 || sigs[0].Evidence["clear"] != 2.0 {
		t.Errorf("trigger 2 alone: %+v", sigs)
	}
	// Judged only where the datastore's jobs were read.
	plain := snapshot.Resource{ID: "storage/pve1/local", Kind: snapshot.KindStorage, Status: "online"}
	if signals.Evaluated(&plain, signals.TypeBackupJobFailed) {
		t.Error("a storage without backup_store is judged")
	}
	ds := datastore(0, 0)
	if !signals.Evaluated(&ds, signals.TypeBackupJobFailed) {
		t.Error("a datastore with nothing failing is not judged")
	}
}

// The count threshold's rules: clear at most trigger, critical above it.
func TestBackupJobsThresholdRules(t *testing.T) {
	for _, c := range []struct {
		set  alerts.ThresholdSetting
		want string
	}{
		{alerts.ThresholdSetting{Trigger: f(2), Clear: f(3)}, "alerts.defaults.storage.backup_jobs.clear: 3 must be at most trigger 2"},
		{alerts.ThresholdSetting{Trigger: f(2), Critical: f(2)}, "alerts.defaults.storage.backup_jobs.critical: 2 must be above trigger 2"},
		{alerts.ThresholdSetting{Trigger: f(0)}, "alerts.defaults.storage.backup_jobs.trigger: 0 is outside (0, 100]"},
	} {
		_, err := alerts.New(alerts.Settings{Defaults: alerts.KindSettings{Storage: alerts.StorageSettings{BackupJobs: c.set}}})
		if err == nil || err.Error() != c.want {
			t.Errorf("%+v: %v, want %q", c.set, err, c.want)
		}
	}
}
