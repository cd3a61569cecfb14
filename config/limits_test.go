package config_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/snapshot/file"
)

// TestOperationKeys: the keys of production operation have their
// defaults, and bad values are refused naming the key.
func TestOperationKeys(t *testing.T) {
	cfg, err := config.Load(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTP.Pprof || cfg.Source.File.MaxBytes != file.DefaultMaxBytes || cfg.Retention != (findings.Retention{Runs: 720 * time.Hour, Audit: 2160 * time.Hour,
		Investigations: 2160 * time.Hour, Sessions: 2160 * time.Hour, Approvals: 720 * time.Hour, Silences: 720 * time.Hour}) {
		t.Fatalf("defaults: pprof %v, max_bytes %d, retention %+v", cfg.HTTP.Pprof, cfg.Source.File.MaxBytes, cfg.Retention)
	}
	if cfg.Retention.Runs != 720*time.Hour || cfg.Retention.Audit != 2160*time.Hour {
		t.Fatalf("retention defaults: %+v", cfg.Retention)
	}
	_, err = config.Load([]byte("http: {pprof: true}\nsource: {file: {max_bytes: 0}}\nretention: {runs: 48h, silences: 0s}\n"), nil)
	ce, ok := err.(*config.Error)
	if !ok {
		t.Fatalf("%T %v", err, err)
	}
	want := []string{
		"http.pprof: needs an admin token in http.tokens (the profiles are served to admin tokens only)",
		"source.file.max_bytes: must be positive",
		"retention.silences: 0s is shorter than 1h",
		"retention.runs: 48h0m0s is shorter than 720h0m0s (the 30-day model budget reads the runs)",
	}
	if !reflect.DeepEqual(ce.Problems, want) {
		t.Fatalf("problems:\n%q\nwant\n%q", ce.Problems, want)
	}
	ok2, err := config.Load([]byte("http: {pprof: true, tokens: [{name: ops, token: s3cret-token-value, scope: admin}]}\nretention: {runs: 2000h}\n"), nil)
	if err != nil || !ok2.HTTP.Pprof || ok2.Retention.Runs != 2000*time.Hour {
		t.Fatalf("valid: %v", err)
	}
}
