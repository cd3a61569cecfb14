package bus

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/patrold/patrold/contracts"
)

// Defaults for the `nats:` section (docs/NATS.md, docs/CONFIGURATION.md). A zero value in
// Options means "use the default".
const (
	DefaultEmbeddedListen  = "127.0.0.1:4222"
	DefaultStreamMaxAge    = 720 * time.Hour
	DefaultStreamMaxBytes  = int64(1 << 30)
	DefaultStreamReplicas  = 1
	DefaultStreamDuplicate = 2 * time.Minute
	DefaultOutboxBatch     = 256
	DefaultOutboxRetention = 168 * time.Hour
	DefaultLeaseTTL        = 30 * time.Second
	maxStreamReplicas      = 5
	minLeaseTTL            = time.Second
	hiddenSecret           = "[hidden]"
)

// Options is the `nats:` section of the configuration.
type Options struct {
	// URL lists the servers to connect to (comma separated); "" starts an
	// embedded server.
	URL string `koanf:"url" json:"url" yaml:"url"`
	// SubjectPrefix is the first token of every subject (a single NATS token).
	SubjectPrefix string `koanf:"subject_prefix" json:"subject_prefix" yaml:"subject_prefix"`
	// Source is the CloudEvents source; "" means "patrold/<hostname>".
	Source          string          `koanf:"source" json:"source" yaml:"source"`
	Embedded        EmbeddedOptions `koanf:"embedded" json:"embedded" yaml:"embedded"`
	CredentialsFile string          `koanf:"credentials_file" json:"credentials_file" yaml:"credentials_file"`
	// NkeyFile is an nkey user seed file, such as the ones serve
	// generates for its embedded server (docs/NATS.md).
	NkeyFile  string             `koanf:"nkey_file" json:"nkey_file" yaml:"nkey_file"`
	User      string             `koanf:"user" json:"user" yaml:"user"`
	Password  string             `koanf:"password" json:"password" yaml:"password"`
	TokenFile string             `koanf:"token_file" json:"token_file" yaml:"token_file"`
	TLS       TLSOptions         `koanf:"tls" json:"tls" yaml:"tls"`
	Stream    StreamOptions      `koanf:"stream" json:"stream" yaml:"stream"`
	Outbox    OutboxOptions      `koanf:"outbox" json:"outbox" yaml:"outbox"`
	Lease     LeaseBucketOptions `koanf:"lease" json:"lease" yaml:"lease"`
}

// EmbeddedOptions configure the in-process server used when URL is empty.
type EmbeddedOptions struct {
	// Listen is host:port for client connections; port 0 picks a free port.
	Listen string `koanf:"listen" json:"listen" yaml:"listen"`
	// StoreDir holds JetStream files; "" means <data_dir>/nats, filled in by
	// the daemon before New.
	StoreDir string `koanf:"store_dir" json:"store_dir" yaml:"store_dir"`
}

// TLSOptions configure TLS to an external server.
type TLSOptions struct {
	CAFile   string `koanf:"ca_file" json:"ca_file" yaml:"ca_file"`
	CertFile string `koanf:"cert_file" json:"cert_file" yaml:"cert_file"`
	KeyFile  string `koanf:"key_file" json:"key_file" yaml:"key_file"`
}

// StreamOptions are the limits of the stream capturing every subject.
type StreamOptions struct {
	Name     string        `koanf:"name" json:"name" yaml:"name"`
	MaxAge   time.Duration `koanf:"max_age" json:"max_age" yaml:"max_age"`
	MaxBytes int64         `koanf:"max_bytes" json:"max_bytes" yaml:"max_bytes"`
	Replicas int           `koanf:"replicas" json:"replicas" yaml:"replicas"`
	// DuplicateWindow is how long JetStream remembers message ids; a relay
	// retry inside it is dropped as a duplicate.
	DuplicateWindow time.Duration `koanf:"duplicate_window" json:"duplicate_window" yaml:"duplicate_window"`
}

// OutboxOptions configure the outbox relay.
type OutboxOptions struct {
	Batch     int           `koanf:"batch" json:"batch" yaml:"batch"`
	Retention time.Duration `koanf:"retention" json:"retention" yaml:"retention"`
}

// LeaseBucketOptions configure the leader lease bucket (nats.lease).
type LeaseBucketOptions struct {
	Bucket string        `koanf:"bucket" json:"bucket" yaml:"bucket"`
	TTL    time.Duration `koanf:"ttl" json:"ttl" yaml:"ttl"`
}

// DefaultOptions returns the documented defaults.
func DefaultOptions() Options {
	return Options{}.withDefaults()
}

// WithDefaults is o with every zero value replaced by its default.
func (o Options) WithDefaults() Options { return o.withDefaults() }

func (o Options) withDefaults() Options {
	setStr(&o.SubjectPrefix, contracts.DefaultSubjectPrefix)
	setStr(&o.Embedded.Listen, DefaultEmbeddedListen)
	setStr(&o.Stream.Name, contracts.DefaultStreamName)
	setStr(&o.Lease.Bucket, contracts.DefaultLeaseBucket)
	setNum(&o.Stream.MaxAge, DefaultStreamMaxAge)
	setNum(&o.Stream.MaxBytes, DefaultStreamMaxBytes)
	setNum(&o.Stream.Replicas, DefaultStreamReplicas)
	setNum(&o.Stream.DuplicateWindow, DefaultStreamDuplicate)
	setNum(&o.Outbox.Batch, DefaultOutboxBatch)
	setNum(&o.Outbox.Retention, DefaultOutboxRetention)
	setNum(&o.Lease.TTL, DefaultLeaseTTL)
	return o
}

func setStr(p *string, def string) {
	if *p == "" {
		*p = def
	}
}

func setNum[T int | int64 | time.Duration](p *T, def T) {
	if *p == 0 {
		*p = def
	}
}

// Validate reports every problem, each naming its key under `nats.`. Zero
// values stand for the defaults and are valid.
func (o Options) Validate() error {
	o = o.withDefaults()
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("nats.%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if !contracts.ValidToken(o.SubjectPrefix) {
		add("subject_prefix", "%q is not a single NATS subject token (letters, digits, - and _)", o.SubjectPrefix)
	}
	if strings.ContainsAny(o.Source, " \t\r\n") {
		add("source", "must not contain whitespace")
	}
	if o.URL != "" {
		for _, u := range strings.Split(o.URL, ",") {
			if strings.TrimSpace(u) == "" {
				add("url", "empty server in %q", o.URL)
			}
		}
	} else if err := validListen(o.Embedded.Listen); err != nil {
		add("embedded.listen", "%v", err)
	}
	auth := 0
	for _, set := range []bool{o.CredentialsFile != "", o.User != "" || o.Password != "", o.TokenFile != "", o.NkeyFile != ""} {
		if set {
			auth++
		}
	}
	if auth > 1 {
		add("credentials_file", "set only one of credentials_file, nkey_file, user/password and token_file")
	}
	if (o.User == "") != (o.Password == "") {
		add("user", "user and password must be set together")
	}
	if (o.TLS.CertFile == "") != (o.TLS.KeyFile == "") {
		add("tls.cert_file", "cert_file and key_file must be set together")
	}
	if !contracts.ValidToken(o.Stream.Name) {
		add("stream.name", "%q is not a valid stream name (letters, digits, - and _)", o.Stream.Name)
	}
	if o.Stream.MaxAge < 0 {
		add("stream.max_age", "must not be negative, got %s", o.Stream.MaxAge)
	}
	if o.Stream.MaxBytes < 0 {
		add("stream.max_bytes", "must not be negative, got %d", o.Stream.MaxBytes)
	}
	if o.Stream.Replicas < 1 || o.Stream.Replicas > maxStreamReplicas {
		add("stream.replicas", "must be 1..%d, got %d", maxStreamReplicas, o.Stream.Replicas)
	}
	if o.Stream.DuplicateWindow < 0 {
		add("stream.duplicate_window", "must not be negative, got %s", o.Stream.DuplicateWindow)
	} else if o.Stream.DuplicateWindow > o.Stream.MaxAge && o.Stream.MaxAge > 0 {
		add("stream.duplicate_window", "%s exceeds stream.max_age %s", o.Stream.DuplicateWindow, o.Stream.MaxAge)
	}
	if o.Outbox.Batch < 1 || o.Outbox.Batch > maxBatch {
		add("outbox.batch", "must be 1..%d, got %d", maxBatch, o.Outbox.Batch)
	}
	if o.Outbox.Retention < 0 {
		add("outbox.retention", "must not be negative, got %s", o.Outbox.Retention)
	}
	if !contracts.ValidToken(o.Lease.Bucket) {
		add("lease.bucket", "%q is not a valid bucket name (letters, digits, - and _)", o.Lease.Bucket)
	}
	if o.Lease.TTL < minLeaseTTL {
		add("lease.ttl", "must be at least %s, got %s", minLeaseTTL, o.Lease.TTL)
	}
	return errors.Join(errs...)
}

func validListen(listen string) error {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %v", listen, err)
	}
	if host == "" {
		return fmt.Errorf("%q has no host (the embedded server listens on loopback only, e.g. 127.0.0.1)", listen)
	}
	//mutate:embedded-loopback-only ./bus ^TestOptionsValidateNamesTheKey$
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("%q is not a loopback address: the embedded server listens on loopback only; "+
			"for workers on other hosts run a NATS server (deploy/nats-example.conf) and set nats.url", listen)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("port %q must be 0..65535", port)
	}
	return nil
}

// redacted is Options with secrets hidden; it is what String and
// MarshalJSON print.
type redacted Options

func (o Options) redact() redacted {
	if o.Password != "" {
		o.Password = hiddenSecret
	}
	return redacted(o)
}

// MarshalJSON encodes the options with the password hidden.
func (o Options) MarshalJSON() ([]byte, error) {
	return json.Marshal(o.redact())
}

// MarshalYAML encodes the options with the password hidden (yaml.v3's
// Marshaler interface, declared without importing it).
func (o Options) MarshalYAML() (any, error) { return o.redact(), nil }

// String prints the options with the password hidden.
func (o Options) String() string {
	b, err := json.Marshal(o.redact())
	if err != nil {
		return "bus.Options{" + err.Error() + "}"
	}
	return string(b)
}
