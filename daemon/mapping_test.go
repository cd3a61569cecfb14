package daemon

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/assistant"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/file"
	"github.com/patrold/patrold/snapshot/multi"
	"github.com/patrold/patrold/snapshot/probe"
	promsource "github.com/patrold/patrold/snapshot/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

// TestAssistantSectionsMapped: the assistant and actions sections reach
// the assistant whole, and the values both sides declare agree.
func TestAssistantSectionsMapped(t *testing.T) {
	cfg, err := config.Load([]byte(`assistant: {max_turns: 7, approval_ttl: 2m, max_tokens: 900}
actions:
  - {name: restart, description: Restart it, command: [systemctl, restart, x], risk: low, kinds: [vm], signals: ["*"]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := assistantSettings(cfg), (assistant.Settings{Enabled: true, MaxTurns: 7, ApprovalTTL: 2 * time.Minute, MaxTokens: 900}); got != want {
		t.Fatalf("assistant settings %+v, want %+v", got, want)
	}
	want := []assistant.ActionSpec{{Name: "restart", Description: "Restart it", Command: []string{"systemctl", "restart", "x"},
		Risk: "low", Kinds: []string{"vm"}, Signals: []string{"*"}}}
	if got := actionSpecs(cfg); !reflect.DeepEqual(got, want) {
		t.Fatalf("actions %+v, want %+v", got, want)
	}
}

// TestSourcesRebuiltAroundMetricsRegisteredOnce: at start and on each
// reload the source and the prober are rebuilt, across kinds and back, on
// one registry: their metrics are registered once and shared.
func TestSourcesRebuiltAroundMetricsRegisteredOnce(t *testing.T) {
	dir := t.TempDir()
	prom, err := config.Load([]byte("source: {kind: prometheus, prometheus: {url: 'http://127.0.0.1:1'}}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	fileCfg, err := config.Load([]byte("source: {kind: file, file: {path: "+dir+"/snap.json}}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	l := newLive(reg, time.Now)
	var sources []snapshot.Source
	var probers []*probe.Prober
	for i, cfg := range []*config.Config{prom, fileCfg, prom, fileCfg} {
		src, pr, err := l.configure(cfg)
		if err != nil {
			t.Fatalf("configure %d (%s): %v", i, cfg.Source.Kind, err)
		}
		sources, probers = append(sources, src), append(probers, pr)
	}
	if _, ok := sources[0].(*promsource.Source); !ok {
		t.Fatalf("prometheus source is %T", sources[0])
	}
	if _, ok := sources[1].(*file.Source); !ok {
		t.Fatalf("file source is %T", sources[1])
	}
	if sources[0] == sources[2] || probers[0] == probers[1] {
		t.Fatal("a reload reused the previous source or prober")
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fams {
		names = append(names, f.GetName())
	}
	want := []string{"patrold_probe_addresses_total", "patrold_probe_guests_total", "patrold_source_prometheus_query_duration_seconds",
		"patrold_source_prometheus_query_failures_total", "patrold_source_prometheus_samples_skipped_total"}
	if !slices.Equal(names, want) {
		t.Fatalf("registered %v, want %v", names, want)
	}
	bad := *fileCfg
	bad.Source.Probe.Timeout = -time.Second
	if _, _, err := l.configure(&bad); err == nil || err.Error() != "source.probe.timeout: must not be negative, got -1s" {
		t.Fatalf("bad probe: %v", err)
	}
}

// TestPVEAndPBSMetricsRegisteredOnce: a sources list with a PVE cluster
// and two PBS servers, configured twice (a reload), registers each
// family once; the PBS requests have families of their own.
func TestPVEAndPBSMetricsRegisteredOnce(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	api := "token_secret_file: " + secret + ", tls: {insecure_skip_verify: true}"
	cfg, err := config.Load([]byte("sources:\n"+
		"  - {name: pve, kind: proxmox, proxmox: {url: 'https://127.0.0.1:1', token_id: 'p@pve!t', "+api+"}}\n"+
		"  - {name: pbs-a, kind: pbs, pbs: {url: 'https://127.0.0.1:2', token_id: 'p@pbs!t', "+api+"}}\n"+
		"  - {name: pbs-b, kind: pbs, pbs: {url: 'https://127.0.0.1:3', token_id: 'p@pbs!t', "+api+"}}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	l := newLive(reg, time.Now)
	for i := range 2 {
		src, _, err := l.configure(cfg)
		if err != nil {
			t.Fatalf("configure %d: %v", i, err)
		}
		// Nothing listens: each server's first request is unreachable.
		if _, _, err := src.Collect(context.Background()); err == nil {
			t.Fatal("collected from servers that do not listen")
		}
	}
	counted := map[string]float64{}
	gathered, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range gathered {
		for _, m := range f.GetMetric() {
			if c := m.GetCounter(); c != nil && c.GetValue() > 0 {
				var labels []string
				for _, l := range m.GetLabel() {
					labels = append(labels, l.GetValue())
				}
				counted[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = c.GetValue()
			}
		}
	}
	wantCounted := map[string]float64{
		"patrold_source_pbs_requests_total{datastore_usage,unreachable}":       4,
		"patrold_source_proxmox_requests_total{cluster_resources,unreachable}": 2,
	}
	if !reflect.DeepEqual(counted, wantCounted) {
		t.Errorf("counted %v, want %v", counted, wantCounted)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fams {
		names = append(names, f.GetName())
	}
	want := []string{"patrold_probe_addresses_total", "patrold_probe_guests_total",
		"patrold_source_pbs_request_duration_seconds", "patrold_source_pbs_requests_total",
		"patrold_source_proxmox_request_duration_seconds", "patrold_source_proxmox_requests_total"}
	if !slices.Equal(names, want) {
		t.Fatalf("registered %v, want %v", names, want)
	}
}

// TestConfigDefaultsAgreeWithFindings: the findings, investigation,
// retention and source sections' defaults, mapped by the root, are exactly
// the defaults of the packages they configure.
func TestConfigDefaultsAgreeWithFindings(t *testing.T) {
	def := config.Default()
	set, err := settingsWith(&def, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantGate := findings.Gate{MaxAttempts: findings.DefaultMaxAttempts, Cooldown: findings.DefaultCooldown,
		TimeoutCooldown: findings.DefaultTimeoutCooldown, FixRetryCooldown: findings.DefaultFixRetryCooldown,
		Timeout: findings.DefaultInvestigationTTL, MaxConcurrent: findings.DefaultMaxConcurrent}
	wantPublish := findings.PublishPolicy{RepeatInterval: findings.DefaultRepeatInterval, FlapWindow: findings.DefaultFlapWindow,
		FlapMaxTransitions: findings.DefaultFlapMaxTransitions}
	if set.Gate != wantGate || set.Publish != wantPublish || set.Retention != findings.DefaultRetention() ||
		def.Source.File != file.DefaultOptions() ||
		probeOptions(&def) != (probe.Options{Timeout: probe.DefaultTimeout, Concurrency: probe.DefaultConcurrency}) {
		t.Fatalf("gate %+v want %+v\npublish %+v want %+v\nretention %+v want %+v\nfile %+v", set.Gate, wantGate,
			set.Publish, wantPublish, set.Retention, findings.DefaultRetention(), def.Source.File)
	}
}

// A sources list builds one source of them all, collecting each member
// into one snapshot whose problems name their member.
func TestSourcesListBuildsOneMergedSource(t *testing.T) {
	dir := t.TempDir()
	doc := `{"version": 1, "resources": [{"id": "node/f1", "kind": "node", "status": "online"}]}`
	if err := os.WriteFile(filepath.Join(dir, "snap.json"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load([]byte("sources:\n  - {name: files, kind: file, file: {path: "+dir+"/snap.json}}\n"+
		"  - {name: gone, kind: file, file: {path: "+dir+"/missing.json}}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	src, _, err := newLive(prometheus.NewRegistry(), time.Now).configure(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := src.(*multi.Source); !ok {
		t.Fatalf("source is %T", src)
	}
	snap, problems, err := src.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Resources) != 1 || snap.Resources[0].ID != "node/f1" || snap.Source != "files" {
		t.Fatalf("snapshot %+v", snap)
	}
	if len(problems) != 1 || !problems[0].SourceFailed() || problems[0].Source != "gone" || !strings.Contains(problems[0].Problem, "missing.json") {
		t.Fatalf("problems %+v", problems)
	}
}
