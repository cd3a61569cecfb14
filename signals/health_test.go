package signals_test

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

func i64(v int64) *int64 { return &v }

func diskWith(sm snapshot.Smart) snapshot.Resource {
	return snapshot.Resource{ID: "disk/pve1/sda", Kind: snapshot.KindDisk, Name: "sda", Parent: "node/pve1", Smart: &sm}
}

func one(t *testing.T, sigs []signals.Signal) *signals.Signal {
	t.Helper()
	if len(sigs) != 1 {
		t.Fatalf("got %d signals, want 1: %+v", len(sigs), sigs)
	}
	return &sigs[0]
}

// TestNodeOffline: offline and unknown are critical; online, and a node
// with no status, are not signals.
func TestNodeOffline(t *testing.T) {
	p := policy(t, alerts.Settings{})
	node := func(status string) snapshot.Resource {
		return snapshot.Resource{ID: "node/pve2", Kind: snapshot.KindNode, Name: "pve2", Status: status,
			Metrics: snapshot.MetricsOf(map[string]float64{"cpu_percent": 99})}
	}
	got := *one(t, detect(t, p, nil, node("offline")))
	want := signals.Signal{Type: signals.TypeNodeOffline, ResourceID: "node/pve2", ResourceKind: snapshot.KindNode, ResourceName: "pve2",
		Severity: signals.SeverityCritical, Category: signals.CategoryReliability,
		Summary: "node pve2 (node/pve2) is offline", Evidence: map[string]any{"status": "offline"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("offline\n%+v\nwant\n%+v", got, want)
	}
	unknown := node("unknown")
	unknown.Metrics = nil
	got = *one(t, detect(t, p, nil, unknown))
	want.Summary, want.Evidence = "node pve2 (node/pve2) has status unknown: its source cannot reach it", map[string]any{"status": "unknown"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("unknown\n%+v\nwant\n%+v", got, want)
	}
	online := node("online")
	online.Metrics = nil
	for _, r := range []snapshot.Resource{online, {ID: "node/pve3", Kind: snapshot.KindNode}} {
		if sigs := detect(t, p, nil, r); len(sigs) != 0 {
			t.Errorf("%s status %q: %+v", r.ID, r.Status, sigs)
		}
	}
	for status, want := range map[string]bool{"online": true, "offline": true, "unknown": true, "": false} {
		r := node(status)
		if got := signals.Evaluated(&r, signals.TypeNodeOffline); got != want {
			t.Errorf("Evaluated(status %q) = %v, want %v", status, got, want)
		}
	}
}

// TestDiskTemperature: both edges of trigger (55) and critical (65) with
// the defaults, and the hysteresis down to clear (50).
func TestDiskTemperature(t *testing.T) {
	p := policy(t, alerts.Settings{})
	active := signals.Active{{Type: signals.TypeDiskTemperature, ResourceID: "disk/pve1/sda"}: true}
	cases := []struct {
		temp     int64
		active   signals.Active
		severity string // "" no signal
		held     bool
	}{
		{54, nil, "", false},
		{55, nil, signals.SeverityWarning, false},
		{64, nil, signals.SeverityWarning, false},
		{65, nil, signals.SeverityCritical, false},
		{52, nil, "", false},
		{52, active, signals.SeverityWarning, true},
		{50, active, signals.SeverityWarning, true},
		{49, active, "", false},
	}
	for _, c := range cases {
		sigs := detect(t, p, c.active, diskWith(snapshot.Smart{Health: "PASSED", TemperatureC: i64(c.temp)}))
		if c.severity == "" {
			if len(sigs) != 0 {
				t.Errorf("%d °C active=%v: %+v", c.temp, c.active != nil, sigs)
			}
			continue
		}
		got := *one(t, sigs)
		want := signals.Signal{Type: signals.TypeDiskTemperature, ResourceID: "disk/pve1/sda", ResourceKind: snapshot.KindDisk, ResourceName: "sda",
			Severity: c.severity, Category: signals.CategoryReliability, Value: float64(c.temp), Threshold: 55,
			Evidence: map[string]any{"field": "temperature_c", "value": c.temp, "trigger": 55.0, "clear": 50.0, "critical": 65.0}}
		switch {
		case c.held:
			want.Evidence["held_by_hysteresis"] = true
			want.Summary = "disk sda (disk/pve1/sda) at " + itoa(c.temp) + " °C, still at or above clear 50 after reaching 55"
		case c.severity == signals.SeverityCritical:
			want.Threshold = 65
			want.Summary = "disk sda (disk/pve1/sda) at " + itoa(c.temp) + " °C, at or above 65"
		default:
			want.Summary = "disk sda (disk/pve1/sda) at " + itoa(c.temp) + " °C, at or above 55"
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%d °C\n%+v\nwant\n%+v", c.temp, got, want)
		}
	}
}

// TestDiskWear: life left at or below 20 is a warning, at or below 10
// critical, held up to clear 25; an operator's trigger moves the clear.
func TestDiskWear(t *testing.T) {
	p := policy(t, alerts.Settings{})
	active := signals.Active{{Type: signals.TypeDiskWear, ResourceID: "disk/pve1/sda"}: true}
	cases := []struct {
		left     int64
		active   signals.Active
		severity string
		held     bool
	}{
		{21, nil, "", false},
		{20, nil, signals.SeverityWarning, false},
		{11, nil, signals.SeverityWarning, false},
		{10, nil, signals.SeverityCritical, false},
		{0, nil, signals.SeverityCritical, false},
		{23, nil, "", false},
		{23, active, signals.SeverityWarning, true},
		{25, active, signals.SeverityWarning, true},
		{26, active, "", false},
	}
	for _, c := range cases {
		sigs := detect(t, p, c.active, diskWith(snapshot.Smart{WearoutPercent: i64(c.left)}))
		if c.severity == "" {
			if len(sigs) != 0 {
				t.Errorf("%d%% left active=%v: %+v", c.left, c.active != nil, sigs)
			}
			continue
		}
		got := *one(t, sigs)
		want := signals.Signal{Type: signals.TypeDiskWear, ResourceID: "disk/pve1/sda", ResourceKind: snapshot.KindDisk, ResourceName: "sda",
			Severity: c.severity, Category: signals.CategoryReliability, Value: float64(c.left), Threshold: 20,
			Evidence: map[string]any{"field": "wearout_percent", "value": c.left, "trigger": 20.0, "clear": 25.0, "critical": 10.0}}
		switch {
		case c.held:
			want.Evidence["held_by_hysteresis"] = true
			want.Summary = "disk sda (disk/pve1/sda) has " + itoa(c.left) + "% life left, still at or below clear 25 after reaching 20"
		case c.severity == signals.SeverityCritical:
			want.Threshold = 10
			want.Summary = "disk sda (disk/pve1/sda) has " + itoa(c.left) + "% life left, at or below 10"
		default:
			want.Summary = "disk sda (disk/pve1/sda) has " + itoa(c.left) + "% life left, at or below 20"
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%d%% left\n%+v\nwant\n%+v", c.left, got, want)
		}
	}
	op := policy(t, alerts.Settings{Defaults: alerts.KindSettings{Disk: alerts.DiskSettings{Wear: alerts.ThresholdSetting{Trigger: f(40)}}}})
	if got := one(t, detect(t, op, nil, diskWith(snapshot.Smart{WearoutPercent: i64(40)}))); got.Threshold != 40 || got.Evidence["clear"] != 45.0 {
		t.Errorf("operator trigger 40: %+v", got)
	}
	if sigs := detect(t, op, nil, diskWith(snapshot.Smart{WearoutPercent: i64(41)})); len(sigs) != 0 {
		t.Errorf("operator trigger 40, 41%% left: %+v", sigs)
	}
	if sigs := detect(t, p, nil, diskWith(snapshot.Smart{Health: "PASSED"})); len(sigs) != 0 {
		t.Errorf("no readings: %+v", sigs)
	}
	r := diskWith(snapshot.Smart{Health: "PASSED"})
	if signals.Evaluated(&r, signals.TypeDiskWear) || signals.Evaluated(&r, signals.TypeDiskTemperature) {
		t.Error("a disk without readings is not evaluated for wear or temperature")
	}
}

// TestSmartNVMeAndSAS: the NVMe critical-warning byte is critical (its
// bits named), a SAS grown defect list a warning.
func TestSmartNVMeAndSAS(t *testing.T) {
	p := policy(t, alerts.Settings{})
	got := *one(t, detect(t, p, nil, diskWith(snapshot.Smart{Health: "PASSED", NVMeCriticalWarning: 0x05})))
	want := signals.Signal{Type: signals.TypeSmartFailure, ResourceID: "disk/pve1/sda", ResourceKind: snapshot.KindDisk, ResourceName: "sda",
		Severity: signals.SeverityCritical, Category: signals.CategoryReliability, Value: 5,
		Summary: "disk sda (disk/pve1/sda) reports SMART problems: NVMe critical warning 0x05 (spare capacity below threshold, reliability degraded)",
		Evidence: map[string]any{"health": "PASSED", "pending_sectors": int64(0), "offline_uncorrectable": int64(0), "media_errors": int64(0),
			"reallocated_sectors": int64(0), "udma_crc_errors": int64(0), "nvme_critical_warning": int64(5)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("nvme\n%+v\nwant\n%+v", got, want)
	}
	got = *one(t, detect(t, p, nil, diskWith(snapshot.Smart{Health: "OK", GrownDefects: 12})))
	want.Severity, want.Value = signals.SeverityWarning, 12
	want.Summary = "disk sda (disk/pve1/sda) reports SMART problems: grown defects 12"
	want.Evidence = map[string]any{"health": "OK", "pending_sectors": int64(0), "offline_uncorrectable": int64(0), "media_errors": int64(0),
		"reallocated_sectors": int64(0), "udma_crc_errors": int64(0), "grown_defects": int64(12)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sas\n%+v\nwant\n%+v", got, want)
	}
	both := one(t, detect(t, p, nil, diskWith(snapshot.Smart{GrownDefects: 3, NVMeCriticalWarning: 0x40})))
	if both.Severity != signals.SeverityCritical || both.Summary != "disk sda (disk/pve1/sda) reports SMART problems: NVMe critical warning 0x40 (reserved bits 0x40), grown defects 3" {
		t.Errorf("both: %+v", both)
	}
	if sigs := detect(t, p, nil, diskWith(snapshot.Smart{Health: "OK"})); len(sigs) != 0 {
		t.Errorf("healthy SAS disk: %+v", sigs)
	}
}

// TestZFSPoolDegraded: every state and the error counters.
func TestZFSPoolDegraded(t *testing.T) {
	p := policy(t, alerts.Settings{})
	pool := func(z snapshot.ZFS) snapshot.Resource {
		return snapshot.Resource{ID: "storage/pve1/zpool/rpool", Kind: snapshot.KindStorage, Name: "rpool", Status: "online", ZFS: &z}
	}
	ev := func(state string, r, w, c int64) map[string]any {
		return map[string]any{"state": state, "read_errors": r, "write_errors": w, "checksum_errors": c}
	}
	base := signals.Signal{Type: signals.TypeZFSPoolDegraded, ResourceID: "storage/pve1/zpool/rpool", ResourceKind: snapshot.KindStorage,
		ResourceName: "rpool", Category: signals.CategoryReliability}
	cases := []struct {
		z        snapshot.ZFS
		severity string
		value    float64
		summary  string
		ev       map[string]any
	}{
		{snapshot.ZFS{State: "ONLINE"}, "", 0, "", nil},
		{snapshot.ZFS{State: "degraded"}, signals.SeverityWarning, 0, "ZFS pool rpool (storage/pve1/zpool/rpool): state DEGRADED", ev("DEGRADED", 0, 0, 0)},
		{snapshot.ZFS{State: "FAULTED", ReadErrors: 2}, signals.SeverityCritical, 2, "ZFS pool rpool (storage/pve1/zpool/rpool): state FAULTED, read errors 2", ev("FAULTED", 2, 0, 0)},
		{snapshot.ZFS{State: "UNAVAIL"}, signals.SeverityCritical, 0, "ZFS pool rpool (storage/pve1/zpool/rpool): state UNAVAIL", ev("UNAVAIL", 0, 0, 0)},
		{snapshot.ZFS{State: "SUSPENDED"}, signals.SeverityCritical, 0, "ZFS pool rpool (storage/pve1/zpool/rpool): state SUSPENDED", ev("SUSPENDED", 0, 0, 0)},
		{snapshot.ZFS{State: "ONLINE", ChecksumErrors: 1}, signals.SeverityWarning, 1, "ZFS pool rpool (storage/pve1/zpool/rpool): checksum errors 1", ev("ONLINE", 0, 0, 1)},
		{snapshot.ZFS{State: "ONLINE", WriteErrors: 4, ChecksumErrors: 1}, signals.SeverityWarning, 5, "ZFS pool rpool (storage/pve1/zpool/rpool): write errors 4, checksum errors 1", ev("ONLINE", 0, 4, 1)},
		{snapshot.ZFS{State: "RESILVERING", ChecksumErrors: 9}, "", 0, "", nil},
	}
	for _, c := range cases {
		r := pool(c.z)
		r.Name = "rpool"
		sigs := detect(t, p, nil, r)
		if c.severity == "" {
			if len(sigs) != 0 {
				t.Errorf("%+v: %+v", c.z, sigs)
			}
			continue
		}
		want := base
		want.Severity, want.Value, want.Summary, want.Evidence = c.severity, c.value, c.summary, c.ev
		if got := *one(t, sigs); !reflect.DeepEqual(got, want) {
			t.Errorf("%+v\n%+v\nwant\n%+v", c.z, got, want)
		}
	}
	online, odd := pool(snapshot.ZFS{State: "ONLINE"}), pool(snapshot.ZFS{State: "RESILVERING"})
	if !signals.Evaluated(&online, signals.TypeZFSPoolDegraded) || signals.Evaluated(&odd, signals.TypeZFSPoolDegraded) {
		t.Error("an ONLINE pool is evaluated, one in an unrecognised state is not")
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// TestOneFilesystemNamesEveryStorage: storages a source reports as one
// filesystem give one high_disk that names all of them.
func TestOneFilesystemNamesEveryStorage(t *testing.T) {
	p := policy(t, alerts.Settings{})
	r := snapshot.Resource{ID: "storage/pve2/cloud-init", Kind: snapshot.KindStorage, Name: "cloud-init", Status: "online",
		Labels:  map[string]string{snapshot.LabelStorages: "cloud-init,local,snippets", "type": "dir"},
		Metrics: snapshot.MetricsOf(map[string]float64{"usage_percent": 92})}
	got := *one(t, detect(t, p, nil, r))
	want := signals.Signal{Type: signals.TypeHighDisk, ResourceID: r.ID, ResourceKind: snapshot.KindStorage, ResourceName: "cloud-init",
		Severity: signals.SeverityWarning, Category: signals.CategoryCapacity, Value: 92, Threshold: 75,
		Summary:  "storage disk usage on cloud-init (storage/pve2/cloud-init) at 92.0% (current), above 75; one filesystem shared by cloud-init, local, snippets",
		Evidence: map[string]any{"metric": "usage_percent", "value": 92.0, "trigger": 75.0, "clear": 70.0, "critical": 95.0, "storages": "cloud-init,local,snippets"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("\n%+v\nwant\n%+v", got, want)
	}
	// A guest's label of that name means nothing.
	g := snapshot.Resource{ID: "vm/1", Kind: snapshot.KindVM, Status: "running", Labels: map[string]string{snapshot.LabelStorages: "x"},
		Metrics: snapshot.MetricsOf(map[string]float64{"disk_percent": 80})}
	if s := one(t, detect(t, p, nil, g)); s.Evidence["storages"] != nil {
		t.Errorf("guest: %+v", s)
	}
}
