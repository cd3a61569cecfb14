package proxmox

import (
	"context"
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
