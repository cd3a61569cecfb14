package proxmox

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

// pve7Storage is GET /storage as PVE 7 answers it: numbers as strings,
// maxfiles instead of prune-backups, paths with a trailing slash.
const pve7Storage = `[
 {"storage":"local","type":"dir","path":"/var/lib/vz/","content":"iso,vztmpl,backup","maxfiles":"1","shared":"0"},
 {"storage":"local-lvm","type":"lvmthin","thinpool":"data","vgname":"pve","content":"rootdir,images"},
 {"storage":"snippets","type":"dir","path":"/var/lib/vz/snippets","content":"snippets","nodes":"pve2","disable":"0"},
 {"storage":"cloud-init","type":"dir","path":"/srv/cloud-init","content":"images","nodes":"pve2"},
 {"storage":"bulk","type":"dir","path":"/var/lib/vz/bulk","content":"images","nodes":"pve1","mkdir":"0"},
 {"storage":"nfs-backup","type":"nfs","server":"192.0.2.50","export":"/export/pve","path":"/mnt/pve/nfs-backup","content":"backup","shared":"1"}
]`

// TestStoragePVE7Shape: the PVE 7 answer groups as the PVE 8 one does.
func TestStoragePVE7Shape(t *testing.T) {
	fake, srv := newFake(t)
	fake.body["storage"] = `{"data":` + pve7Storage + `}`
	snap, problems, err := newSource(t, testOptions(t, srv)).Collect(context.Background())
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	full := readGolden(t, "cluster.golden.json")
	if !reflect.DeepEqual(snap, full.Snapshot) || len(problems) != 1 {
		got, _ := snapshot.Encode(snap)
		t.Errorf("PVE 7 storage config: problems %+v, snapshot differs from the PVE 8 one:\n%s", problems, got)
	}
}

// TestStorageConfigNotRead: without GET /storage the paths are unknown, so
// only equal figures make one filesystem: pve2's snippets, read a moment
// apart from local and cloud-init, is a high_disk of its own. That is a
// warning, not a failure of the collection.
func TestStorageConfigNotRead(t *testing.T) {
	fake, srv := newFake(t)
	fake.fail["storage"] = true
	snap, problems, err := newSource(t, testOptions(t, srv)).Collect(context.Background())
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	want := []snapshot.Problem{
		{ID: SourceProblemID, Index: 0, Field: "GET /storage", Warning: true,
			Problem: "HTTP 500 storage 'nfs-backup' is not online; storages on one filesystem are told by equal usage only"},
		{ID: "node/pve3", Index: -1, Field: "node/pve3", Problem: "offline in /cluster/resources: its status, replication, certificates, updates, disks, ZFS pools, tasks, guest configs and snapshots were not read"},
	}
	if !reflect.DeepEqual(problems, want) {
		t.Errorf("problems:\n got %+v\nwant %+v", problems, want)
	}
	got := pve2Storage(t, snap)
	wantSigs := []signals.Signal{
		{Type: signals.TypeHighDisk, ResourceID: "storage/pve2/cloud-init", ResourceKind: snapshot.KindStorage, ResourceName: "cloud-init",
			Severity: signals.SeverityWarning, Category: signals.CategoryCapacity, Value: 92, Threshold: 75,
			Summary:  "storage disk usage on cloud-init (storage/pve2/cloud-init) at 92.0% (current), above 75; one filesystem shared by cloud-init, local",
			Evidence: map[string]any{"metric": "usage_percent", "value": 92.0, "trigger": 75.0, "clear": 70.0, "critical": 95.0, "storages": "cloud-init,local"}},
		{Type: signals.TypeHighDisk, ResourceID: "storage/pve2/snippets", ResourceKind: snapshot.KindStorage, ResourceName: "snippets",
			Severity: signals.SeverityWarning, Category: signals.CategoryCapacity, Value: 92, Threshold: 75,
			Summary:  "storage disk usage on snippets (storage/pve2/snippets) at 92.0% (current), above 75",
			Evidence: map[string]any{"metric": "usage_percent", "value": 92.0, "trigger": 75.0, "clear": 70.0, "critical": 95.0}},
	}
	if !reflect.DeepEqual(got, wantSigs) {
		t.Errorf("pve2 directory storage findings\n%+v\nwant\n%+v", got, wantSigs)
	}
}

// TestStorageOnePathOneFinding: with GET /storage read, pve2's local,
// snippets (below it) and cloud-init (same figures as local) are one
// high_disk naming all three; pve1's bulk, a larger disk mounted below
// local, is one of its own.
func TestStorageOnePathOneFinding(t *testing.T) {
	_, srv := newFake(t)
	snap, _, err := newSource(t, testOptions(t, srv)).Collect(context.Background())
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	want := []signals.Signal{
		{Type: signals.TypeHighDisk, ResourceID: "storage/pve2/cloud-init", ResourceKind: snapshot.KindStorage, ResourceName: "cloud-init",
			Severity: signals.SeverityWarning, Category: signals.CategoryCapacity, Value: 92, Threshold: 75,
			Summary:  "storage disk usage on cloud-init (storage/pve2/cloud-init) at 92.0% (current), above 75; one filesystem shared by cloud-init, local, snippets",
			Evidence: map[string]any{"metric": "usage_percent", "value": 92.0, "trigger": 75.0, "clear": 70.0, "critical": 95.0, "storages": "cloud-init,local,snippets"}},
	}
	if got := pve2Storage(t, snap); !reflect.DeepEqual(got, want) {
		t.Errorf("pve2 directory storage findings\n%+v\nwant\n%+v", got, want)
	}
	var bulk *snapshot.Resource
	for i, r := range snap.Resources {
		if r.ID == "storage/pve1/bulk" {
			bulk = &snap.Resources[i]
		}
	}
	if bulk == nil || bulk.Labels[snapshot.LabelStorages] != "" {
		t.Errorf("storage/pve1/bulk: %+v, want a resource of its own", bulk)
	}
}

// pve2Storage is the high_disk findings of pve2's directory storages
// (local-lvm and pools left out) at default thresholds.
func pve2Storage(t *testing.T, snap *snapshot.Snapshot) []signals.Signal {
	t.Helper()
	pol, err := alerts.New(alerts.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	var out []signals.Signal
	for _, s := range signals.Detect(snap, pol, nil) {
		if s.Type == signals.TypeHighDisk && strings.HasPrefix(s.ResourceID, "storage/pve2/") &&
			s.ResourceID != "storage/pve2/local-lvm" && !strings.Contains(s.ResourceID, "zpool") {
			out = append(out, s)
		}
	}
	return out
}

// TestGroupResourceTakesTheFullest: one filesystem's resource is named
// after its first storage and has the highest usage any of them reports.
func TestGroupResourceTakesTheFullest(t *testing.T) {
	n := func(v float64) number { return number{v: v, set: true} }
	st := func(name string, used float64) storageEntry {
		return storageEntry{clusterResource: clusterResource{Type: "storage", Node: "pve1", Storage: name, Status: "available",
			Disk: n(used), MaxDisk: n(1000), PluginType: "dir"}}
	}
	got := groupResource([]storageEntry{st("a", 949), st("b", 951), st("c", 950)})
	want := snapshot.Resource{ID: "storage/pve1/a", Kind: snapshot.KindStorage, Name: "a", Parent: "node/pve1", Status: snapshot.StatusOnline,
		Labels:  map[string]string{"type": "dir", snapshot.LabelStorages: "a,b,c"},
		Metrics: snapshot.MetricsOf(map[string]float64{snapshot.MetricUsage: 95.1})}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("\n%+v\nwant\n%+v", got, want)
	}
}

// TestStoragePaths: the directory storages' paths, cleaned, of both
// shapes; a network storage's mount point and a relative path are none.
func TestStoragePaths(t *testing.T) {
	want := map[string]string{"local": "/var/lib/vz", "snippets": "/var/lib/vz/snippets", "cloud-init": "/srv/cloud-init", "bulk": "/var/lib/vz/bulk"}
	raw, err := os.ReadFile(filepath.Join("testdata", "api2", "json", "storage.json"))
	if err != nil {
		t.Fatal(err)
	}
	pve8, err := unwrapData(raw)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"PVE 8": string(pve8), "PVE 7": pve7Storage} {
		configs, err := decodeList[storageConfig]([]byte(data))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		configs = append(configs, storageConfig{Storage: "rel", Type: "dir", Path: "var/lib"}, storageConfig{Storage: "sub", Type: "btrfs", Path: "/mnt/btrfs"})
		want["sub"] = "/mnt/btrfs"
		if got := storagePaths(configs); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: paths %v, want %v", name, got, want)
		}
	}
	// A field of the wrong type is an error naming it.
	_, err = decodeList[storageConfig]([]byte(`[{"storage":"local","path":7}]`))
	if err == nil || !strings.Contains(err.Error(), "data[0].path") {
		t.Errorf("error %v, want one naming data[0].path", err)
	}
}

// TestStorageConfigFailsAfterARead: a source that read GET /storage once
// keeps grouping by those paths when a later read fails, so one failed
// read neither splits a filesystem's finding nor files new ones.
func TestStorageConfigFailsAfterARead(t *testing.T) {
	fake, srv := newFake(t)
	src := newSource(t, testOptions(t, srv))
	if _, _, err := src.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	fake.fail["storage"] = true
	snap, problems, err := src.Collect(context.Background())
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	want := []snapshot.Problem{
		{ID: SourceProblemID, Index: 0, Field: "GET /storage", Warning: true,
			Problem: "HTTP 500 storage 'nfs-backup' is not online; the storage paths of the last read are used"},
		{ID: "node/pve3", Index: -1, Field: "node/pve3", Problem: "offline in /cluster/resources: its status, replication, certificates, updates, disks, ZFS pools, tasks, guest configs and snapshots were not read"},
	}
	if !reflect.DeepEqual(problems, want) {
		t.Errorf("problems:\n got %+v\nwant %+v", problems, want)
	}
	if full := readGolden(t, "cluster.golden.json"); !reflect.DeepEqual(snap, full.Snapshot) {
		got, _ := snapshot.Encode(snap)
		t.Errorf("snapshot differs from the full one:\n%s", got)
	}
}
