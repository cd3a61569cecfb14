package bus

import (
	"context"
	"testing"
	"time"

	"github.com/patrold/patrold/internal/testkit"
)

// TestLeaseBucketRecreated: the lease bucket disappears under a leader
// (deleted, or a JetStream store lost). The lease creates it again and
// an instance leads again within a few TTLs: the cluster is never left
// without a writer for good.
func TestLeaseBucketRecreated(t *testing.T) {
	srv := startServer(t)
	_, js := connect(t, srv.url())
	h := newLeaseHarness(t, js)
	time.Sleep(leaseTTL) // both running: a renews, b tries
	if err := js.DeleteKeyValue(context.Background(), h.leases[0].o.Bucket); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 5*leaseTTL, "the bucket is back, with a leader", func() bool {
		kv, err := js.KeyValue(context.Background(), h.leases[0].o.Bucket)
		if err != nil {
			return false
		}
		e, err := kv.Get(context.Background(), "scheduler")
		return err == nil && (h.leases[0].IsLeader() || h.leases[1].IsLeader()) && len(e.Value()) > 0
	})
	time.Sleep(leaseTTL)
	if n := h.both.Load(); n != 0 {
		t.Fatalf("both were leader in %d samples", n)
	}
}
