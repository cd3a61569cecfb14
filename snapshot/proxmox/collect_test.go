package proxmox

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/patrold/patrold/snapshot"
)

// collected is what the golden file holds: the whole snapshot and every
// problem, in order.
type collected struct {
	Snapshot *snapshot.Snapshot `json:"snapshot"`
	Problems []snapshot.Problem `json:"problems"`
}

func TestCollectCluster(t *testing.T) {
	fake, srv := newFake(t)
	snap, problems, err := newSource(t, testOptions(t, srv)).Collect(context.Background())
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	golden(t, "cluster.golden.json", collected{Snapshot: snap, Problems: problems})
	// The offline node is not asked for anything.
	for _, p := range fake.requested() {
		if strings.HasPrefix(p, "nodes/pve3") {
			t.Errorf("requested %s of the offline node", p)
		}
	}
	// Shared storage is read once, through the first node that has it.
	if n := countPrefix(fake.requested(), "nodes/", "/storage/nfs-backup/content"); n != 1 {
		t.Errorf("nfs-backup content read %d times, want once: %v", n, fake.requested())
	}
}

func countPrefix(paths []string, prefix, suffix string) int {
	return len(slices.DeleteFunc(slices.Clone(paths), func(p string) bool {
		return !strings.HasPrefix(p, prefix) || !strings.HasSuffix(p, suffix)
	}))
}

// TestOneFilesystem: node-local storages of one node with the same used
// and total bytes are one resource, named after the first by name and
// listing all; shared storage, another node's, and unavailable storage
// are never merged.
func TestOneFilesystem(t *testing.T) {
	n := func(v float64) number { return number{v: v, set: true} }
	st := func(node, name string, used, total float64, shared bool, status string) storageEntry {
		return storageEntry{clusterResource: clusterResource{Type: "storage", Node: node, Storage: name, Status: status, Disk: n(used), MaxDisk: n(total)}, shared: shared}
	}
	in := []storageEntry{
		st("pve1", "local", 90, 100, false, "available"),
		st("pve1", "local-lvm", 10, 500, false, "available"),
		st("pve1", "snippets", 90, 100, false, "available"),
		st("pve2", "local", 90, 100, false, "available"),
		st("pve1", "nfs", 90, 100, true, "available"),
		st("pve1", "cloud-init", 90, 100, false, "available"),
		st("pve1", "old", 90, 100, false, "unknown"),
	}
	var got []string
	for _, g := range oneFilesystem(in) {
		var ids []string
		for _, s := range g {
			ids = append(ids, s.id())
		}
		got = append(got, strings.Join(ids, "+"))
	}
	want := []string{
		"storage/pve1/cloud-init+storage/pve1/local+storage/pve1/snippets",
		"storage/pve1/local-lvm", "storage/pve2/local", "storage/pve1/nfs", "storage/pve1/old",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("groups\n%q\nwant\n%q", got, want)
	}
}
