// Package config loads patrold's one YAML file: defaults, then the file,
// then PATROLD_* environment overrides; unknown keys are errors; Validate
// collects every problem naming its YAML key; String hides secrets.
package config

import (
	"time"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/bus"
	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/notify"
	"github.com/patrold/patrold/snapshot/demo"
	"github.com/patrold/patrold/snapshot/exec"
	"github.com/patrold/patrold/snapshot/prometheus"
	"github.com/patrold/patrold/snapshot/proxmox"
)

// Default locations of the configuration file, tried in order.
var DefaultPaths = []string{"/etc/patrold/patrold.yaml", "./patrold.yaml"}

// Config is the whole configuration.
type Config struct {
	DataDir       string              `koanf:"data_dir" yaml:"data_dir"`
	Log           LogConfig           `koanf:"log" yaml:"log"`
	HTTP          HTTPConfig          `koanf:"http" yaml:"http"`
	Schedule      ScheduleConfig      `koanf:"schedule" yaml:"schedule"`
	Source        SourceConfig        `koanf:"source" yaml:"source"`
	Alerts        alerts.Settings     `koanf:"alerts" yaml:"alerts"`
	Model         model.Options       `koanf:"model" yaml:"model"`
	Patrol        PatrolConfig        `koanf:"patrol" yaml:"patrol"`
	Findings      FindingsConfig      `koanf:"findings" yaml:"findings"`
	Investigation InvestigationConfig `koanf:"investigation" yaml:"investigation"`
	NATS          bus.Options         `koanf:"nats" yaml:"nats"`
	Assistant     AssistantConfig     `koanf:"assistant" yaml:"assistant"`
	Actions       []ActionConfig      `koanf:"actions" yaml:"actions"`
	Notify        notify.Options      `koanf:"notify" yaml:"notify"`
	Retention     RetentionConfig     `koanf:"retention" yaml:"retention"`
	// Cluster switches cluster mode on: several instances on one NATS
	// cluster, one of them (the lease holder) the writer. Absent (nil): a
	// single instance, which takes no lease and schedules whether or not
	// NATS is up.
	Cluster *ClusterConfig `koanf:"cluster" yaml:"cluster,omitempty"`
}

// ClusterConfig is the cluster section.
type ClusterConfig struct {
	// Instance is this instance's stable name among the instances (the
	// leader lease's holder). Empty: a name generated on first start and
	// kept in data_dir, so a restart (kill -9 included) is the same
	// instance.
	Instance string `koanf:"instance" yaml:"instance"`
}

// Clustered reports whether the cluster section is present.
func (c *Config) Clustered() bool { return c.Cluster != nil }

// RetentionConfig says how long each kind of history is kept (the
// composition root maps it onto the store's retention).
type RetentionConfig struct {
	Runs           time.Duration `koanf:"runs" yaml:"runs"`
	Audit          time.Duration `koanf:"audit" yaml:"audit"`
	Investigations time.Duration `koanf:"investigations" yaml:"investigations"`
	Sessions       time.Duration `koanf:"sessions" yaml:"sessions"`
	Approvals      time.Duration `koanf:"approvals" yaml:"approvals"`
	Silences       time.Duration `koanf:"silences" yaml:"silences"`
}

// MinRunRetention is retention.runs' floor: the 30-day model budget reads
// the runs.
const MinRunRetention = 720 * time.Hour

// LogConfig configures logging.
type LogConfig struct {
	Level  string `koanf:"level" yaml:"level"`   // debug | info | warn | error
	Format string `koanf:"format" yaml:"format"` // text | json
}

// HTTPConfig configures the API listener and its bearer tokens.
type HTTPConfig struct {
	Listen       string        `koanf:"listen" yaml:"listen"`
	Tokens       []TokenConfig `koanf:"tokens" yaml:"tokens"`
	MaxBodyBytes int64         `koanf:"max_body_bytes" yaml:"max_body_bytes"`
	// ReadHeaderTimeout bounds reading a request's header; ReadTimeout
	// bounds reading the whole request, body included. A client slower
	// than either has its connection closed, whatever its token.
	ReadHeaderTimeout time.Duration `koanf:"read_header_timeout" yaml:"read_header_timeout"`
	ReadTimeout       time.Duration `koanf:"read_timeout" yaml:"read_timeout"`
	// Pprof serves /debug/pprof/ to admin tokens (off by default).
	Pprof bool `koanf:"pprof" yaml:"pprof"`
}

// TokenConfig is one API bearer token, given inline or (better) in a file.
type TokenConfig struct {
	Name      string `koanf:"name" yaml:"name"`
	Token     Secret `koanf:"token" yaml:"token,omitempty"`
	TokenFile string `koanf:"token_file" yaml:"token_file,omitempty"`
	Scope     string `koanf:"scope" yaml:"scope"` // read | admin
}

// ScheduleConfig configures when runs happen.
type ScheduleConfig struct {
	Cron                string        `koanf:"cron" yaml:"cron"`
	StartupDelay        time.Duration `koanf:"startup_delay" yaml:"startup_delay"`
	SkipStartupIfRecent time.Duration `koanf:"skip_startup_if_recent" yaml:"skip_startup_if_recent"`
	RunTimeout          time.Duration `koanf:"run_timeout" yaml:"run_timeout"`
	DrainTimeout        time.Duration `koanf:"drain_timeout" yaml:"drain_timeout"`
}

// SourceConfig selects and configures the snapshot source.
type SourceConfig struct {
	Kind       string             `koanf:"kind" yaml:"kind"` // demo | file | exec | prometheus | proxmox
	Demo       demo.Options       `koanf:"demo" yaml:"demo"`
	File       FileSourceConfig   `koanf:"file" yaml:"file"`
	Exec       exec.Options       `koanf:"exec" yaml:"exec"`
	Prometheus prometheus.Options `koanf:"prometheus" yaml:"prometheus"`
	Proxmox    proxmox.Options    `koanf:"proxmox" yaml:"proxmox"`
	// Probe configures the reachability prober for running guests with
	// addresses and no verdict from the source.
	Probe ProbeConfig `koanf:"probe" yaml:"probe"`
}

// FileSourceConfig configures the file source (source.file).
type FileSourceConfig struct {
	Path string `koanf:"path" json:"path" yaml:"path"`
	// MaxBytes bounds the file's size; it applies to `patrold run
	// --snapshot` too.
	MaxBytes int64 `koanf:"max_bytes" json:"max_bytes" yaml:"max_bytes"`
}

// DefaultFileMaxBytes is source.file.max_bytes' default (512 MiB).
const DefaultFileMaxBytes int64 = 512 << 20

// ProbeConfig configures the reachability prober (source.probe).
type ProbeConfig struct {
	// Timeout bounds one TCP connect.
	Timeout time.Duration `koanf:"timeout" yaml:"timeout" json:"timeout"`
	// Concurrency bounds the connects in flight across all guests.
	Concurrency int `koanf:"concurrency" yaml:"concurrency" json:"concurrency"`
}

// PatrolConfig configures patrol behaviour.
type PatrolConfig struct {
	Autonomy      string              `koanf:"autonomy" yaml:"autonomy"` // monitor | approval | assisted | full
	ModelFindings ModelFindingsConfig `koanf:"model_findings" yaml:"model_findings"`
}

// ModelFindingsConfig bounds the model findings one run files; the rest
// are refused, counted and reported.
type ModelFindingsConfig struct {
	MaxPerRun      int `koanf:"max_per_run" yaml:"max_per_run"`
	MaxPerResource int `koanf:"max_per_resource" yaml:"max_per_resource"`
}

// FindingsConfig configures retention and the publish policy.
type FindingsConfig struct {
	ResolvedRetention time.Duration `koanf:"resolved_retention" yaml:"resolved_retention"`
	RepeatInterval    time.Duration `koanf:"repeat_interval" yaml:"repeat_interval"`
	Flap              FlapConfig    `koanf:"flap" yaml:"flap"`
}

// FlapConfig configures flapping detection.
type FlapConfig struct {
	Window         time.Duration `koanf:"window" yaml:"window"`
	MaxTransitions int           `koanf:"max_transitions" yaml:"max_transitions"`
}

// InvestigationConfig holds the investigation gate's limits.
type InvestigationConfig struct {
	MaxAttempts      int           `koanf:"max_attempts" yaml:"max_attempts"`
	Cooldown         time.Duration `koanf:"cooldown" yaml:"cooldown"`
	TimeoutCooldown  time.Duration `koanf:"timeout_cooldown" yaml:"timeout_cooldown"`
	FixRetryCooldown time.Duration `koanf:"fix_retry_cooldown" yaml:"fix_retry_cooldown"`
	Timeout          time.Duration `koanf:"timeout" yaml:"timeout"`
	MaxConcurrent    int           `koanf:"max_concurrent" yaml:"max_concurrent"`
	EvidenceBudget   int           `koanf:"evidence_budget" yaml:"evidence_budget"`
}

// AssistantConfig configures remediation sessions.
type AssistantConfig struct {
	Enabled     bool          `koanf:"enabled" yaml:"enabled"`
	MaxTurns    int           `koanf:"max_turns" yaml:"max_turns"`
	ApprovalTTL time.Duration `koanf:"approval_ttl" yaml:"approval_ttl"`
	// MaxTokens bounds the model tokens (input + output) of one session.
	MaxTokens int `koanf:"max_tokens" yaml:"max_tokens"`
}

// ActionConfig declares one remediation action.
type ActionConfig struct {
	Name        string   `koanf:"name" yaml:"name"`
	Description string   `koanf:"description" yaml:"description"`
	Command     []string `koanf:"command" yaml:"command"`
	Risk        string   `koanf:"risk" yaml:"risk"` // low | medium | high | never
	// Kinds are the resource kinds the action may target (required).
	Kinds []string `koanf:"kinds" yaml:"kinds"`
	// Signals are the signal types it is declared for (required; ["*"] is
	// the explicit "any signal").
	Signals []string `koanf:"signals" yaml:"signals"`
}

// ActionKinds are the values actions[].kinds accepts ("guest" is vm and
// container).
var ActionKinds = []string{"node", "vm", "container", "storage", "disk", "guest"}

// AnySignal in actions[].signals declares an action for every signal.
const AnySignal = "*"

// DefaultAssistantMaxTokens is assistant.max_tokens' default.
const DefaultAssistantMaxTokens = 200000

// Default returns the configuration with every default applied: an empty
// file yields exactly this.
func Default() Config {
	return Config{
		DataDir: "./var",
		Log:     LogConfig{Level: "info", Format: "text"},
		HTTP: HTTPConfig{Listen: "127.0.0.1:9477", MaxBodyBytes: 1 << 20,
			ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second},
		Schedule: ScheduleConfig{Cron: "@every 6h", StartupDelay: 30 * time.Second, SkipStartupIfRecent: time.Hour,
			RunTimeout: 20 * time.Minute, DrainTimeout: 30 * time.Second},
		Source: SourceConfig{
			Kind:       "demo",
			File:       FileSourceConfig{MaxBytes: DefaultFileMaxBytes},
			Demo:       demo.Options{Seed: demo.DefaultSeed, Resources: demo.DefaultResources, FaultRate: demo.DefaultFaultRate, ChangeEvery: demo.DefaultChangeEvery},
			Exec:       exec.Options{Timeout: exec.DefaultTimeout, MaxOutputBytes: exec.DefaultMaxOutputBytes},
			Prometheus: prometheus.Options{Timeout: prometheus.DefaultTimeout, Window: prometheus.DefaultWindow, RateWindow: prometheus.DefaultRateWindow, Concurrency: prometheus.DefaultConcurrency},
			Proxmox:    proxmox.DefaultOptions(),
			Probe:      ProbeConfig{Timeout: 2 * time.Second, Concurrency: 16},
		},
		Model:  model.DefaultOptions(),
		Patrol: PatrolConfig{Autonomy: "monitor", ModelFindings: ModelFindingsConfig{MaxPerRun: 25, MaxPerResource: 3}},
		Findings: FindingsConfig{ResolvedRetention: 720 * time.Hour, RepeatInterval: 4 * time.Hour,
			Flap: FlapConfig{Window: 6 * time.Hour, MaxTransitions: 4}},
		Investigation: InvestigationConfig{MaxAttempts: 3, Cooldown: time.Hour,
			TimeoutCooldown: 10 * time.Minute, FixRetryCooldown: 20 * time.Minute,
			Timeout: 10 * time.Minute, MaxConcurrent: 3, EvidenceBudget: 10},
		NATS:      bus.DefaultOptions(),
		Assistant: AssistantConfig{Enabled: true, MaxTurns: 20, ApprovalTTL: 5 * time.Minute, MaxTokens: DefaultAssistantMaxTokens},
		Notify:    notify.DefaultOptions(),
		Retention: RetentionConfig{Runs: 720 * time.Hour, Audit: 2160 * time.Hour, Investigations: 2160 * time.Hour,
			Sessions: 2160 * time.Hour, Approvals: 720 * time.Hour, Silences: 720 * time.Hour},
	}
}
