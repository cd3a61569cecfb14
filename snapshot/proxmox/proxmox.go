// Package proxmox is the snapshot source that reads a Proxmox VE cluster
// (API version 8) directly. It reads nodes, guests and storage from
// /cluster/resources, and disks and SMART data per node. It reads backups
// from the backup storages, the backup jobs and the vzdump tasks, and guest
// addresses from the QEMU guest agent.
//
// The client is a small typed one over net/http (see docs/SOURCES.md for why
// not github.com/luthermonson/go-proxmox). It authenticates with an API
// token and verifies the server either against a CA file, the system roots,
// or a pinned SHA-256 certificate fingerprint.
//
// Failure of /cluster/resources fails the collection. Any other endpoint
// that fails, and any node that is offline, is returned as a source-level
// snapshot.Problem naming the node and the endpoint. The run is then
// degraded and incomplete, and the rest of the cluster is still patrolled.
// The resources (or resource parts) that depend on what could not be read
// are left out rather than reported half-filled.
package proxmox

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	promclient "github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/snapshot"
)

// Defaults for Options.
const (
	DefaultTimeout     = 30 * time.Second
	DefaultConcurrency = 4
	// DefaultNodeOverlap is how many of a node's per-guest reads may be
	// in flight at once (source.proxmox.node_overlap).
	DefaultNodeOverlap = 4
	// maxNodeOverlap bounds node_overlap: pveproxy serves each node
	// with a few workers.
	maxNodeOverlap   = 16
	DefaultAgentPort = 22
	// DefaultSourceName is the snapshot's source field.
	DefaultSourceName = "proxmox"
	// maxBodyBytes bounds one API response.
	maxBodyBytes = 32 << 20
)

// TLSOptions configure how the server certificate is verified (YAML section
// source.proxmox.tls). With none set the system roots are used.
type TLSOptions struct {
	// CAFile is a PEM bundle the server certificate must chain to.
	CAFile string `koanf:"ca_file" yaml:"ca_file" json:"ca_file"`
	// Fingerprint pins the server's leaf certificate by its SHA-256
	// fingerprint (hex, colons optional, any case), as `pvenode cert info`
	// prints it. Chain and host name are then not checked.
	Fingerprint string `koanf:"fingerprint" yaml:"fingerprint" json:"fingerprint"`
	// InsecureSkipVerify accepts any certificate. For tests only.
	InsecureSkipVerify bool `koanf:"insecure_skip_verify" yaml:"insecure_skip_verify" json:"insecure_skip_verify"`
}

// BackupOptions configure where backups are read (YAML section
// source.proxmox.backups).
type BackupOptions struct {
	// Storages names the backup storages to read. Empty means every storage
	// whose content includes "backup".
	Storages []string `koanf:"storages" yaml:"storages" json:"storages"`
}

// GuestAgentOptions configure the guest address lookup (YAML section
// source.proxmox.guest_agent).
type GuestAgentOptions struct {
	// Enabled asks the QEMU guest agent of every running VM for its
	// addresses.
	Enabled bool `koanf:"enabled" yaml:"enabled" json:"enabled"`
	// Port is joined to every address the agent reports; the prober
	// connects to it.
	Port int `koanf:"port" yaml:"port" json:"port"`
}

// Options configure the Proxmox source (YAML section source.proxmox).
type Options struct {
	// URL is the API address of any node of the cluster, https://host:8006.
	URL string `koanf:"url" yaml:"url" json:"url"`
	// TokenID is the API token, user@realm!name.
	TokenID string `koanf:"token_id" yaml:"token_id" json:"token_id"`
	// TokenSecretFile holds the token's secret; it is re-read on every
	// collection so a rotated secret needs no reload.
	TokenSecretFile string     `koanf:"token_secret_file" yaml:"token_secret_file" json:"token_secret_file"`
	TLS             TLSOptions `koanf:"tls" yaml:"tls" json:"tls"`
	// Timeout bounds one API request. Zero means DefaultTimeout.
	Timeout time.Duration `koanf:"timeout" yaml:"timeout" json:"timeout"`
	// Concurrency bounds the nodes read at once. Zero means DefaultConcurrency.
	Concurrency int               `koanf:"concurrency" yaml:"concurrency" json:"concurrency"`
	Backups     BackupOptions     `koanf:"backups" yaml:"backups" json:"backups"`
	GuestAgent  GuestAgentOptions `koanf:"guest_agent" yaml:"guest_agent" json:"guest_agent"`
	// Refresh is how old a kept guest config, agent answer or snapshot
	// list may grow before it is read again though nothing says it
	// changed. Zero means DefaultRefresh.
	Refresh time.Duration `koanf:"refresh" yaml:"refresh" json:"refresh"`
	// Rate bounds the requests a second any one node is sent. Zero
	// means DefaultRate.
	Rate float64 `koanf:"rate" yaml:"rate" json:"rate"`
	// NodeOverlap bounds a node's per-guest reads in flight at once.
	// Zero means DefaultNodeOverlap.
	NodeOverlap int `koanf:"node_overlap" yaml:"node_overlap" json:"node_overlap"`

	// Keeper keeps the guests' copies across restarts (the store); nil
	// keeps them in memory only.
	Keeper Keeper `koanf:"-" yaml:"-" json:"-"`

	// Now is the clock of taken_at; nil means time.Now.
	Now func() time.Time `koanf:"-" yaml:"-" json:"-"`
	// Registerer receives the source's metrics; nil disables them.
	Registerer promclient.Registerer `koanf:"-" yaml:"-" json:"-"`
	// Metrics, when set, are used instead of registering new ones on
	// Registerer (a source rebuilt on reload).
	Metrics *Metrics `koanf:"-" yaml:"-" json:"-"`
}

// DefaultOptions returns the options an empty source.proxmox section yields.
func DefaultOptions() Options {
	return Options{Timeout: DefaultTimeout, Concurrency: DefaultConcurrency,
		Backups: BackupOptions{Storages: []string{}}, GuestAgent: GuestAgentOptions{Enabled: true, Port: DefaultAgentPort},
		Refresh: DefaultRefresh, Rate: DefaultRate, NodeOverlap: DefaultNodeOverlap}
}

// Validate reports every problem, each naming its key under source.proxmox.
// It does not read files; New does.
func (o Options) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("source.proxmox.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	validateAPI(add, "https://pve1.example:8006", "patrold@pve!patrol", o.URL, o.TokenID, o.TokenSecretFile, o.TLS, o.Timeout)
	if o.Concurrency < 0 {
		add("concurrency", "must not be negative, got %d", o.Concurrency)
	}
	for i, s := range o.Backups.Storages {
		if strings.TrimSpace(s) == "" || strings.ContainsAny(s, "/ \t") {
			add(fmt.Sprintf("backups.storages[%d]", i), "%q is not a storage name", s)
		}
	}
	if o.GuestAgent.Port < 0 || o.GuestAgent.Port > 65535 || (o.GuestAgent.Enabled && o.GuestAgent.Port == 0) {
		add("guest_agent.port", "want 1..65535, got %d", o.GuestAgent.Port)
	}
	if o.Refresh < 0 {
		add("refresh", "must not be negative, got %s", o.Refresh)
	}
	if o.Rate < 0 {
		add("rate", "must not be negative, got %g", o.Rate)
	}
	if o.NodeOverlap < 0 || o.NodeOverlap > maxNodeOverlap {
		add("node_overlap", "want 1..%d (0: %d), got %d", maxNodeOverlap, DefaultNodeOverlap, o.NodeOverlap)
	}
	return errors.Join(errs...)
}

func validTokenID(id string) bool {
	user, name, ok := strings.Cut(id, "!")
	if !ok || name == "" || strings.ContainsAny(id, " \t\n=") {
		return false
	}
	at := strings.LastIndexByte(user, '@')
	return at > 0 && at < len(user)-1
}

func (o Options) withDefaults() Options {
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Refresh == 0 {
		o.Refresh = DefaultRefresh
	}
	if o.Rate == 0 {
		o.Rate = DefaultRate
	}
	if o.NodeOverlap == 0 {
		o.NodeOverlap = DefaultNodeOverlap
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Source collects snapshots from one Proxmox VE cluster. It is safe for
// concurrent use.
type Source struct {
	opts   Options
	client *client

	mu sync.Mutex
	// paths are the storage paths of the last GET /storage read. A failed
	// read uses them, so one failed read changes neither the grouping of
	// storages nor the findings of their filesystems.
	paths map[string]string
	// copies are the guests' kept reads by keptKey, loaded from
	// opts.Keeper once; dirty are those read since the last save.
	copies  map[string]*keptCopy
	dirty   map[string]bool
	loaded  bool
	keepErr error // the load's failure, reported with the next save
}

var _ snapshot.Source = (*Source)(nil)

// New validates opts, reads the CA file and checks the secret file. It does
// not contact the cluster.
func New(opts Options) (*Source, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	c, err := newClient(endpoint{key: "source.proxmox", scheme: pveScheme, url: opts.URL, tokenID: opts.TokenID,
		file: opts.TokenSecretFile, timeout: opts.Timeout, concurrency: opts.Concurrency * opts.NodeOverlap, tls: opts.TLS, rate: opts.Rate})
	if err != nil {
		return nil, err
	}
	if c.metrics, err = opts.metrics(); err != nil {
		return nil, err
	}
	return &Source{opts: opts, client: c}, nil
}

func readSecret(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(raw))
	if s == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	if strings.ContainsAny(s, "\r\n") {
		return "", fmt.Errorf("%s holds more than one line; want the token secret alone", path)
	}
	return s, nil
}

func (o Options) metrics() (*metrics, error) {
	if o.Metrics != nil {
		return o.Metrics.m, nil
	}
	return newMetrics(o.Registerer, pveAPI)
}

// validateAPI checks what the Proxmox VE and Backup Server sources share:
// the URL, the API token, its secret file, the TLS choice and the
// timeout. add names each problem's key under the caller's section.
func validateAPI(add func(key, format string, args ...any), urlExample, tokenExample, rawURL, tokenID, secretFile string, tls TLSOptions, timeout time.Duration) {
	if rawURL == "" {
		add("url", "required (e.g. %s)", urlExample)
	} else if u, err := url.Parse(rawURL); err != nil {
		add("url", "not a URL: %v", err)
	} else if u.Scheme != "https" || u.Host == "" {
		add("url", "want https://host:port, got %q", rawURL)
	}
	if tokenID == "" {
		add("token_id", "required (e.g. %s)", tokenExample)
	} else if !validTokenID(tokenID) {
		add("token_id", "want user@realm!name, got %q", tokenID)
	}
	if secretFile == "" {
		add("token_secret_file", "required (a file holding the token's secret)")
	}
	set := 0
	for _, b := range []bool{tls.CAFile != "", tls.Fingerprint != "", tls.InsecureSkipVerify} {
		if b {
			set++
		}
	}
	if set > 1 {
		add("tls", "set at most one of ca_file, fingerprint and insecure_skip_verify")
	}
	if tls.Fingerprint != "" {
		if _, err := parseFingerprint(tls.Fingerprint); err != nil {
			add("tls.fingerprint", "%v", err)
		}
	}
	if timeout < 0 {
		add("timeout", "must not be negative, got %s", timeout)
	}
}
