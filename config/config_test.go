package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/snapshot"
)

func load(t *testing.T, name string, env ...string) (*config.Config, error) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return config.Load(data, env)
}

func TestEmptyFileIsDefaults(t *testing.T) {
	for _, in := range []string{"", "\n", "# nothing\n", "{}"} {
		cfg, err := config.Load([]byte(in), nil)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if cfg.String() != config.Default().String() {
			t.Fatalf("%q: not the defaults:\n%s", in, cfg)
		}
	}
	d := config.Default()
	if d.Source.Kind != "demo" || d.NATS.URL != "" || d.Model.Provider != "none" || d.Patrol.Autonomy != "monitor" || d.DataDir != "./var" {
		t.Fatalf("defaults are not the contract's: %+v", d)
	}
}

func TestGoodFile(t *testing.T) {
	cfg, err := load(t, "conf.good.yml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Schedule.Cron != "*/15 * * * *" || cfg.Schedule.StartupDelay != 5*time.Second || cfg.Schedule.SkipStartupIfRecent != time.Hour {
		t.Errorf("schedule: %+v", cfg.Schedule)
	}
	if cfg.Source.Kind != "file" || cfg.Source.File.Path != "/var/lib/patrold/snapshot.json" || cfg.Source.Demo.Resources != 40 {
		t.Errorf("source: %+v", cfg.Source)
	}
	p, err := alerts.New(cfg.Alerts)
	if err != nil {
		t.Fatal(err)
	}
	node := p.Resolve(&snapshot.Resource{ID: "node/a", Kind: "node"})
	if node.CPU.Trigger != 85 || node.CPU.Clear != 80 || node.Memory.Trigger != 80 || node.BackupMaxAge != 24*time.Hour {
		t.Errorf("node thresholds: %+v", node)
	}
	db := p.Resolve(&snapshot.Resource{ID: "vm/123", Kind: "vm", Tags: []string{"db"}})
	if db.Memory.Trigger != 95 || db.Memory.Clear != 90 || db.BackupMaxAge != 72*time.Hour || db.CPU.Trigger != 70 {
		t.Errorf("override thresholds: %+v", db)
	}
	if len(cfg.HTTP.Tokens) != 2 || cfg.HTTP.Tokens[0].Token.Reveal() != "s3cr3t-admin-token" {
		t.Errorf("tokens: %+v", cfg.HTTP.Tokens)
	}
}

// TestHideSecrets proves String never prints a secret.
func TestHideSecrets(t *testing.T) {
	cfg, err := load(t, "conf.good.yml")
	if err != nil {
		t.Fatal(err)
	}
	out := cfg.String()
	if strings.Contains(out, "s3cr3t") {
		t.Fatalf("secret printed:\n%s", out)
	}
	if !strings.Contains(out, "<hidden>") || !strings.Contains(out, "startup_delay: 5s") {
		t.Fatalf("unexpected rendering:\n%s", out)
	}
}

func TestErrorsNameTheKey(t *testing.T) {
	cases := map[string][]string{
		"conf.unknown-key.yml": {
			"alerts.defaults.nodes: unknown key",
			"surprise: unknown key",
			"schedule.crno: unknown key",
		},
		"conf.bad-values.yml": {
			`alerts.defaults.guest.disk.clear: 85 must be below trigger 80`,
			`alerts.defaults.guest.disk.critical: 70 must be above trigger 80`,
			`alerts.defaults.storage.usage.trigger: 120 is outside (0, 100]`,
			`alerts.defaults.storage.usage.critical: 95 must be above trigger 120`,
			`alerts.overrides[0].match.kind: unknown kind "vmm"`,
			`http.tokens[0]: set exactly one of token and token_file`,
			`http.tokens[0].scope: "root" is not one of read, admin, trigger`,
			`log.level: "loud" is not one of debug, info, warn, error`,
			`patrol.autonomy: "yolo" is not one of monitor, approval, assisted, full`,
			`schedule.cron: "every day": `,
			`schedule.run_timeout: 0s must be positive`,
			`source.file.path: required when source.kind is file`,
		},
		"conf.bad-type.yml": {
			"investigation.max_attempts: ",
			"schedule.startup_delay: ",
		},
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := load(t, name)
			if err == nil {
				t.Fatal("accepted")
			}
			ce, ok := err.(*config.Error)
			if !ok {
				t.Fatalf("%T: %v", err, err)
			}
			if len(ce.Problems) != len(want) {
				t.Errorf("got %d problems, want %d:\n%s", len(ce.Problems), len(want), strings.Join(ce.Problems, "\n"))
			}
			for _, w := range want {
				found := false
				for _, p := range ce.Problems {
					if strings.HasPrefix(p, w) {
						found = true
					}
				}
				if !found {
					t.Errorf("missing problem %q in:\n%s", w, strings.Join(ce.Problems, "\n"))
				}
			}
		})
	}
}

func TestEnvOverrides(t *testing.T) {
	cfg, err := config.Load([]byte("http: {listen: '127.0.0.1:1'}\n"), []string{
		"PATROLD_HTTP_LISTEN=127.0.0.1:2", "PATROLD_SCHEDULE_RUN_TIMEOUT=5m", "PATROLD_NATS_EMBEDDED_LISTEN=127.0.0.1:4333",
		"PATROLD_DATA_DIR=/srv/patrold", "PATROLD_SOURCE_DEMO_RESOURCES=100", "PATROLD_CONFIG=/x", "HOME=/root",
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTP.Listen != "127.0.0.1:2" || cfg.Schedule.RunTimeout != 5*time.Minute || cfg.NATS.Embedded.Listen != "127.0.0.1:4333" ||
		cfg.DataDir != "/srv/patrold" || cfg.Source.Demo.Resources != 100 {
		t.Fatalf("env not applied: %+v", cfg)
	}
	_, err = config.Load(nil, []string{"PATROLD_HTTP_LISTN=x"})
	if err == nil || !strings.Contains(err.Error(), "PATROLD_HTTP_LISTN") {
		t.Fatalf("unknown env var: %v", err)
	}
}

// TestBreakOneField starts from a valid config and breaks one field at a time.
func TestBreakOneField(t *testing.T) {
	cases := []struct{ yaml, key string }{
		{"data_dir: ''", "data_dir"},
		{"http: {listen: nope}", "http.listen"},
		{"findings: {flap: {max_transitions: 0}}", "findings.flap.max_transitions"},
		{"investigation: {max_attempts: 0}", "investigation.max_attempts"},
		{"investigation: {cooldown: -1h}", "investigation.cooldown"},
		{"nats: {subject_prefix: 'a b'}", "nats.subject_prefix"},
		{"assistant: {max_turns: 0}", "assistant.max_turns"},
		{"source: {kind: demo, demo: {fault_rate: 2}}", "source.demo.fault_rate"},
		{"source: {kind: ftp}", "source.kind"},
		{"model: {provider: gpt}", "model.provider"},
		{"alerts: {defaults: {backup: {max_age: -1h}}}", "alerts.defaults.backup.max_age"},
		{"alerts: {overrides: [{match: {id: ' x'}}]}", "alerts.overrides[0].match.id"},
		{"actions: [{name: restart, command: [systemctl], risk: maybe, kinds: [vm], signals: ['*']}]", "actions[0].risk"},
		{"actions: [{name: restart, command: [systemctl], risk: low, signals: [high_cpu]}]", "actions[0].kinds"},
		{"actions: [{name: restart, command: [systemctl], risk: low, kinds: [vm, pool], signals: [high_cpu]}]", "actions[0].kinds[1]"},
		{"actions: [{name: restart, command: [systemctl], risk: low, kinds: [vm]}]", "actions[0].signals"},
		{"actions: [{name: restart, command: [systemctl], risk: low, kinds: [vm], signals: []}]", "actions[0].signals"},
		{"actions: [{name: restart, command: [systemctl], risk: low, kinds: [vm], signals: ['*', high_cpu]}]", "actions[0].signals[0]"},
		{"assistant: {max_tokens: 0}", "assistant.max_tokens"},
		{"schedule: {startup_delay: -5s}", "schedule.startup_delay"},
	}
	for _, c := range cases {
		_, err := config.Load([]byte(c.yaml), nil)
		if err == nil || !strings.Contains(err.Error(), c.key+":") {
			t.Errorf("%s: error %v does not name %s", c.yaml, err, c.key)
		}
	}
}

func FuzzLoad(f *testing.F) {
	for _, name := range []string{"conf.good.yml", "conf.unknown-key.yml", "conf.bad-values.yml", "conf.bad-type.yml"} {
		data, _ := os.ReadFile(filepath.Join("testdata", name))
		f.Add(data)
	}
	f.Add([]byte("alerts: [1,2]"))
	f.Add([]byte("schedule: {cron: '@every 1s'}"))
	f.Add([]byte("schedule: {startup_delay: 30, run_timeout: 1.5d}"))
	f.Add([]byte("retention: {runs: 30d, audit: '1d12h'}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := config.Load(data, nil)
		if err == nil && cfg.Validate() != nil {
			t.Fatal("Load returned a config that does not validate")
		}
		if err != nil && err.Error() == "" {
			t.Fatal("empty error")
		}
	})
}
