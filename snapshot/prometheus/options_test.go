package prometheus

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestOptionsValidate(t *testing.T) {
	off := Queries{}
	for _, s := range specs {
		*s.get(&off) = QueryOff
	}
	for name, tc := range map[string]struct {
		opts Options
		want string
	}{
		"no url":           {Options{}, "source.prometheus.url: required"},
		"bad scheme":       {Options{URL: "ftp://x:1"}, "source.prometheus.url: want http(s)"},
		"no host":          {Options{URL: "http://"}, "source.prometheus.url: want http(s)"},
		"negative timeout": {Options{URL: "http://x", Timeout: -1}, "source.prometheus.timeout: must not be negative"},
		"negative window":  {Options{URL: "http://x", Window: -time.Minute}, "source.prometheus.window: must not be negative"},
		"sub-ms window":    {Options{URL: "http://x", RateWindow: time.Microsecond}, "source.prometheus.rate_window: must be whole milliseconds"},
		"concurrency":      {Options{URL: "http://x", Concurrency: -2}, "source.prometheus.concurrency: must not be negative"},
		"all queries off":  {Options{URL: "http://x", Queries: off}, "source.prometheus.queries: every query is \"off\""},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.opts.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want %q", err, tc.want)
			}
			if _, err := New(tc.opts); err == nil {
				t.Fatal("New accepted invalid options")
			}
		})
	}
	if err := (Options{URL: "https://prom.example:9090/prefix"}).Validate(); err != nil {
		t.Fatalf("valid options rejected: %v", err)
	}
}

func TestDefaultsApplied(t *testing.T) {
	src, err := New(Options{URL: "http://127.0.0.1:9090", Queries: Queries{NodeCPU: "my_cpu"}})
	if err != nil {
		t.Fatal(err)
	}
	o := src.opts
	if o.Timeout != DefaultTimeout || o.Window != DefaultWindow || o.RateWindow != DefaultRateWindow || o.Concurrency != DefaultConcurrency {
		t.Errorf("defaults not applied: %+v", o)
	}
	if o.Queries.NodeCPU != "my_cpu" || o.Queries.NodeMemory != DefaultQueries().NodeMemory {
		t.Errorf("query override or default lost: %+v", o.Queries)
	}
	if o.Labels != DefaultLabels() {
		t.Errorf("labels = %+v, want defaults", o.Labels)
	}
}

// The query names used in problems and metric labels are the YAML keys, and
// every key has a default.
func TestQueryNamesAreYAMLKeys(t *testing.T) {
	typ := reflect.TypeOf(Queries{})
	if typ.NumField() != len(specs) {
		t.Fatalf("%d fields, %d specs", typ.NumField(), len(specs))
	}
	def := DefaultQueries()
	for i, s := range specs {
		f := typ.Field(i)
		if f.Tag.Get("koanf") != s.name || f.Tag.Get("yaml") != s.name || f.Tag.Get("json") != s.name {
			t.Errorf("field %s tags %q, spec %q", f.Name, f.Tag, s.name)
		}
		if *s.get(&def) == "" {
			t.Errorf("query %s has no default", s.name)
		}
	}
}

func TestExpandPlaceholders(t *testing.T) {
	got := expand("rate(x[$rate_window]) + avg_over_time(y[$window])", 900_000_000_000, 60_000_000_000)
	if got != "rate(x[1m]) + avg_over_time(y[15m])" {
		t.Fatalf("expand = %q", got)
	}
}

func TestQueryConcurrencyBound(t *testing.T) {
	var mu sync.Mutex
	inFlight, peak := 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		inFlight--
		mu.Unlock()
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
	}))
	defer srv.Close()
	reg := promclient.NewRegistry()
	src, err := New(Options{URL: srv.URL, Concurrency: 3, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := src.Collect(context.Background()); err != nil {
		t.Fatal(err)
	}
	if peak != 3 {
		t.Fatalf("peak queries in flight = %d, want exactly the bound 3", peak)
	}
	if n := testutil.CollectAndCount(reg, "patrold_source_prometheus_query_duration_seconds"); n != len(specs) {
		t.Errorf("duration series = %d, want one per query (%d)", n, len(specs))
	}
}

func TestScalarResultIsAFailure(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if strings.HasPrefix(r.Form.Get("query"), "up") {
			_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"scalar","result":[1795946400,"1"]}}`))
			return
		}
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
	}))
	defer srv.Close()
	_, problems, err := collect(t, Options{URL: srv.URL})
	if err != nil || len(problems) != 1 || !strings.Contains(problems[0].Problem, "scalar, want an instant vector") {
		t.Fatalf("err %v problems %v", err, problems)
	}
}

// docs/SOURCES.md lists every default query verbatim, as YAML.
func TestDocsListDefaultQueries(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "SOURCES.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	def := DefaultQueries()
	for _, s := range specs {
		if line := "  " + s.name + ": '" + *s.get(&def) + "'\n"; !strings.Contains(doc, line) {
			t.Errorf("docs/SOURCES.md lacks the default of %s:\n%s", s.name, line)
		}
	}
	l := DefaultLabels()
	for key, v := range map[string]string{"node": l.Node, "mountpoint": l.Mountpoint, "device": l.Device,
		"guest": l.Guest, "guest_kind": l.GuestKind, "backup_status": l.BackupStatus} {
		if line := "      " + key + ": " + v; !strings.Contains(doc, line+"\n") && !strings.Contains(doc, line+" ") {
			t.Errorf("docs/SOURCES.md lacks the label default %s: %s", key, v)
		}
	}
}
