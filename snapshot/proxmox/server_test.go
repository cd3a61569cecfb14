package proxmox

import (
	"crypto/sha256"
	"encoding/json"
	"flag"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files")

// Test credentials. The secret is a made-up UUID the fake cluster accepts.
const (
	testTokenID = "patrold@pve!patrol"
	testSecret  = "5f0c2b9e-1b7d-4c55-9a53-2d7c3f1e8a41"
)

// evalTime is the collection time the fixtures were written for.
var evalTime = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// fakePVE answers like the PVE API from testdata/api2/json: the file for
// the request path (.json added); SMART answers under disks/smart/<dev>;
// a task log under tasks-log.json of the node. A guest without an agent
// fixture answers as PVE does for a guest whose agent is not running.
type fakePVE struct {
	t    testing.TB
	hang map[string]bool // nodes whose requests never answer
	// fail answers these request paths with HTTP 500.
	fail map[string]bool
	// body answers these request paths with this body (HTTP 200).
	body map[string]string

	mu    sync.Mutex
	paths []string
}

func newFake(t testing.TB) (*fakePVE, *httptest.Server) {
	f := &fakePVE{t: t, hang: map[string]bool{}, fail: map[string]bool{}, body: map[string]string{}}
	srv := httptest.NewUnstartedServer(f)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are the point of some tests
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakePVE) requested() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.paths)
}

func (f *fakePVE) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimPrefix(r.URL.Path, "/api2/json/")
	f.mu.Lock()
	f.paths = append(f.paths, p)
	f.mu.Unlock()
	if r.Method != http.MethodGet {
		http.Error(w, "read only", http.StatusMethodNotAllowed)
		return
	}
	if r.Header.Get("Authorization") != "PVEAPIToken="+testTokenID+"="+testSecret {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"data":null}`))
		return
	}
	parts := strings.Split(p, "/")
	if len(parts) > 1 && parts[0] == "nodes" && f.hang[parts[1]] {
		<-r.Context().Done() // the client gives up first
		return
	}
	if f.fail[p] {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"data":null,"message":"storage 'nfs-backup' is not online\n"}`))
		return
	}
	if b, ok := f.body[p]; ok {
		_, _ = w.Write([]byte(b))
		return
	}
	file := p + ".json"
	switch {
	case strings.HasSuffix(p, "/disks/smart"):
		file = path.Join(p, path.Base(r.URL.Query().Get("disk"))+".json")
	case len(parts) == 5 && parts[2] == "tasks" && parts[4] == "log":
		file = path.Join("nodes", parts[1], "tasks-log.json")
	case strings.HasSuffix(p, "/tasks"):
		// The vzdump tasks, or the recent tasks of every type (bounded).
		q := r.URL.Query()
		vzdump := q.Get("typefilter") == "vzdump" && q.Get("source") == "all"
		recent := q.Get("typefilter") == "" && q.Get("source") == "all" && q.Get("limit") == strconv.Itoa(recentLimit)
		if !vzdump && !recent {
			f.t.Errorf("tasks asked with %q, want typefilter=vzdump&source=all or source=all&limit=%d", r.URL.RawQuery, recentLimit)
		}
	case strings.HasSuffix(p, "/content"):
		if r.URL.Query().Get("content") != "backup" {
			f.t.Errorf("storage content asked with %q, want content=backup", r.URL.RawQuery)
		}
	}
	body, err := os.ReadFile(filepath.Join("testdata", "api2", "json", filepath.FromSlash(file)))
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	if err != nil {
		if strings.HasSuffix(p, "/agent/network-get-interfaces") {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"data":null,"message":"QEMU guest agent is not running\n"}`))
			return
		}
		f.t.Errorf("unexpected request %s?%s", r.URL.Path, r.URL.RawQuery)
		http.NotFound(w, r)
		return
	}
	_, _ = w.Write(body)
}

// fingerprint is the SHA-256 fingerprint of the server's leaf certificate.
func fingerprint(srv *httptest.Server) string {
	sum := sha256.Sum256(srv.Certificate().Raw)
	return formatFingerprint(sum[:])
}

// testOptions points a source at srv, pinned by fingerprint.
func testOptions(t testing.TB, srv *httptest.Server) Options {
	t.Helper()
	secret := filepath.Join(t.TempDir(), "pve.token")
	if err := os.WriteFile(secret, []byte(testSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.URL, o.TokenID, o.TokenSecretFile = srv.URL, testTokenID, secret
	o.TLS.Fingerprint = fingerprint(srv)
	o.Now = func() time.Time { return evalTime }
	o.Rate = 1000 // tests are not paced (pace_test.go is)
	return o
}

func newSource(t testing.TB, o Options) *Source {
	t.Helper()
	s, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// golden compares got (as indented JSON) with testdata/<name>, rewriting
// it with -update.
func golden(t *testing.T, name string, got any) {
	t.Helper()
	data, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, '\n')
	file := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != string(data) {
		t.Errorf("%s differs (run with -update after checking):\n%s", name, diffLines(string(want), string(data)))
	}
}

// diffLines shows the first differing lines.
func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return "line " + strconv.Itoa(i+1) + ":\n  want: " + a + "\n  got:  " + b
		}
	}
	return "(equal lines, different length)"
}
