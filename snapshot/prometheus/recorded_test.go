package prometheus

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/model"

	"github.com/patrold/patrold/snapshot"
)

// evalTime is the evaluation time of the recorded responses.
var evalTime = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// recorded serves testdata/<query>.json for each default query (an empty
// vector when there is no file) and a 500 for the queries in fail.
type recorded struct {
	t      testing.TB
	byText map[string]string // expanded query text -> query name
	fail   map[string]bool
	auth   string // required Authorization header, if set
	calls  atomic.Int64
}

func newRecorded(t testing.TB, fail ...string) (*recorded, *httptest.Server) {
	rec := &recorded{t: t, byText: map[string]string{}, fail: map[string]bool{}}
	def := DefaultQueries()
	for _, s := range specs {
		rec.byText[expand(*s.get(&def), model.Duration(DefaultWindow), model.Duration(DefaultRateWindow))] = s.name
	}
	for _, f := range fail {
		rec.fail[f] = true
	}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	return rec, srv
}

func (rec *recorded) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec.calls.Add(1)
	if r.URL.Path != "/api/v1/query" || r.ParseForm() != nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if rec.auth != "" && r.Header.Get("Authorization") != rec.auth {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	name, ok := rec.byText[r.Form.Get("query")]
	if !ok {
		rec.t.Errorf("unexpected query %q", r.Form.Get("query"))
		http.Error(w, "unknown query", http.StatusBadRequest)
		return
	}
	if ts := r.Form.Get("time"); ts != "1795946400" && !strings.HasPrefix(ts, "1795946400.") {
		rec.t.Errorf("query %s evaluated at %q, want the collection time", name, ts)
	}
	w.Header().Set("Content-Type", "application/json")
	if rec.fail[name] {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"status":"error","errorType":"internal","error":"recorded failure"}`))
		return
	}
	body, err := os.ReadFile(filepath.Join("testdata", name+".json"))
	if os.IsNotExist(err) {
		body = []byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`)
	}
	_, _ = w.Write(body)
}

func collect(t *testing.T, opts Options) (*snapshot.Snapshot, []snapshot.Problem, error) {
	t.Helper()
	src, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return src.CollectAt(context.Background(), evalTime)
}

func byID(snap *snapshot.Snapshot) map[string]snapshot.Resource {
	out := map[string]snapshot.Resource{}
	for _, r := range snap.Resources {
		out[r.ID] = r
	}
	return out
}

func TestRecordedNodesAndStorage(t *testing.T) {
	_, srv := newRecorded(t)
	snap, problems, err := collect(t, Options{URL: srv.URL})
	if err != nil || len(problems) != 0 {
		t.Fatalf("err %v problems %v", err, problems)
	}
	if !snap.TakenAt.Equal(evalTime) || snap.Source != DefaultSourceName {
		t.Errorf("taken_at %v source %q", snap.TakenAt, snap.Source)
	}
	res := byID(snap)
	pve1 := res["node/pve1"]
	if pve1.Status != snapshot.StatusOnline || pve1.Metrics.Map()["cpu_percent"] != 91.5 || pve1.Metrics.Map()["cpu_percent_avg"] != 88.25 ||
		pve1.Metrics.Map()["memory_percent"] != 40.2 || pve1.Metrics.Map()["memory_percent_avg"] != 39 || pve1.Metrics.Map()["window_seconds"] != 900 {
		t.Errorf("node/pve1 = %+v", pve1)
	}
	if res["node/pve2"].Status != snapshot.StatusOffline {
		t.Errorf("node/pve2 (up 0) = %+v, want offline", res["node/pve2"])
	}
	// The configured node label wins over the instance; overshoots are
	// clamped; a NaN is left out.
	pve3 := res["node/pve3"]
	if _, bad := res["node/10.0.0.9"]; bad || pve3.Metrics.Map()["cpu_percent"] != 100 || pve3.Metrics.Map()["cpu_percent_avg"] != 0 {
		t.Errorf("node/pve3 = %+v (resources %v)", pve3, res)
	}
	if _, ok := pve3.Metrics.Map()["memory_percent_avg"]; ok {
		t.Errorf("NaN memory average kept: %+v", pve3.Metrics)
	}
	root, vz := res["storage/pve1/root"], res["storage/pve1/var/lib/vz"]
	if root.Metrics.Map()["usage_percent"] != 96.3 || root.Parent != "node/pve1" || root.Name != "/" || root.Labels["fstype"] != "ext4" {
		t.Errorf("storage/pve1/root = %+v", root)
	}
	if vz.Metrics.Map()["usage_percent"] != 50 || vz.Kind != snapshot.KindStorage {
		t.Errorf("storage/pve1/var/lib/vz = %+v", vz)
	}
	if len(snap.Resources) != 12 {
		t.Errorf("got %d resources, want 12 (the orphan filesystem without node is skipped): %v", len(snap.Resources), res)
	}
}

func TestRecordedSmart(t *testing.T) {
	_, srv := newRecorded(t)
	snap, _, err := collect(t, Options{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	res := byID(snap)
	sda, sdb, sdc, nvme := res["disk/pve1/sda"], res["disk/pve1/sdb"], res["disk/pve1/sdc"], res["disk/pve1/nvme0"]
	for id, r := range map[string]snapshot.Resource{"sda": sda, "sdb": sdb, "sdc": sdc, "nvme0": nvme} {
		if r.Smart == nil || r.Parent != "node/pve1" || r.Kind != snapshot.KindDisk {
			t.Fatalf("disk %s = %+v", id, r)
		}
	}
	if sda.Smart.Health != "PASSED" || sda.Smart.PendingSectors != 2 || sda.Smart.OfflineUncorrectable != 1 ||
		sda.Smart.TemperatureC == nil || *sda.Smart.TemperatureC != 38 {
		t.Errorf("sda smart = %+v", *sda.Smart)
	}
	if sdb.Smart.ReallocatedSectors != 8 || sdb.Smart.UDMACRCErrors != 3 || sdb.Smart.PendingSectors != 0 {
		t.Errorf("sdb smart = %+v", *sdb.Smart)
	}
	if sdc.Smart.Health != "FAILED" {
		t.Errorf("sdc smart status 0 gave health %q, want FAILED", sdc.Smart.Health)
	}
	if nvme.Smart.WearoutPercent == nil || *nvme.Smart.WearoutPercent != 97 || *nvme.Smart.TemperatureC != 45 {
		t.Errorf("nvme0 smart = %+v", *nvme.Smart)
	}
}

func TestRecordedBackups(t *testing.T) {
	_, srv := newRecorded(t)
	snap, _, err := collect(t, Options{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	res := byID(snap)
	vm := res["vm/101"]
	if vm.Backup == nil || vm.Kind != snapshot.KindVM || vm.Parent != "node/pve1" {
		t.Fatalf("vm/101 = %+v", vm)
	}
	// A stale, failed backup: last success four days before the snapshot.
	if want := time.Date(2026, 11, 25, 2, 0, 0, 0, time.UTC); vm.Backup.LastSuccessAt == nil || !vm.Backup.LastSuccessAt.Equal(want) {
		t.Errorf("vm/101 last_success_at = %v, want %v", vm.Backup.LastSuccessAt, want)
	}
	if want := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC); vm.Backup.LastFinishedAt == nil || !vm.Backup.LastFinishedAt.Equal(want) {
		t.Errorf("vm/101 last_finished_at = %v, want %v", vm.Backup.LastFinishedAt, want)
	}
	if vm.Backup.LastStatus != snapshot.BackupFailed {
		t.Errorf("vm/101 last_status = %q, want failed (the 0-valued ok series must not count)", vm.Backup.LastStatus)
	}
	ct := res["container/200"]
	if ct.Kind != snapshot.KindContainer || ct.Backup == nil || ct.Backup.LastStatus != snapshot.BackupOK || ct.Name != "200" {
		t.Errorf("container/200 = %+v", ct)
	}
	never := res["vm/102"]
	if never.Backup == nil || never.Backup.LastSuccessAt != nil || never.Backup.LastStatus != snapshot.BackupUnknown {
		t.Errorf("vm/102 (success 0, status Exploded) = %+v, want never succeeded, status unknown", never.Backup)
	}
}

func TestPartialFailure(t *testing.T) {
	_, srv := newRecorded(t, "disk_pending")
	reg := promclient.NewRegistry()
	snap, problems, err := collect(t, Options{URL: srv.URL, Registerer: reg})
	if err != nil {
		t.Fatalf("one failed query failed the collection: %v", err)
	}
	if len(problems) != 1 {
		t.Fatalf("problems = %v, want one query failure", problems)
	}
	if q, ok := QueryFailure(problems[0]); !ok || q != "disk_pending" || !strings.Contains(problems[0].Problem, "500") ||
		!strings.Contains(problems[0].String(), "query.disk_pending") {
		t.Fatalf("problem = %+v, want query.disk_pending with the server error", problems[0])
	}
	res := byID(snap)
	if res["node/pve1"].Metrics.Map()["cpu_percent"] != 91.5 || res["storage/pve1/root"].Metrics.Map()["usage_percent"] != 96.3 || res["vm/101"].Backup == nil {
		t.Fatalf("the queries that worked are missing: %v", res)
	}
	// No half-filled disk: sda would read pending_sectors 0 and clear a
	// real finding, so the whole disk family is left out.
	for _, r := range snap.Resources {
		if r.Kind == snapshot.KindDisk {
			t.Fatalf("disk %s kept although its family is incomplete: %+v", r.ID, r.Smart)
		}
	}
	if got := testutil.ToFloat64(mustVec(t, reg, "disk_pending")); got != 1 {
		t.Errorf("failures{query=disk_pending} = %v, want 1", got)
	}
}

func mustVec(t *testing.T, reg *promclient.Registry, query string) promclient.Collector {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "patrold_source_prometheus_query_failures_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "query" && l.GetValue() == query {
					c := promclient.NewCounter(promclient.CounterOpts{Name: "failures", Help: "copy"})
					c.Add(m.GetCounter().GetValue())
					return c
				}
			}
		}
	}
	t.Fatalf("no failures{query=%q} registered", query)
	return nil
}

func TestTotalFailure(t *testing.T) {
	_, srv := newRecorded(t, QueryNames()...)
	_, _, err := collect(t, Options{URL: srv.URL})
	if err == nil || !strings.Contains(err.Error(), "all 20 prometheus queries failed") {
		t.Fatalf("err = %v, want every query failed", err)
	}
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	_, _, err = collect(t, Options{URL: down.URL})
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("server down: err = %v, want connection refused", err)
	}
}

func TestDisabledQueriesAreNotSent(t *testing.T) {
	rec, srv := newRecorded(t)
	q := Queries{}
	for _, s := range specs {
		if !strings.HasPrefix(s.name, "node_") {
			*s.get(&q) = QueryOff
		}
	}
	snap, _, err := collect(t, Options{URL: srv.URL, Queries: q})
	if err != nil {
		t.Fatal(err)
	}
	if n := rec.calls.Load(); n != 8 {
		t.Errorf("%d queries sent, want the 8 node queries", n)
	}
	for _, r := range snap.Resources {
		if r.Kind != snapshot.KindNode {
			t.Errorf("resource %s from a disabled query", r.ID)
		}
	}
}

func TestBearerToken(t *testing.T) {
	rec, srv := newRecorded(t)
	rec.auth = "Bearer s3cret"
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, problems, err := collect(t, Options{URL: srv.URL, BearerTokenFile: file}); err != nil || len(problems) != 0 {
		t.Fatalf("with token: err %v problems %v", err, problems)
	}
	if _, _, err := collect(t, Options{URL: srv.URL}); err == nil {
		t.Fatal("without token: want an error from the 401s")
	}
	_, err := New(Options{URL: srv.URL, BearerTokenFile: filepath.Join(t.TempDir(), "missing")})
	if err == nil || !strings.HasPrefix(err.Error(), "source.prometheus.bearer_token_file: ") {
		t.Fatalf("missing token file: err = %v", err)
	}
}
