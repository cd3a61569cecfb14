package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/patrold/patrold/snapshot"
)

// collectCLI runs patrold with cfg and returns stdout, stderr and the exit code.
func collectCLI(t *testing.T, cfg string, argv ...string) (string, string, int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "patrold.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	root := newRoot(&app{stdout: &out, stderr: &errb})
	root.SetArgs(append([]string{"--config", path}, argv...))
	if err := root.ExecuteContext(context.Background()); err != nil {
		return out.String(), errb.String() + err.Error(), exitCode(err)
	}
	return out.String(), errb.String(), 0
}

func TestSnapshotCollectFile(t *testing.T) {
	example, err := filepath.Abs("../../examples/small-faults.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg := "source: {kind: file, file: {path: " + example + "}}\n"
	out, errs, code := collectCLI(t, cfg, "snapshot", "collect", "--output", "json")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d: %s", code, errs)
	}
	raw, _ := os.ReadFile(example)
	snap, _, err := snapshot.Decode(raw, snapshot.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := snapshot.Encode(snap)
	if out != string(want)+"\n" {
		t.Errorf("json output:\n%s\nwant:\n%s", out, want)
	}
	out, _, code = collectCLI(t, cfg, "snapshot", "collect")
	first, _, _ := strings.Cut(out, "\n")
	if code != 0 || first != "snapshot: source example, taken_at 2026-11-29T06:00:00Z, 9 resources (node 2, vm 2, container 1, storage 2, disk 2)" ||
		!strings.Contains(out, "\ndisk/pve1/sda                -        smart=PASSED reallocated=0 pending=2 uncorrectable=0 crc=0 media=0\n") {
		t.Errorf("text output (exit %d):\n%s", code, out)
	}
	if _, errs, code = collectCLI(t, cfg, "snapshot", "collect", "--output", "yaml"); code != 2 || !strings.Contains(errs, `--output: "yaml" is not text or json`) {
		t.Errorf("--output yaml: exit %d %s", code, errs)
	}
}

// A two-node cluster, one node offline, through the real proxmox source
// wired from configuration with a pinned certificate.
func TestSnapshotCollectProxmox(t *testing.T) {
	answers := map[string]string{
		"/api2/json/cluster/resources": `{"data":[{"id":"node/pve1","type":"node","node":"pve1","status":"online","cpu":0.5,"maxcpu":4,"mem":1,"maxmem":4},` +
			`{"id":"node/pve2","type":"node","node":"pve2","status":"offline"}]}`,
		"/api2/json/cluster/backup":               `{"data":[]}`,
		"/api2/json/cluster/status":               `{"data":[{"type":"node","name":"pve1","online":1}]}`,
		"/api2/json/cluster/ha/status/current":    `{"data":[{"id":"quorum","node":"pve1","quorate":1,"status":"OK","type":"quorum"}]}`,
		"/api2/json/storage":                      `{"data":[]}`,
		"/api2/json/nodes/pve1/disks/list":        `{"data":[]}`,
		"/api2/json/nodes/pve1/status":            `{"data":{"cpu":0.5,"wait":0.02,"swap":{"total":0,"used":0,"free":0}}}`,
		"/api2/json/nodes/pve1/certificates/info": `{"data":[]}`,
		"/api2/json/nodes/pve1/apt/update":        `{"data":[]}`,
		"/api2/json/nodes/pve1/replication":       `{"data":[]}`,
		"/api2/json/nodes/pve1/tasks":             `{"data":[]}`,
		"/api2/json/nodes/pve1/disks/zfs":         `{"data":[]}`,
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := answers[r.URL.Path]
		if !ok || r.Header.Get("Authorization") != "PVEAPIToken=patrold@pve!patrol=s3cret" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	sum := sha256.Sum256(srv.Certificate().Raw)
	secret := filepath.Join(t.TempDir(), "pve.token")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := "source:\n  kind: proxmox\n  proxmox:\n    url: " + srv.URL + "\n    token_id: patrold@pve!patrol\n" +
		"    token_secret_file: " + secret + "\n    tls: {fingerprint: " + hex.EncodeToString(sum[:]) + "}\n"
	out, errs, code := collectCLI(t, cfg, "snapshot", "collect", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	snap, _, err := snapshot.Decode([]byte(out), snapshot.DecodeOptions{})
	if err != nil {
		t.Fatalf("output is not a snapshot: %v\n%s", err, out)
	}
	want := `{"version":1,"source":"proxmox","resources":[` +
		`{"id":"node/pve1","kind":"node","name":"pve1","status":"online","metrics":{"cpu_percent":50,"iowait_percent":2,"memory_percent":25},"ha":{"managed":false},` +
		`"updates":{"packages":0,"security":0}},` +
		`{"id":"node/pve2","kind":"node","name":"pve2","status":"offline","ha":{"managed":false}}]}`
	wantSnap, _, _ := snapshot.Decode([]byte(want), snapshot.DecodeOptions{})
	wantSnap.TakenAt = snap.TakenAt
	a, _ := snapshot.Encode(snap)
	b, _ := snapshot.Encode(wantSnap)
	if string(a) != string(b) || snap.TakenAt.IsZero() {
		t.Errorf("snapshot:\n%s\nwant:\n%s", a, b)
	}
	if errs != "incomplete: node/pve2: offline in /cluster/resources: its status, replication, certificates, updates, disks, ZFS pools and tasks were not read\n" {
		t.Errorf("stderr: %q", errs)
	}
}
