package proxmox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/snapshot"
)

const testPBSTokenID = "patrold@pbs!patrol"

// pbsPayloads are PBS 3 answers, shaped as the server sends them:
// numbers that arrive as strings, fields left out, a datastore whose
// status is an error, a job that never ran, one running, one disabled.
var pbsPayloads = map[string]string{
	"status/datastore-usage": `{"data":[
 {"store":"store1","total":"1000000000000","used":912000000000,"avail":88000000000,"history-start":1700000000},
 {"store":"offsite","total":2000000000000,"used":"200000000000"},
 {"store":"broken","error":"unable to open chunk store at \"/mnt/broken/.chunks\" - No such file or directory (os error 2)"}]}`,
	"admin/verify": `{"data":[
 {"id":"v-3f1a","store":"store1","schedule":"daily","last-run-state":"verification failed - please check the log for details","last-run-endtime":"1795917600","last-run-upid":"UPID:pbs1:..."},
 {"id":"v-offsite","store":"offsite","last-run-state":"OK","last-run-endtime":1795917600},
 {"id":"v-old","store":"offsite","disable":true,"last-run-state":"failed long ago"}]}`,
	"admin/prune": `{"data":[{"id":"p-1","store":"store1","last-run-state":"WARNINGS: 1","last-run-endtime":1795914000},
 {"id":"p-2","store":"offsite"}]}`,
	"admin/sync": `{"data":[{"id":"s-1","store":"offsite","last-run-upid":"UPID:pbs1:running"}]}`,
	"admin/gc": `{"data":[{"store":"store1","last-run-state":"OK","last-run-endtime":1795910400},
 {"store":"offsite","last-run-state":"TASK ERROR: unable to get exclusive lock","last-run-endtime":1795910400}]}`,
	"admin/datastore/store1/snapshots": `{"data":[
 {"backup-type":"vm","backup-id":"100","backup-time":1795900000,"verification":{"state":"failed","upid":"UPID:..."}},
 {"backup-type":"ct","backup-id":200,"backup-time":"1795910000","verification":{"state":"failed"}},
 {"backup-type":"vm","backup-id":"100","backup-time":1795800000,"verification":{"state":"ok"}},
 {"backup-type":"host","backup-id":"pbs1","backup-time":1795700000}]}`,
	"admin/datastore/offsite/snapshots": `{"data":[]}`,
}

// fakePBS answers like a PBS 3 API: token scheme PBSAPIToken, id and
// secret joined by ":", error objects for what fails.
type fakePBS struct {
	t    *testing.T
	body map[string]string
	fail map[string]int // path -> HTTP status of an error object
}

func (f *fakePBS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimPrefix(r.URL.Path, "/api2/json/")
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	if r.Method != http.MethodGet {
		http.Error(w, "read only", http.StatusMethodNotAllowed)
		return
	}
	if r.Header.Get("Authorization") != "PBSAPIToken="+testPBSTokenID+":"+testSecret {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"data":null,"message":"authentication failed - invalid token\n"}`))
		return
	}
	if code := f.fail[p]; code != 0 {
		w.WriteHeader(code)
		_, _ = w.Write([]byte(`{"data":null,"message":"no such datastore 'store1'\n","errors":{}}`))
		return
	}
	b, ok := f.body[p]
	if !ok {
		f.t.Errorf("unexpected request %s", r.URL.Path)
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"data":null,"message":"Path '/api2/json/` + p + `' not found."}`))
		return
	}
	_, _ = w.Write([]byte(b))
}

func newFakePBS(t *testing.T) (*fakePBS, PBSOptions) {
	f := &fakePBS{t: t, body: map[string]string{}, fail: map[string]int{}}
	for k, v := range pbsPayloads {
		f.body[k] = v
	}
	srv := httptest.NewUnstartedServer(f)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	secret := filepath.Join(t.TempDir(), "pbs.token")
	if err := os.WriteFile(secret, []byte(testSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := DefaultPBSOptions()
	o.URL, o.Node, o.TokenID, o.TokenSecretFile = srv.URL, "pbs1", testPBSTokenID, secret
	o.TLS.Fingerprint = fingerprint(srv)
	o.Now = func() time.Time { return evalTime }
	return f, o
}

func unix(s int64) *time.Time {
	t := time.Unix(s, 0).UTC()
	return &t
}

func TestPBSCollect(t *testing.T) {
	_, o := newFakePBS(t)
	src, err := NewPBS(o)
	if err != nil {
		t.Fatal(err)
	}
	snap, problems, err := src.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"type": "pbs"}
	want := &snapshot.Snapshot{Version: 1, TakenAt: evalTime, Source: "pbs", Resources: []snapshot.Resource{
		{ID: "storage/pbs1/store1", Kind: snapshot.KindStorage, Name: "store1", Parent: "node/pbs1", Status: "online", Labels: labels,
			Metrics: snapshot.Metrics{{Name: "usage_percent", Value: 91.2}},
			BackupStore: &snapshot.BackupStore{Jobs: []snapshot.Job{
				{ID: "store1", Type: "gc", LastStatus: snapshot.BackupOK, LastFinishedAt: unix(1795910400)},
				{ID: "p-1", Type: "prune", LastStatus: snapshot.BackupWarning, LastFinishedAt: unix(1795914000)},
				{ID: "v-3f1a", Type: "verify", LastStatus: snapshot.BackupFailed, LastFinishedAt: unix(1795917600),
					LastError: "verification failed - please check the log for details"},
			}, VerifyFailed: []string{"ct/200/2026-11-28T23:53:20Z", "vm/100/2026-11-28T21:06:40Z"}}},
		{ID: "storage/pbs1/offsite", Kind: snapshot.KindStorage, Name: "offsite", Parent: "node/pbs1", Status: "online", Labels: labels,
			Metrics: snapshot.Metrics{{Name: "usage_percent", Value: 10}},
			BackupStore: &snapshot.BackupStore{Jobs: []snapshot.Job{
				{ID: "offsite", Type: "gc", LastStatus: snapshot.BackupFailed, LastFinishedAt: unix(1795910400), LastError: "TASK ERROR: unable to get exclusive lock"},
				{ID: "p-2", Type: "prune"},
				{ID: "s-1", Type: "sync", LastStatus: snapshot.BackupRunning},
				{ID: "v-offsite", Type: "verify", LastStatus: snapshot.BackupOK, LastFinishedAt: unix(1795917600)},
			}}},
		{ID: "storage/pbs1/broken", Kind: snapshot.KindStorage, Name: "broken", Parent: "node/pbs1", Status: "unknown", Labels: labels,
			Notes: `unable to open chunk store at "/mnt/broken/.chunks" - No such file or directory (os error 2)`},
	}}
	if !reflect.DeepEqual(snap, want) {
		gotJSON, _ := snapshot.Encode(snap)
		t.Fatalf("snapshot:\n%s", gotJSON)
	}
	if len(problems) != 0 {
		t.Fatalf("problems: %+v", problems)
	}
	// The net over it: store1 high_disk and backup_job_failed (a failed
	// verify job and two failed verifications: critical at 3), offsite a
	// failed garbage collection.
	pol, _ := alerts.New(alerts.Settings{})
	var got []string
	for _, s := range signals.Detect(snap, pol, nil) {
		got = append(got, string(s.Type)+" "+s.ResourceID+" "+s.Severity)
	}
	wantSigs := []string{"high_disk storage/pbs1/store1 warning", "backup_job_failed storage/pbs1/store1 critical",
		"backup_job_failed storage/pbs1/offsite warning"}
	if !reflect.DeepEqual(got, wantSigs) {
		t.Fatalf("signals %v, want %v", got, wantSigs)
	}
}

// What fails is left out, never half-filled, and named.
func TestPBSFailures(t *testing.T) {
	f, o := newFakePBS(t)
	f.fail["admin/datastore/store1/snapshots"] = 500
	f.fail["admin/gc"] = 404
	src, err := NewPBS(o)
	if err != nil {
		t.Fatal(err)
	}
	snap, problems, err := src.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if snap.Resources[0].BackupStore != nil || snap.Resources[1].BackupStore == nil {
		t.Fatalf("store1 %+v, offsite %+v", snap.Resources[0].BackupStore, snap.Resources[1].BackupStore)
	}
	wantProblems := []snapshot.Problem{
		{ID: "(source)", Index: 0, Field: "GET /admin/gc", Warning: true,
			Problem: "this server does not list garbage collection jobs (PBS before 3.3): their last runs are not read"},
		{ID: "storage/pbs1/store1", Index: -1, Field: "GET /admin/datastore/store1/snapshots",
			Problem: "HTTP 500 no such datastore 'store1'; its jobs and verifications left out"},
	}
	if !reflect.DeepEqual(problems, wantProblems) {
		t.Fatalf("problems:\n got %+v\nwant %+v", problems, wantProblems)
	}
	// A failed job list: no datastore's jobs are known.
	f.fail["admin/verify"] = 500
	snap, problems, err = src.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range snap.Resources {
		if r.BackupStore != nil {
			t.Errorf("%s keeps its jobs with a job list failed", r.ID)
		}
	}
	if len(problems) != 2 || problems[0].Field != "GET /admin/verify" || problems[0].Index != -1 {
		t.Fatalf("problems %+v", problems)
	}
	// The datastores failing fails the collection.
	f.fail["status/datastore-usage"] = 503
	if _, _, err := src.Collect(context.Background()); err == nil || err.Error() != "collect: GET /status/datastore-usage: HTTP 503 no such datastore 'store1'" {
		t.Fatalf("err = %v", err)
	}
}

func TestPBSAuthAndTLS(t *testing.T) {
	_, o := newFakePBS(t)
	bad := o
	bad.TokenID = "other@pbs!x"
	src, err := NewPBS(bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := src.Collect(context.Background()); !errors.Is(err, ErrUnauthorized) ||
		!strings.Contains(err.Error(), "check source.pbs.token_id and the secret in source.pbs.token_secret_file") {
		t.Fatalf("wrong token: %v", err)
	}
	pinned := o
	pinned.TLS.Fingerprint = strings.Repeat("AB", 32)
	src, _ = NewPBS(pinned)
	if _, _, err := src.Collect(context.Background()); !errors.Is(err, ErrFingerprintMismatch) ||
		!strings.Contains(err.Error(), "server certificate does not match source.pbs.tls.fingerprint: the server presented SHA-256 ") {
		t.Fatalf("wrong pin: %v", err)
	}
	system := o
	system.TLS.Fingerprint = ""
	src, _ = NewPBS(system)
	if _, _, err := src.Collect(context.Background()); err == nil || !strings.Contains(err.Error(), "set source.pbs.tls.ca_file or tls.fingerprint") {
		t.Fatalf("unverified certificate: %v", err)
	}
}

func TestPBSOptionsNameTheirKeys(t *testing.T) {
	err := PBSOptions{URL: "http://pbs1:8007", Node: "a/b", TokenID: "nobang", TLS: TLSOptions{CAFile: "x", Fingerprint: "zz"}, Timeout: -1}.Validate()
	want := strings.Join([]string{
		`source.pbs.url: want https://host:port, got "http://pbs1:8007"`,
		`source.pbs.token_id: want user@realm!name, got "nobang"`,
		`source.pbs.token_secret_file: required (a file holding the token's secret)`,
		`source.pbs.tls: set at most one of ca_file, fingerprint and insecure_skip_verify`,
		`source.pbs.tls.fingerprint: want a SHA-256 fingerprint (32 hex bytes, colons optional), got "zz"`,
		`source.pbs.timeout: must not be negative, got -1ns`,
		`source.pbs.node: "a/b" is not a node name`,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Fatalf("got\n%v\nwant\n%s", err, want)
	}
	// The node defaults to the first label of the URL's host.
	_, o := newFakePBS(t)
	o.Node, o.URL = "", "https://backup-1.example:8007"
	if src, err := NewPBS(o); err != nil || src.node != "backup-1" {
		t.Fatalf("node %v %v", src, err)
	}
}

// TestPBSRequestTimings: every PBS request is counted and timed on the
// patrold_source_pbs_* families of the registry, by endpoint family and
// outcome; a source rebuilt on the same collectors keeps counting.
func TestPBSRequestTimings(t *testing.T) {
	f, o := newFakePBS(t)
	f.fail["admin/datastore/offsite/snapshots"] = 500
	reg := promclient.NewRegistry()
	o.Registerer = reg
	src, err := NewPBS(o)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := src.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	// store1 and offsite list their snapshots (offsite's fails); broken
	// is not asked.
	counts := map[string][3]int{ // outcomes error, ok, unreachable
		"datastore_usage": {0, 1, 0}, "verify_jobs": {0, 1, 0}, "prune_jobs": {0, 1, 0}, "sync_jobs": {0, 1, 0},
		"gc_jobs": {0, 1, 0}, "snapshots": {1, 1, 0},
	}
	checkPBSCounts(t, reg, counts)
	// Rebuilt on the same collectors (a reload): one more of each.
	m, err := NewPBSMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	o.Registerer, o.Metrics = nil, m
	for range 2 {
		src, err := NewPBS(o)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := src.Collect(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if got := testutil.ToFloat64(m.m.requests.WithLabelValues("snapshots", "error")); got != 2 {
		t.Errorf("shared collectors counted %v failed snapshot lists, want 2", got)
	}
	// The PBS and PVE families live side by side on one registry.
	if _, err := NewMetrics(reg); err != nil {
		t.Errorf("PVE metrics next to PBS ones: %v", err)
	}
	if _, err := NewPBSMetrics(reg); err == nil {
		t.Error("PBS metrics registered twice on one registry")
	}
}

// checkPBSCounts compares the request counter whole and checks that each
// family's duration histogram holds one sample per request.
func checkPBSCounts(t *testing.T, reg *promclient.Registry, counts map[string][3]int) {
	t.Helper()
	want := "# HELP patrold_source_pbs_requests_total Proxmox Backup Server API requests of the pbs snapshot source by endpoint family and outcome.\n" +
		"# TYPE patrold_source_pbs_requests_total counter\n"
	for _, e := range slices.Sorted(maps.Keys(counts)) {
		for i, o := range []string{"error", "ok", "unreachable"} {
			want += fmt.Sprintf("patrold_source_pbs_requests_total{endpoint=%q,outcome=%q} %d\n", e, o, counts[e][i])
		}
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "patrold_source_pbs_requests_total"); err != nil {
		t.Error(err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	samples := map[string]uint64{}
	for _, fam := range fams {
		if fam.GetName() != "patrold_source_pbs_request_duration_seconds" {
			continue
		}
		for _, m := range fam.GetMetric() {
			samples[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleCount()
		}
	}
	wantSamples := map[string]uint64{}
	for e, c := range counts {
		wantSamples[e] = uint64(c[0] + c[1] + c[2])
	}
	if !reflect.DeepEqual(samples, wantSamples) {
		t.Errorf("duration samples %v, want %v", samples, wantSamples)
	}
}
