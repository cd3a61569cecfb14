package config

import (
	"fmt"
	"log/slog"
	"sort"
	"sync/atomic"
)

// Reloader coordinates configuration reloads. It holds the configuration in
// force and re-reads it on Reload. It warns about the keys that take effect
// only after a restart, and hands the new configuration to Apply. On any
// error the previous configuration stays in force.
type Reloader struct {
	cur   atomic.Pointer[Config]
	load  func() (*Config, error)
	apply func(*Config) error
	log   *slog.Logger
}

// NewReloader starts from initial; load re-reads the configuration, apply
// (may be nil) puts a new one into effect, log (may be nil) receives the
// restart warnings.
func NewReloader(initial *Config, load func() (*Config, error), apply func(*Config) error, log *slog.Logger) *Reloader {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Reloader{load: load, apply: apply, log: log}
	r.cur.Store(initial)
	return r
}

// Current is the configuration in force.
func (r *Reloader) Current() *Config { return r.cur.Load() }

// Reload re-reads and applies the configuration.
func (r *Reloader) Reload() error {
	cfg, err := r.load()
	if err != nil {
		return err
	}
	for _, key := range RestartKeys(r.Current(), cfg) {
		r.log.Warn("configuration key changed on reload takes effect after a restart", "key", key)
	}
	if r.apply != nil {
		if err := r.apply(cfg); err != nil {
			return err
		}
	}
	r.cur.Store(cfg)
	return nil
}

// RestartKeys are the top-level keys whose change between old and cfg
// takes effect only after a restart, sorted.
func RestartKeys(old, cfg *Config) []string {
	var keys []string
	for key, changed := range map[string]bool{
		"data_dir": cfg.DataDir != old.DataDir, "http.listen": cfg.HTTP.Listen != old.HTTP.Listen,
		"http.tokens": fmt.Sprint(cfg.HTTP.Tokens) != fmt.Sprint(old.HTTP.Tokens), "nats": cfg.NATS.String() != old.NATS.String(),
		"model": fmt.Sprintf("%+v", cfg.Model) != fmt.Sprintf("%+v", old.Model), "log": cfg.Log != old.Log,
		"assistant": cfg.Assistant != old.Assistant, "actions": fmt.Sprint(cfg.Actions) != fmt.Sprint(old.Actions),
		"notify": fmt.Sprint(cfg.Notify) != fmt.Sprint(old.Notify),
	} {
		if changed {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	return keys
}
