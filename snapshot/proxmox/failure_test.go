package proxmox

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/patrold/patrold/snapshot"
)

func TestNodeTimesOut(t *testing.T) {
	fake, srv := newFake(t)
	fake.hang["pve2"] = true
	o := testOptions(t, srv)
	o.Timeout = 300 * time.Millisecond
	reg := promclient.NewRegistry()
	o.Registerer = reg
	snap, problems, err := newSource(t, o).Collect(context.Background())
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	// pve1 is patrolled in full; pve2's guests and storage are there as
	// /cluster/resources reports them, without disks or backup state.
	golden(t, "timeout.golden.json", collected{Snapshot: snap, Problems: problems})
	unreachable := snapshot.Problem{ID: "node/pve2", Index: -1, Field: "GET /nodes/pve2/status",
		Problem: "node pve2: node unreachable: no answer within 300ms (source.proxmox.timeout); " +
			"the rest of node pve2 (replication, certificates, updates, disks, ZFS pools, tasks, guest configs and snapshots) was not read"}
	if !slices.Contains(problems, unreachable) {
		t.Errorf("problems %+v lack %+v", problems, unreachable)
	}
	for _, p := range fake.requested() {
		if strings.HasPrefix(p, "nodes/pve2/") && p != "nodes/pve2/status" {
			t.Errorf("requested %s after pve2 timed out", p)
		}
	}
	// pve1 in full (the configs and agents of vm/101 and vm/102, the
	// snapshot list of vm/102, whose config names a parent snapshot, its
	// vzdump and its recent tasks), and the one unanswered request of pve2.
	counts := map[string][3]int{ // outcomes error, ok, unreachable
		"cluster_resources": {0, 1, 0}, "cluster_status": {0, 1, 0}, "cluster_ha_status": {0, 1, 0}, "cluster_backup": {0, 1, 0}, "cluster_not_backed_up": {0, 1, 0}, "storage_config": {0, 1, 0}, "node_status": {0, 1, 1}, "replication": {0, 1, 0}, "certificates": {0, 1, 0}, "apt_update": {0, 1, 0}, "disks_list": {0, 1, 0}, "disks_smart": {0, 2, 0},
		"disks_zfs": {0, 1, 0}, "disks_zfs_pool": {0, 1, 0}, "tasks": {0, 2, 0}, "task_log": {0, 1, 0}, "storage_content": {0, 1, 0},
		"guest_config": {0, 2, 0}, "guest_snapshots": {0, 1, 0}, "guest_agent": {0, 2, 0},
	}
	want := "# HELP patrold_source_proxmox_requests_total Proxmox VE API requests of the proxmox snapshot source by endpoint family and outcome.\n" +
		"# TYPE patrold_source_proxmox_requests_total counter\n"
	names := slices.Sorted(maps.Keys(counts))
	for _, e := range names {
		for i, o := range []string{"error", "ok", "unreachable"} {
			n := counts[e][i]
			want += fmt.Sprintf("patrold_source_proxmox_requests_total{endpoint=%q,outcome=%q} %d\n", e, o, n)
		}
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "patrold_source_proxmox_requests_total"); err != nil {
		t.Error(err)
	}
}

func TestEndpointFailureLeavesBackupsOut(t *testing.T) {
	fake, srv := newFake(t)
	fake.fail["nodes/pve1/storage/nfs-backup/content"] = true
	snap, problems, err := newSource(t, testOptions(t, srv)).Collect(context.Background())
	if err != nil {
		t.Fatalf("Collect: %v", err)
	}
	want := []snapshot.Problem{
		{ID: "node/pve3", Index: -1, Field: "node/pve3", Problem: "offline in /cluster/resources: its status, replication, certificates, updates, disks, ZFS pools, tasks, guest configs and snapshots were not read"},
		{ID: "node/pve1", Index: -1, Field: "GET /nodes/pve1/storage/nfs-backup/content", Problem: "node pve1: HTTP 500 storage 'nfs-backup' is not online"},
	}
	if !reflect.DeepEqual(problems, want) {
		t.Errorf("problems:\n got %+v\nwant %+v", problems, want)
	}
	// The shared backup storage was not read: no guest has a backup state
	// (a missing volume would read as a missing backup), everything else
	// is as in the full collection.
	full := readGolden(t, "cluster.golden.json")
	for i := range full.Snapshot.Resources {
		full.Snapshot.Resources[i].Backup = nil
	}
	if !reflect.DeepEqual(snap, full.Snapshot) {
		got, _ := snapshot.Encode(snap)
		t.Errorf("snapshot differs from the full one without backups:\n%s", got)
	}
}

func readGolden(t *testing.T, name string) collected {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Snapshot json.RawMessage `json:"snapshot"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	snap, probs, err := snapshot.Decode(c.Snapshot, snapshot.DecodeOptions{})
	if err != nil || len(probs) != 0 {
		t.Fatalf("golden snapshot: %v %v", err, probs)
	}
	return collected{Snapshot: snap}
}

func TestUnauthorizedNamesTheTokenNotTheSecret(t *testing.T) {
	_, srv := newFake(t)
	o := testOptions(t, srv)
	if err := os.WriteFile(o.TokenSecretFile, []byte("00000000-dead-beef-0000-000000000000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := newSource(t, o).Collect(context.Background())
	if !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("err = %v, want ErrUnauthorized", err)
	}
	want := `collect: GET /cluster/resources: HTTP 401: authentication failed for API token "patrold@pve!patrol": ` +
		`check source.proxmox.token_id and the secret in source.proxmox.token_secret_file (` + o.TokenSecretFile + `)`
	if err.Error() != want {
		t.Errorf("err:\n got %s\nwant %s", err, want)
	}
	if strings.Contains(err.Error(), "dead-beef") || strings.Contains(err.Error(), testSecret) {
		t.Errorf("the error prints a secret: %s", err)
	}
}

func TestTLSVerification(t *testing.T) {
	_, srv := newFake(t)
	pin := fingerprint(srv)
	other := strings.Repeat("AB:", 31) + "AB"
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		tls  TLSOptions
		err  string // "" collects
	}{
		{"pinned", TLSOptions{Fingerprint: pin}, ""},
		{"pinned lower case without colons", TLSOptions{Fingerprint: strings.ToLower(strings.ReplaceAll(pin, ":", ""))}, ""},
		{"ca file", TLSOptions{CAFile: caFile}, ""},
		{"insecure", TLSOptions{InsecureSkipVerify: true}, ""},
		{"wrong pin", TLSOptions{Fingerprint: other},
			"collect: GET /cluster/resources: tls: server certificate does not match source.proxmox.tls.fingerprint: " +
				"the server presented SHA-256 " + pin + ", want " + other},
		{"system roots", TLSOptions{}, "x509: certificate signed by unknown authority"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := testOptions(t, srv)
			o.TLS = c.tls
			snap, _, err := newSource(t, o).Collect(context.Background())
			switch {
			case c.err == "" && err != nil:
				t.Fatalf("Collect: %v", err)
			case c.err == "" && len(snap.Resources) != 24:
				t.Fatalf("%d resources, want 24", len(snap.Resources))
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("err = %v, want it to contain %q", err, c.err)
			}
			if c.name == "wrong pin" && !errors.Is(err, ErrFingerprintMismatch) {
				t.Errorf("err = %v, want ErrFingerprintMismatch", err)
			}
		})
	}
}

// Answers that do not have the documented shape fail what they feed, with
// an error naming the field.
func TestMalformedAnswers(t *testing.T) {
	t.Run("cluster resources", func(t *testing.T) {
		for body, want := range map[string]string{
			`{"data":[{"type":"node","node":"pve1","maxmem":true}]}`: "collect: GET /cluster/resources: data[0].maxmem: must be a number, got true",
			`{"data":{"node":"pve1"}}`:                               "collect: GET /cluster/resources: data: must be an array, got object",
			`{"data":[{"type":"qemu","node":"pve1","vmid":"abc"}]}`:  "collect: GET /cluster/resources: data[0].vmid: want a positive integer for a guest",
			`{"errors":{"type":"bad"}}`:                              `collect: GET /cluster/resources: answer has no "data" member`,
			`<html>`:                                                 "collect: GET /cluster/resources: not valid JSON at byte 1: invalid character '<' looking for beginning of value",
			`{"data":[]}`:                                            `collect: GET /cluster/resources lists no node the API token "patrold@pve!patrol" may see; grant it the PVEAuditor role on /`,
		} {
			fake, srv := newFake(t)
			fake.body["cluster/resources"] = body
			_, _, err := newSource(t, testOptions(t, srv)).Collect(context.Background())
			if err == nil || err.Error() != want {
				t.Errorf("%s:\n got %v\nwant %s", body, err, want)
			}
		}
	})
	t.Run("node endpoint", func(t *testing.T) {
		fake, srv := newFake(t)
		fake.body["nodes/pve2/disks/list"] = `{"data":[{"devpath":"/dev/sda","wearout":[97]}]}`
		snap, problems, err := newSource(t, testOptions(t, srv)).Collect(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want := snapshot.Problem{ID: "node/pve2", Index: -1, Field: "GET /nodes/pve2/disks/list",
			Problem: "node pve2: data[0].wearout: must be a number, got [97]"}
		if !slices.Contains(problems, want) || len(problems) != 2 {
			t.Errorf("problems %+v, want the offline node and %+v", problems, want)
		}
		for _, r := range snap.Resources {
			if strings.HasPrefix(r.ID, "disk/pve2/") {
				t.Errorf("%s reported from a malformed disk list", r.ID)
			}
		}
		// Its tasks were still read: pve2's guests keep their backup state.
		if r := find(snap, "container/200"); r == nil || r.Backup == nil || r.Backup.LastStatus != snapshot.BackupOK {
			t.Errorf("container/200 = %+v", r)
		}
	})
}

// TestPoolStatusFailureLeavesPoolOut: a pool whose status was not read is
// not reported (it would read as healthy), the failure is a problem, and
// the rest of the node is read.
func TestPoolStatusFailureLeavesPoolOut(t *testing.T) {
	fake, srv := newFake(t)
	fake.fail["nodes/pve2/disks/zfs/tank"] = true
	snap, problems, err := newSource(t, testOptions(t, srv)).Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []snapshot.Problem{
		{ID: "node/pve3", Index: -1, Field: "node/pve3", Problem: "offline in /cluster/resources: its status, replication, certificates, updates, disks, ZFS pools, tasks, guest configs and snapshots were not read"},
		{ID: "node/pve2", Index: -1, Field: "GET /nodes/pve2/disks/zfs/tank", Problem: "node pve2: HTTP 500 storage 'nfs-backup' is not online"},
	}
	if !reflect.DeepEqual(problems, want) {
		t.Errorf("problems:\n got %+v\nwant %+v", problems, want)
	}
	full := readGolden(t, "cluster.golden.json")
	kept := full.Snapshot.Resources[:0]
	for _, r := range full.Snapshot.Resources {
		if r.ID != "storage/pve2/zpool/tank" {
			kept = append(kept, r)
		}
	}
	full.Snapshot.Resources = kept
	if !reflect.DeepEqual(snap, full.Snapshot) {
		got, _ := snapshot.Encode(snap)
		t.Errorf("snapshot differs from the full one without the pool:\n%s", got)
	}
}

func find(s *snapshot.Snapshot, id string) *snapshot.Resource {
	for i := range s.Resources {
		if s.Resources[i].ID == id {
			return &s.Resources[i]
		}
	}
	return nil
}
