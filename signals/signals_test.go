package signals_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

var takenAt = time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)

func f(v float64) *float64 { return &v }
func b(v bool) *bool       { return &v }
func ts(d time.Duration) *time.Time {
	t := takenAt.Add(-d)
	return &t
}

func policy(t *testing.T, s alerts.Settings) *alerts.Policy {
	t.Helper()
	p, err := alerts.New(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func detect(t *testing.T, p *alerts.Policy, active signals.Active, rs ...snapshot.Resource) []signals.Signal {
	t.Helper()
	return signals.Detect(&snapshot.Snapshot{Version: 1, TakenAt: takenAt, Resources: rs}, p, active)
}

type want struct {
	typ      signals.Type
	severity string
}

func got(sigs []signals.Signal) []want {
	out := make([]want, 0, len(sigs))
	for _, s := range sigs {
		out = append(out, want{s.Type, s.Severity})
	}
	return out
}

func equal(a, b []want) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestDetectRules(t *testing.T) {
	def := policy(t, alerts.Settings{})
	node := func(m map[string]float64, status string) snapshot.Resource {
		return snapshot.Resource{ID: "node/n1", Kind: snapshot.KindNode, Status: status, Metrics: snapshot.MetricsOf(m)}
	}
	vm := func(m map[string]float64, status string) snapshot.Resource {
		return snapshot.Resource{ID: "vm/1", Kind: snapshot.KindVM, Status: status, Metrics: snapshot.MetricsOf(m)}
	}
	storage := func(u float64) snapshot.Resource {
		return snapshot.Resource{ID: "storage/n1/s", Kind: snapshot.KindStorage, Status: "online", Metrics: snapshot.MetricsOf(map[string]float64{"usage_percent": u})}
	}
	disk := func(s snapshot.Smart) snapshot.Resource {
		return snapshot.Resource{ID: "disk/n1/sda", Kind: snapshot.KindDisk, Smart: &s}
	}
	backup := func(bk snapshot.Backup) snapshot.Resource {
		return snapshot.Resource{ID: "vm/2", Kind: snapshot.KindVM, Status: "running", Backup: &bk}
	}
	W, C := signals.SeverityWarning, signals.SeverityCritical
	cases := []struct {
		name string
		r    snapshot.Resource
		want []want
	}{
		{"cpu exactly at trigger is not a signal", node(map[string]float64{"cpu_percent": 70}, "online"), nil},
		{"cpu just above trigger", node(map[string]float64{"cpu_percent": 70.01}, "online"), []want{{signals.TypeHighCPU, W}}},
		{"avg preferred over current (avg low)", node(map[string]float64{"cpu_percent": 99, "cpu_percent_avg": 50}, "online"), nil},
		{"avg preferred over current (avg high)", node(map[string]float64{"cpu_percent": 10, "cpu_percent_avg": 88}, "online"), []want{{signals.TypeHighCPU, W}}},
		{"memory exactly at trigger", node(map[string]float64{"memory_percent": 80}, "online"), nil},
		{"memory above trigger", node(map[string]float64{"memory_percent": 80.5}, "online"), []want{{signals.TypeHighMemory, W}}},
		{"offline node metrics are stale, the node is offline", node(map[string]float64{"cpu_percent": 99, "memory_percent": 99}, "offline"), []want{{signals.TypeNodeOffline, C}}},
		{"running guest cpu and memory", vm(map[string]float64{"cpu_percent": 71, "memory_percent": 81}, "running"), []want{{signals.TypeHighCPU, W}, {signals.TypeHighMemory, W}}},
		{"stopped guest metrics are stale", vm(map[string]float64{"cpu_percent": 99, "memory_percent": 99, "disk_percent": 99}, "stopped"), nil},
		{"paused guest: no cpu/memory, disk counts", vm(map[string]float64{"cpu_percent": 99, "disk_percent": 80}, "paused"), []want{{signals.TypeHighDisk, W}}},
		{"guest disk at trigger", vm(map[string]float64{"disk_percent": 75}, "running"), nil},
		{"guest disk warning", vm(map[string]float64{"disk_percent": 76}, "running"), []want{{signals.TypeHighDisk, W}}},
		{"guest disk at critical is warning", vm(map[string]float64{"disk_percent": 95}, "running"), []want{{signals.TypeHighDisk, W}}},
		{"guest disk above critical", vm(map[string]float64{"disk_percent": 95.1}, "running"), []want{{signals.TypeHighDisk, C}}},
		{"storage at trigger", storage(75), nil},
		{"storage warning", storage(78), []want{{signals.TypeHighDisk, W}}},
		{"storage critical", storage(96.3), []want{{signals.TypeHighDisk, C}}},
		{"smart healthy", disk(snapshot.Smart{Health: "PASSED"}), nil},
		{"smart health ok lower-case", disk(snapshot.Smart{Health: "ok"}), nil},
		{"smart health unknown", disk(snapshot.Smart{Health: "Unknown"}), nil},
		{"smart health failed", disk(snapshot.Smart{Health: "FAILED"}), []want{{signals.TypeSmartFailure, C}}},
		{"smart pending sectors", disk(snapshot.Smart{Health: "PASSED", PendingSectors: 2}), []want{{signals.TypeSmartFailure, C}}},
		{"smart offline uncorrectable", disk(snapshot.Smart{OfflineUncorrectable: 1}), []want{{signals.TypeSmartFailure, C}}},
		{"smart media errors", disk(snapshot.Smart{MediaErrors: 3}), []want{{signals.TypeSmartFailure, C}}},
		{"smart reallocated is warning", disk(snapshot.Smart{ReallocatedSectors: 8}), []want{{signals.TypeSmartFailure, W}}},
		{"smart crc is warning", disk(snapshot.Smart{UDMACRCErrors: 4}), []want{{signals.TypeSmartFailure, W}}},
		{"smart highest severity wins, one signal", disk(snapshot.Smart{ReallocatedSectors: 8, PendingSectors: 1}), []want{{signals.TypeSmartFailure, C}}},
		{"backup failed inside window", backup(snapshot.Backup{LastStatus: "failed", LastFinishedAt: ts(4 * time.Hour), LastSuccessAt: ts(24 * time.Hour)}), []want{{signals.TypeBackupFailed, W}}},
		{"backup failed exactly at window edge", backup(snapshot.Backup{LastStatus: "failed", LastFinishedAt: ts(48 * time.Hour), LastSuccessAt: ts(24 * time.Hour)}), []want{{signals.TypeBackupFailed, W}}},
		{"backup failed outside window", backup(snapshot.Backup{LastStatus: "failed", LastFinishedAt: ts(49 * time.Hour), LastSuccessAt: ts(24 * time.Hour)}), nil},
		{"backup failed without finish time counts as now", backup(snapshot.Backup{LastStatus: "failed", LastSuccessAt: ts(time.Hour)}), []want{{signals.TypeBackupFailed, W}}},
		{"backup success exactly max age is fresh", backup(snapshot.Backup{LastStatus: "ok", LastSuccessAt: ts(48 * time.Hour)}), nil},
		{"backup stale", backup(snapshot.Backup{LastStatus: "ok", LastSuccessAt: ts(48*time.Hour + time.Second)}), []want{{signals.TypeBackupStale, W}}},
		{"backup never succeeded", backup(snapshot.Backup{LastStatus: "failed", LastFinishedAt: ts(time.Hour)}), []want{{signals.TypeBackupFailed, W}, {signals.TypeBackupStale, W}}},
		{"running guest unreachable", snapshot.Resource{ID: "vm/3", Kind: snapshot.KindVM, Status: "running", Reachable: b(false)}, []want{{signals.TypeGuestUnreachable, W}}},
		{"stopped guest is never unreachable", snapshot.Resource{ID: "ct/3", Kind: snapshot.KindContainer, Status: "stopped", Reachable: b(false)}, nil},
		{"unknown reachability is not a signal", snapshot.Resource{ID: "vm/3", Kind: snapshot.KindVM, Status: "running"}, nil},
		{"reachable guest", snapshot.Resource{ID: "vm/3", Kind: snapshot.KindVM, Status: "running", Reachable: b(true)}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := got(detect(t, def, nil, tc.r))
			if !equal(g, tc.want) {
				t.Fatalf("got %v, want %v", g, tc.want)
			}
		})
	}
}

func TestHysteresis(t *testing.T) {
	p := policy(t, alerts.Settings{})
	r := func(v float64) snapshot.Resource {
		return snapshot.Resource{ID: "node/n1", Kind: snapshot.KindNode, Status: "online", Metrics: snapshot.MetricsOf(map[string]float64{"cpu_percent": v})}
	}
	active := signals.Active{{Type: signals.TypeHighCPU, ResourceID: "node/n1"}: true}
	cases := []struct {
		v      float64
		active signals.Active
		open   bool
	}{
		{68, nil, false},      // between clear and trigger, not open: stays closed
		{68, active, true},    // between clear and trigger, open: held
		{65, active, true},    // exactly at clear: held (closes only strictly below)
		{64.9, active, false}, // below clear: closes
		{71, active, true},
	}
	for _, c := range cases {
		sigs := detect(t, p, c.active, r(c.v))
		if (len(sigs) == 1) != c.open {
			t.Errorf("value %v active=%v: got %d signals, want open=%v", c.v, c.active != nil, len(sigs), c.open)
		}
		if c.open && c.v < 70 && sigs[0].Evidence["held_by_hysteresis"] != true {
			t.Errorf("value %v: held signal not marked in evidence", c.v)
		}
	}
}

func TestOverridesAndClearDefaults(t *testing.T) {
	p := policy(t, alerts.Settings{
		Defaults: alerts.KindSettings{Guest: alerts.GuestSettings{Memory: alerts.ThresholdSetting{Trigger: f(85)}}},
		Overrides: []alerts.Override{
			{Match: alerts.Match{Tags: []string{"db"}}, KindSettings: alerts.KindSettings{Guest: alerts.GuestSettings{Memory: alerts.ThresholdSetting{Trigger: f(95), Clear: f(90)}}}},
			{Match: alerts.Match{ID: "vm/1*"}, KindSettings: alerts.KindSettings{Backup: alerts.BackupSettings{MaxAge: durp(72 * time.Hour)}}},
			{Match: alerts.Match{ID: "storage/*", Kind: "storage"}, KindSettings: alerts.KindSettings{Storage: alerts.StorageSettings{Usage: alerts.ThresholdSetting{Trigger: f(90)}}}},
		},
	})
	mem := func(id string, tags []string, v float64) snapshot.Resource {
		return snapshot.Resource{ID: id, Kind: snapshot.KindVM, Status: "running", Tags: tags, Metrics: snapshot.MetricsOf(map[string]float64{"memory_percent": v})}
	}
	if n := len(detect(t, p, nil, mem("vm/5", nil, 84))); n != 0 {
		t.Errorf("default trigger 85 from config: 84 gave %d signals", n)
	}
	if n := len(detect(t, p, nil, mem("vm/5", nil, 86))); n != 1 {
		t.Errorf("default trigger 85: 86 gave %d signals", n)
	}
	// clear defaults to trigger-5 = 80 when only trigger is configured
	held := detect(t, p, signals.Active{{Type: signals.TypeHighMemory, ResourceID: "vm/5"}: true}, mem("vm/5", nil, 80))
	if len(held) != 1 {
		t.Errorf("clear 80 (trigger-5): value 80 should be held, got %d", len(held))
	}
	if n := len(detect(t, p, nil, mem("vm/5", []string{"DB"}, 94))); n != 0 {
		t.Errorf("db tag override 95: 94 gave %d signals", n)
	}
	if n := len(detect(t, p, nil, mem("vm/5", []string{"db"}, 96))); n != 1 {
		t.Errorf("db tag override 95: 96 gave %d signals", n)
	}
	stale := func(id string) snapshot.Resource {
		return snapshot.Resource{ID: id, Kind: snapshot.KindVM, Status: "running", Backup: &snapshot.Backup{LastStatus: "ok", LastSuccessAt: ts(60 * time.Hour)}}
	}
	if n := len(detect(t, p, nil, stale("vm/123"))); n != 0 {
		t.Errorf("id glob vm/1* max_age 72h: 60h old gave %d signals", n)
	}
	if n := len(detect(t, p, nil, stale("vm/223"))); n != 1 {
		t.Errorf("vm/223 is not matched by vm/1*: 60h old gave %d signals, want 1", n)
	}
	st := snapshot.Resource{ID: "storage/pve1/local", Kind: snapshot.KindStorage, Status: "online", Metrics: snapshot.MetricsOf(map[string]float64{"usage_percent": 85})}
	if n := len(detect(t, p, nil, st)); n != 0 {
		t.Errorf("storage/* glob spans slashes: 85 under trigger 90 gave %d signals", n)
	}
}

func durp(d time.Duration) *time.Duration { return &d }

func TestExamples(t *testing.T) {
	p := policy(t, alerts.Settings{})
	load := func(name string) *snapshot.Snapshot {
		data, err := os.ReadFile(filepath.Join("..", "examples", name))
		if err != nil {
			t.Fatal(err)
		}
		s, probs, err := snapshot.Decode(data, snapshot.DecodeOptions{})
		if err != nil || len(probs) != 0 {
			t.Fatalf("%s: %v %v", name, err, probs)
		}
		return s
	}
	if sigs := signals.Detect(load("small-healthy.json"), p, nil); len(sigs) != 0 {
		t.Errorf("healthy fleet: %d signals: %+v", len(sigs), sigs)
	}
	sigs := signals.Detect(load("small-faults.json"), p, nil)
	var g []string
	for _, s := range sigs {
		g = append(g, string(s.Type)+" "+s.ResourceID+" "+s.Severity)
	}
	sort.Strings(g)
	want := []string{
		"backup_failed vm/101 warning", "backup_stale vm/101 warning",
		"guest_unreachable vm/102 warning", "high_cpu node/pve2 warning",
		"high_disk storage/pve1/local-zfs critical", "high_disk storage/pve2/backup warning",
		"high_memory vm/101 warning", "smart_failure disk/pve1/sda critical", "smart_failure disk/pve1/sdb warning",
	}
	if len(g) != len(want) {
		t.Fatalf("got %d signals %v, want %v", len(g), g, want)
	}
	for i := range want {
		if g[i] != want[i] {
			t.Errorf("signal %d: got %q want %q", i, g[i], want[i])
		}
	}
}

// TestProxmoxHealthExample holds examples/proxmox-health.json to the
// signals its README lists, whole.
func TestProxmoxHealthExample(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "examples", "proxmox-health.json"))
	if err != nil {
		t.Fatal(err)
	}
	snap, probs, err := snapshot.Decode(data, snapshot.DecodeOptions{Strict: true})
	if err != nil || len(probs) != 0 {
		t.Fatalf("%v %v", err, probs)
	}
	var g []string
	for _, s := range signals.Detect(snap, policy(t, alerts.Settings{}), nil) {
		g = append(g, string(s.Type)+" "+s.ResourceID+" "+s.Severity+": "+s.Summary)
	}
	want := []string{
		"node_offline node/pve3 critical: node pve3 (node/pve3) is offline",
		"zfs_pool_degraded storage/pve1/zpool/rpool warning: ZFS pool rpool (storage/pve1/zpool/rpool): state DEGRADED, checksum errors 3",
		"disk_temperature disk/pve1/sda warning: disk sda (disk/pve1/sda) at 55 °C, at or above 55",
		"disk_wear disk/pve1/sdb warning: disk sdb (disk/pve1/sdb) has 15% life left, at or below 20",
		"smart_failure disk/pve2/nvme0n1 critical: disk nvme0n1 (disk/pve2/nvme0n1) reports SMART problems: NVMe critical warning 0x04 (reliability degraded)",
		"smart_failure disk/pve2/sdc warning: disk sdc (disk/pve2/sdc) reports SMART problems: grown defects 12",
		"backup_job_failed storage/pbs1/store1 warning: backup datastore store1 (storage/pbs1/store1): last run failed: verify v-nightly; 1 backup snapshots failed verification (2 failing, at or above 1)",
	}
	if strings.Join(g, "\n") != strings.Join(want, "\n") {
		t.Errorf("signals\n%s\nwant\n%s", strings.Join(g, "\n"), strings.Join(want, "\n"))
	}
}

func TestMatch(t *testing.T) {
	sigs := []signals.Signal{
		{Type: signals.TypeHighDisk, ResourceID: "storage/a", Category: "capacity", Severity: signals.SeverityCritical},
		{Type: signals.TypeHighCPU, ResourceID: "node/a", Category: "performance", Severity: signals.SeverityWarning},
	}
	m, u := signals.Match(sigs, []signals.Filed{
		{ResourceID: " Storage/a ", Key: "high_disk", Category: "capacity", Severity: "critical"},
		{ResourceID: "node/a", Key: "high_cpu", Category: "capacity", Severity: "critical"},
	})
	if len(m) != 1 || m[0].ResourceID != "storage/a" || len(u) != 1 || u[0].ResourceID != "node/a" {
		t.Fatalf("matched %v unmatched %v", m, u)
	}
}

// The attack: a model files benign findings on the resource and category
// of every real problem, so that matching would count them as covered.
func TestMatchNeedsSeverityAtLeastTheSignals(t *testing.T) {
	crit := signals.Signal{Type: signals.TypeHighDisk, ResourceID: "storage/a", Category: "capacity", Severity: signals.SeverityCritical}
	warn := signals.Signal{Type: signals.TypeBackupFailed, ResourceID: "vm/1", Category: "backup", Severity: signals.SeverityWarning}
	for _, tc := range []struct {
		filed   string
		sig     signals.Signal
		matched bool
	}{
		{"info", crit, false}, {"watch", crit, false}, {"warning", crit, false}, {"critical", crit, true},
		{"info", warn, false}, {"watch", warn, false}, {"warning", warn, true}, {"critical", warn, true},
		{"", warn, false}, {"bogus", warn, false},
	} {
		filed := []signals.Filed{{ResourceID: tc.sig.ResourceID, Key: string(tc.sig.Type), Category: tc.sig.Category, Severity: tc.filed}}
		m, u := signals.Match([]signals.Signal{tc.sig}, filed)
		if got := len(m) == 1 && len(u) == 0; got != tc.matched || len(m)+len(u) != 1 {
			t.Errorf("%s finding vs %s signal: matched %v unmatched %v, want matched=%v", tc.filed, tc.sig.Severity, m, u, tc.matched)
		}
	}
	// A benign finding beside a covering one does not undo the cover.
	filed := []signals.Filed{
		{ResourceID: "storage/a", Key: "high_disk", Category: "capacity", Severity: "info"},
		{ResourceID: "storage/a", Key: "high_disk", Category: "capacity", Severity: "critical"},
		{ResourceID: "storage/a", Key: "high_disk", Category: "capacity", Severity: "watch"},
	}
	if m, u := signals.Match([]signals.Signal{crit}, filed); len(m) != 1 || len(u) != 0 {
		t.Fatalf("matched %v unmatched %v", m, u)
	}
}

func TestSeverityRank(t *testing.T) {
	order := []string{"", "info", "watch", "warning", "critical"}
	for i, s := range order {
		if got := signals.SeverityRank(s); got != i {
			t.Errorf("SeverityRank(%q) = %d, want %d", s, got, i)
		}
	}
	if signals.SeverityRank("CRITICAL") != 0 {
		t.Error("severities are exact lower-case names")
	}
}

func TestCovering(t *testing.T) {
	if typ, ok := signals.Covering("high_disk", "capacity"); !ok || typ != signals.TypeHighDisk {
		t.Error("high_disk/capacity is covered")
	}
	if _, ok := signals.Covering("high_disk", "performance"); ok {
		t.Error("a catalogue key filed under another category is not covered")
	}
	if _, ok := signals.Covering("zfs-fragmentation", "capacity"); ok {
		t.Error("a model-only key is not covered")
	}
}
