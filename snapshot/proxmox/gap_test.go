package proxmox

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/proxmox/pvetest"
)

// TestGapOf: a read the API refuses (403) or does not serve (501) is a
// warning with a coverage gap naming the check, the keys resting on it,
// the endpoint and the privilege; any other error answer is not a gap.
func TestGapOf(t *testing.T) {
	pve := pvetest.New(t)
	pve.Fail("nodes/pve1/certificates/info", 403, "Permission check failed (/nodes/pve1, Sys.Audit)")
	pve.Fail("cluster/ha/status/current", 501, "Method 'GET /cluster/ha/status/current' not implemented")
	pve.Fail("nodes/pve1/replication", 500, "replication state unreadable")
	o := testOptions(t, pve.Server)
	o.TokenID, o.TokenSecretFile = pvetest.TokenID, filepath.Join(t.TempDir(), "pve.token")
	if err := os.WriteFile(o.TokenSecretFile, []byte(pvetest.Secret), 0o600); err != nil {
		t.Fatal(err)
	}
	o.GuestAgent.Enabled = false
	_, problems, err := newSource(t, o).Collect(context.Background())
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	want := []snapshot.Problem{
		{ID: SourceProblemID, Index: -1, Field: "GET /cluster/ha/status/current", Warning: true,
			Problem: "HTTP 501 Method 'GET /cluster/ha/status/current' not implemented; the HA state of guests and nodes left out; " +
				"this PVE does not serve it: ha_error, guest_down not evaluated",
			Gap: &snapshot.Gap{Check: "cluster_ha_status", Keys: []string{"ha_error", "guest_down"}, Endpoint: "GET /cluster/ha/status/current", Status: 501}},
		{ID: "node/pve1", Index: -1, Field: "GET /nodes/pve1/replication",
			Problem: "node pve1: HTTP 500 replication state unreadable"},
		{ID: "node/pve1", Index: -1, Field: "GET /nodes/pve1/certificates/info", Warning: true,
			Problem: "node pve1: HTTP 403 Permission check failed (/nodes/pve1, Sys.Audit); grant the API token Sys.Audit for certificate_expiring",
			Gap: &snapshot.Gap{Check: "certificates", Keys: []string{"certificate_expiring"}, Endpoint: "GET /nodes/pve1/certificates/info",
				Privilege: "Sys.Audit", Status: 403}},
	}
	if !reflect.DeepEqual(problems, want) {
		t.Errorf("problems:\n got %+v\nwant %+v", problems, want)
	}
}
