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

// TestOneFilesystem: node-local storages of one node that are one
// filesystem are one group, named after the first by name; shared
// storage, another node's, and unavailable storage are never merged.
// One filesystem is: the same used and total bytes; the same path; nested
// paths with totals within 2 %. Two nested paths of different sizes (a
// disk mounted below /var/lib/vz) are two.
func TestOneFilesystem(t *testing.T) {
	n := func(v float64) number { return number{v: v, set: true} }
	st := func(node, name string, used, total float64, shared bool, status string) storageEntry {
		return storageEntry{clusterResource: clusterResource{Type: "storage", Node: node, Storage: name, Status: status, Disk: n(used), MaxDisk: n(total)}, shared: shared}
	}
	groups := func(in []storageEntry, paths map[string]string) []string {
		var got []string
		for _, g := range oneFilesystem(in, paths) {
			var ids []string
			for _, s := range g {
				ids = append(ids, s.id())
			}
			got = append(got, strings.Join(ids, "+"))
		}
		return got
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
	want := []string{
		"storage/pve1/cloud-init+storage/pve1/local+storage/pve1/snippets",
		"storage/pve1/local-lvm", "storage/pve2/local", "storage/pve1/nfs", "storage/pve1/old",
	}
	if got := groups(in, nil); !reflect.DeepEqual(got, want) {
		t.Errorf("by usage: groups\n%q\nwant\n%q", got, want)
	}
	// By path: figures read a moment apart differ slightly.
	in = []storageEntry{
		st("pve1", "local", 900, 1000, false, "available"),
		st("pve1", "snippets", 901, 1001, false, "available"), // below local, same size
		st("pve1", "iso", 905, 1000, false, "available"),      // local's path again
		st("pve1", "root", 899, 990, false, "available"),      // "/", 1 % smaller
		st("pve1", "bulk", 900, 4000, false, "available"),     // below local, another disk
		st("pve2", "local", 900, 1000, false, "available"),    // another node, same path
		st("pve3", "srv-a", 899, 1000, false, "available"),    // side by side: not nested
		st("pve3", "srv-b", 900, 1000, false, "available"),
		st("pve4", "x", 500, 1000, false, "available"), // one path, read across a resize
		st("pve4", "y", 560, 1100, false, "available"),
	}
	paths := map[string]string{"local": "/var/lib/vz", "snippets": "/var/lib/vz/snippets", "iso": "/var/lib/vz",
		"root": "/", "bulk": "/var/lib/vz/bulk", "srv-a": "/srv/a", "srv-b": "/srv/b", "x": "/data", "y": "/data"}
	want = []string{
		"storage/pve1/iso+storage/pve1/local+storage/pve1/root+storage/pve1/snippets",
		"storage/pve1/bulk", "storage/pve2/local", "storage/pve3/srv-a", "storage/pve3/srv-b", "storage/pve4/x+storage/pve4/y",
	}
	if got := groups(in, paths); !reflect.DeepEqual(got, want) {
		t.Errorf("by path: groups\n%q\nwant\n%q", got, want)
	}
	// Without paths none of them is one filesystem: the figures differ.
	want = []string{"storage/pve1/local", "storage/pve1/snippets", "storage/pve1/iso", "storage/pve1/root",
		"storage/pve1/bulk", "storage/pve2/local", "storage/pve3/srv-a", "storage/pve3/srv-b", "storage/pve4/x", "storage/pve4/y"}
	if got := groups(in, nil); !reflect.DeepEqual(got, want) {
		t.Errorf("no paths: groups\n%q\nwant\n%q", got, want)
	}
}
