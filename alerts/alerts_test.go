package alerts_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/snapshot"
)

func fp(v float64) *float64 { return &v }

// TestDiskThresholds resolves the disk settings: defaults, a trigger
// alone (clear follows it, downwards for temperature and upwards for
// wear), and an override by kind.
func TestDiskThresholds(t *testing.T) {
	disk := &snapshot.Resource{ID: "disk/n/sda", Kind: snapshot.KindDisk}
	hot := &snapshot.Resource{ID: "disk/n/nvme0n1", Kind: snapshot.KindDisk}
	p, err := alerts.New(alerts.Settings{
		Defaults: alerts.KindSettings{Disk: alerts.DiskSettings{Wear: alerts.ThresholdSetting{Trigger: fp(30)}}},
		Overrides: []alerts.Override{{
			Match:        alerts.Match{ID: "disk/*/nvme*", Kind: "disk"},
			KindSettings: alerts.KindSettings{Disk: alerts.DiskSettings{Temperature: alerts.ThresholdSetting{Trigger: fp(70), Critical: fp(80)}}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := p.Resolve(disk)
	want := alerts.Thresholds{
		Temperature:  alerts.Threshold{Trigger: 55, Clear: 50, Critical: 65},
		Wear:         alerts.Threshold{Trigger: 30, Clear: 35, Critical: 10},
		BackupMaxAge: alerts.DefaultBackupMaxAge,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("disk: %+v, want %+v", got, want)
	}
	want.Temperature = alerts.Threshold{Trigger: 70, Clear: 65, Critical: 80}
	if got := p.Resolve(hot); !reflect.DeepEqual(got, want) {
		t.Errorf("nvme override: %+v, want %+v", got, want)
	}
}

// TestDiskThresholdsRejected names the key of each bad disk setting:
// wear falls, so its clear must be above trigger and critical below.
func TestDiskThresholdsRejected(t *testing.T) {
	_, err := alerts.New(alerts.Settings{Defaults: alerts.KindSettings{Disk: alerts.DiskSettings{
		Temperature: alerts.ThresholdSetting{Trigger: fp(60), Clear: fp(61), Critical: fp(55)},
		Wear:        alerts.ThresholdSetting{Trigger: fp(20), Clear: fp(15), Critical: fp(30)},
	}}})
	if err == nil {
		t.Fatal("accepted")
	}
	want := []string{
		"alerts.defaults.disk.temperature.clear: 61 must be below trigger 60",
		"alerts.defaults.disk.temperature.critical: 55 must be above trigger 60",
		"alerts.defaults.disk.wear.clear: 15 must be above trigger 20 (the threshold falls)",
		"alerts.defaults.disk.wear.critical: 30 must be below trigger 20 (the threshold falls)",
	}
	if got := err.(*alerts.ValidationError).Problems; !reflect.DeepEqual(got, want) {
		t.Errorf("problems\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	_, err = alerts.New(alerts.Settings{Defaults: alerts.KindSettings{Disk: alerts.DiskSettings{Wear: alerts.ThresholdSetting{Trigger: fp(98)}}}})
	if err == nil || err.Error() != "alerts.defaults.disk.wear.clear: effective clear 103 must be at most 100 (set clear explicitly)" {
		t.Errorf("wear trigger 98: %v", err)
	}
}

// TestLockAgeThresholds: guest.lock_age is minutes, up to a week (not a
// percentage), with the rising rules and each key named.
func TestLockAgeThresholds(t *testing.T) {
	p, err := alerts.New(alerts.Settings{Defaults: alerts.KindSettings{Guest: alerts.GuestSettings{LockAge: alerts.ThresholdSetting{Trigger: fp(240)}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Resolve(&snapshot.Resource{ID: "vm/1", Kind: snapshot.KindVM}).LockAge, (alerts.Threshold{Trigger: 240, Clear: 235}); got != want {
		t.Errorf("lock_age: %+v, want %+v", got, want)
	}
	_, err = alerts.New(alerts.Settings{Defaults: alerts.KindSettings{Guest: alerts.GuestSettings{
		LockAge: alerts.ThresholdSetting{Trigger: fp(20000), Clear: fp(30000), Critical: fp(10)}}}})
	want := []string{
		"alerts.defaults.guest.lock_age.clear: 30000 is outside (0, 10080]",
		"alerts.defaults.guest.lock_age.clear: 30000 must be below trigger 20000",
		"alerts.defaults.guest.lock_age.critical: 10 must be above trigger 20000",
		"alerts.defaults.guest.lock_age.trigger: 20000 is outside (0, 10080]",
	}
	var ve *alerts.ValidationError
	if !errors.As(err, &ve) || !reflect.DeepEqual(ve.Problems, want) {
		t.Errorf("problems %v, want\n%s", err, strings.Join(want, "\n"))
	}
}

// TestSnapshotAgeThresholds: guest.snapshot_age is days, up to ten years
// (not a percentage), with the rising rules and each key named.
func TestSnapshotAgeThresholds(t *testing.T) {
	p, err := alerts.New(alerts.Settings{Defaults: alerts.KindSettings{Guest: alerts.GuestSettings{SnapshotAge: alerts.ThresholdSetting{Trigger: fp(90)}}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Resolve(&snapshot.Resource{ID: "vm/1", Kind: snapshot.KindVM}).SnapshotAge, (alerts.Threshold{Trigger: 90, Clear: 85}); got != want {
		t.Errorf("snapshot_age: %+v, want %+v", got, want)
	}
	_, err = alerts.New(alerts.Settings{Defaults: alerts.KindSettings{Guest: alerts.GuestSettings{
		SnapshotAge: alerts.ThresholdSetting{Trigger: fp(3000), Clear: fp(4000), Critical: fp(10)}}}})
	want := []string{
		"alerts.defaults.guest.snapshot_age.clear: 4000 is outside (0, 3650]",
		"alerts.defaults.guest.snapshot_age.clear: 4000 must be below trigger 3000",
		"alerts.defaults.guest.snapshot_age.critical: 10 must be above trigger 3000",
	}
	var ve *alerts.ValidationError
	if !errors.As(err, &ve) || !reflect.DeepEqual(ve.Problems, want) {
		t.Errorf("problems %v, want\n%s", err, strings.Join(want, "\n"))
	}
}
