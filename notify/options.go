package notify

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/patrold/patrold/contracts"
)

// Sink kinds.
const (
	KindAlertmanager = "alertmanager"
	KindWebhook      = "webhook"
)

// Defaults of a sink entry; a zero value in the configuration means "use
// the default".
const (
	DefaultMaxDeliver     = 10
	DefaultBackoff        = 5 * time.Second
	DefaultMaxBackoff     = 5 * time.Minute
	DefaultTimeout        = 10 * time.Second
	DefaultResendInterval = time.Minute
	DefaultForgetAfter    = 24 * time.Hour
	// resendFactor: a firing alert is posted with endsAt = now + this many
	// resend intervals, so Alertmanager keeps it while resends arrive and
	// ends it on its own when they stop (the factor Prometheus uses).
	resendFactor = 4
)

// Options is the `notify:` section of the configuration.
type Options struct {
	// InServe runs the sinks inside `patrold serve`; false leaves them to
	// a separate `patrold notify`.
	InServe bool          `koanf:"in_serve" yaml:"in_serve"`
	Sinks   []SinkOptions `koanf:"sinks" yaml:"sinks"`
}

// SinkOptions configure one sink: its own durable consumer on the stream.
type SinkOptions struct {
	// Name is unique; the durable consumer is "patrold-notify-<name>".
	Name string `koanf:"name" yaml:"name"`
	Kind string `koanf:"kind" yaml:"kind"` // alertmanager | webhook
	// MaxDeliver is how many deliveries of one event are tried before it
	// is dead-lettered (terminated and counted).
	MaxDeliver int `koanf:"max_deliver" yaml:"max_deliver"`
	// Backoff is the delay before the first redelivery; it doubles with
	// every further failure up to MaxBackoff.
	Backoff      time.Duration       `koanf:"backoff" yaml:"backoff"`
	MaxBackoff   time.Duration       `koanf:"max_backoff" yaml:"max_backoff"`
	Alertmanager AlertmanagerOptions `koanf:"alertmanager" yaml:"alertmanager"`
	Webhook      WebhookOptions      `koanf:"webhook" yaml:"webhook"`
}

// AlertmanagerOptions configure an alertmanager sink.
type AlertmanagerOptions struct {
	// URLs are the base URLs of the Alertmanagers (each of an HA pair is
	// posted); alerts go to <url>/api/v2/alerts.
	URLs []string `koanf:"urls" yaml:"urls"`
	// Labels are added to every alert (they cannot replace a finding label).
	Labels map[string]string `koanf:"labels" yaml:"labels"`
	// Link is a URL template for the alert's generatorURL and `link`
	// annotation; {finding_id}, {resource_id} and {key} are replaced
	// (path-escaped).
	Link string `koanf:"link" yaml:"link"`
	// ResendInterval is how often every active alert is posted again.
	ResendInterval time.Duration `koanf:"resend_interval" yaml:"resend_interval"`
	// ForgetAfter: an active alert whose finding had no event for this
	// long is ended and no longer re-posted.
	ForgetAfter time.Duration `koanf:"forget_after" yaml:"forget_after"`
	Timeout     time.Duration `koanf:"timeout" yaml:"timeout"`
}

// WebhookOptions configure a webhook sink.
type WebhookOptions struct {
	URL string `koanf:"url" yaml:"url"`
	// SecretFile holds the HMAC-SHA256 key; "" sends unsigned requests.
	SecretFile string `koanf:"secret_file" yaml:"secret_file"`
	// Subjects filter the events (full subjects, wildcards allowed);
	// empty means every finding event, <prefix>.findings.>.
	Subjects []string      `koanf:"subjects" yaml:"subjects"`
	Timeout  time.Duration `koanf:"timeout" yaml:"timeout"`
}

// DefaultOptions returns the documented defaults: sinks run inside serve,
// none is configured.
func DefaultOptions() Options { return Options{InServe: true, Sinks: []SinkOptions{}} }

// WithDefaults returns the options with every zero sink setting replaced
// by its default, so `config check` prints what the sinks will use. The
// block of the other kind is left as it is.
func (o Options) WithDefaults() Options {
	sinks := make([]SinkOptions, len(o.Sinks))
	for i, s := range o.Sinks {
		sinks[i] = s.withDefaults()
	}
	o.Sinks = sinks
	return o
}

func (s SinkOptions) withDefaults() SinkOptions {
	setNum(&s.MaxDeliver, DefaultMaxDeliver)
	setNum(&s.Backoff, DefaultBackoff)
	setNum(&s.MaxBackoff, DefaultMaxBackoff)
	switch s.Kind {
	case KindAlertmanager:
		setNum(&s.Alertmanager.ResendInterval, DefaultResendInterval)
		setNum(&s.Alertmanager.ForgetAfter, DefaultForgetAfter)
		setNum(&s.Alertmanager.Timeout, DefaultTimeout)
	case KindWebhook:
		setNum(&s.Webhook.Timeout, DefaultTimeout)
	}
	return s
}

func setNum[T int | time.Duration](p *T, def T) {
	if *p == 0 {
		*p = def
	}
}

// findingLabels are the labels every alert carries from its finding.
var findingLabels = []string{"alertname", "resource_id", "resource_kind", "severity", "category", "finding_id", "source"}

// Validate reports every problem, each naming its key under `notify.`;
// prefix is nats.subject_prefix (webhook subjects must start with it).
func (o Options) Validate(prefix string) error {
	var errs []error
	names := map[string]bool{}
	for i, s := range o.Sinks {
		key := fmt.Sprintf("notify.sinks[%d]", i)
		add := func(k, format string, args ...any) {
			errs = append(errs, fmt.Errorf("%s.%s: %s", key, k, fmt.Sprintf(format, args...)))
		}
		switch {
		case s.Name == "":
			add("name", "required")
		case !contracts.ValidToken(s.Name) || len(s.Name) > 32:
			add("name", "%q must be 1..32 letters, digits, - and _", s.Name)
		case names[s.Name]:
			add("name", "duplicate sink name %q", s.Name)
		}
		names[s.Name] = true
		if s.MaxDeliver < 0 {
			add("max_deliver", "must not be negative, got %d", s.MaxDeliver)
		}
		s = s.withDefaults()
		if s.Backoff < 0 {
			add("backoff", "must not be negative, got %s", s.Backoff)
		}
		if s.MaxBackoff < s.Backoff {
			add("max_backoff", "%s is below backoff %s", s.MaxBackoff, s.Backoff)
		}
		switch s.Kind {
		case KindAlertmanager:
			errs = append(errs, s.Alertmanager.validate(key+".alertmanager"))
			if s.Webhook.URL != "" || s.Webhook.SecretFile != "" || len(s.Webhook.Subjects) > 0 {
				add("webhook", "set only for kind webhook")
			}
		case KindWebhook:
			errs = append(errs, s.Webhook.validate(key+".webhook", prefix))
			if len(s.Alertmanager.URLs) > 0 || len(s.Alertmanager.Labels) > 0 || s.Alertmanager.Link != "" {
				add("alertmanager", "set only for kind alertmanager")
			}
		default:
			add("kind", "%q is not one of %s, %s", s.Kind, KindAlertmanager, KindWebhook)
		}
	}
	return errors.Join(errs...)
}

func (a AlertmanagerOptions) validate(key string) error {
	var errs []error
	add := func(k, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", key, k, fmt.Sprintf(format, args...)))
	}
	if len(a.URLs) == 0 {
		add("urls", "at least one Alertmanager URL is required")
	}
	seen := map[string]bool{}
	for i, u := range a.URLs {
		if err := validHTTPURL(u); err != nil {
			add(fmt.Sprintf("urls[%d]", i), "%v", err)
		} else if seen[u] {
			add(fmt.Sprintf("urls[%d]", i), "duplicate URL %s", u)
		}
		seen[u] = true
	}
	for name, v := range a.Labels {
		switch {
		case !model.LegacyValidation.IsValidLabelName(name):
			add("labels."+name, "not a valid label name ([a-zA-Z_][a-zA-Z0-9_]*)")
		case isFindingLabel(name):
			add("labels."+name, "is set from the finding and cannot be configured")
		case strings.HasPrefix(name, "__"):
			add("labels."+name, "names starting with __ are reserved")
		case v == "":
			add("labels."+name, "an empty value is no label; remove it")
		}
	}
	if a.Link != "" {
		probe := linkReplacer("0123456789abcdef", "vm/1", "k").Replace(a.Link)
		if err := validHTTPURL(probe); err != nil {
			add("link", "%v", err)
		}
	}
	if a.ResendInterval < time.Second {
		add("resend_interval", "must be at least 1s, got %s", a.ResendInterval)
	}
	if a.ForgetAfter <= a.ResendInterval {
		add("forget_after", "%s must be longer than resend_interval %s", a.ForgetAfter, a.ResendInterval)
	}
	if a.Timeout <= 0 {
		add("timeout", "must be positive, got %s", a.Timeout)
	}
	return errors.Join(errs...)
}

func (w WebhookOptions) validate(key, prefix string) error {
	var errs []error
	add := func(k, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s.%s: %s", key, k, fmt.Sprintf(format, args...)))
	}
	if w.URL == "" {
		add("url", "required")
	} else if err := validHTTPURL(w.URL); err != nil {
		add("url", "%v", err)
	}
	for i, s := range w.Subjects {
		if err := validFilter(s, prefix); err != nil {
			add(fmt.Sprintf("subjects[%d]", i), "%v", err)
		}
	}
	if w.Timeout <= 0 {
		add("timeout", "must be positive, got %s", w.Timeout)
	}
	return errors.Join(errs...)
}

func isFindingLabel(name string) bool {
	for _, l := range findingLabels {
		if l == name {
			return true
		}
	}
	return false
}

func validHTTPURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q is not a URL", raw)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q must be an http or https URL", raw)
	}
	if u.Host == "" {
		return fmt.Errorf("%q has no host", raw)
	}
	return nil
}

// validFilter checks a subject filter: dot-separated tokens, "*" a whole
// token, ">" only last, under the subject prefix (any event of the stream:
// findings, runs, remediation, approvals).
func validFilter(s, prefix string) error {
	toks := strings.Split(s, ".")
	for i, t := range toks {
		switch {
		case t == "":
			return fmt.Errorf("%q has an empty token", s)
		case t == ">" && i != len(toks)-1:
			return fmt.Errorf("%q: > must be the last token", s)
		case t != "*" && t != ">" && strings.ContainsAny(t, "*> \t\r\n"):
			return fmt.Errorf("%q: wildcards must be whole tokens, and no spaces", s)
		}
	}
	if len(toks) < 2 || toks[0] != prefix {
		return fmt.Errorf("%q must start with %s. (nats.subject_prefix)", s, prefix)
	}
	return nil
}

func linkReplacer(findingID, resourceID, key string) *strings.Replacer {
	return strings.NewReplacer("{finding_id}", url.PathEscape(findingID), "{resource_id}", url.PathEscape(resourceID),
		"{key}", url.PathEscape(key))
}

// redactedWebhook is WebhookOptions as printed: a hook URL's path and
// query are often the credential (chat services), so only scheme and host
// are shown.
type redactedWebhook WebhookOptions

// MarshalYAML prints the options with the URL reduced to scheme and host
// (yaml.v3's Marshaler, declared without importing it).
func (w WebhookOptions) MarshalYAML() (any, error) {
	w.URL = RedactURL(w.URL)
	return redactedWebhook(w), nil
}

// MarshalYAML prints the options with any password in the URLs hidden.
func (a AlertmanagerOptions) MarshalYAML() (any, error) {
	urls := make([]string, len(a.URLs))
	for i, u := range a.URLs {
		urls[i] = redactPassword(u)
	}
	a.URLs = urls
	return redactedAM(a), nil
}

type redactedAM AlertmanagerOptions

const hiddenURL = "<hidden>"

// RedactURL keeps scheme and host of a URL and hides the rest.
func RedactURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return hiddenURL
	}
	if u.Path == "" && u.RawQuery == "" && u.User == nil {
		return u.Scheme + "://" + u.Host
	}
	return u.Scheme + "://" + u.Host + "/" + hiddenURL
}

// Durable is the durable consumer name of a sink.
func Durable(sink string) string { return "patrold-notify-" + sink }

// ReplayConsumer is the consumer an alertmanager sink's replay reads.
// Notify durables start "patrold-notify-", so no sink name collides.
func ReplayConsumer(sink string) string { return "patrold-replay-" + sink }

// SinkConsumers are the consumers one sink reads: its durable, the
// subjects the durable filters and, for an alertmanager sink, its replay
// consumer ("" for none). The embedded server's notify role may use
// these and no other (docs/NATS.md).
type SinkConsumers struct {
	Durable string
	Filters []string
	Replay  string
}

// Consumers lists what every sink of o reads under prefix, in order.
func (o Options) Consumers(prefix string) []SinkConsumers {
	var out []SinkConsumers
	for _, s := range o.Sinks {
		c := SinkConsumers{Durable: Durable(s.Name), Filters: sinkFilters(s, prefix)}
		if s.Kind == KindAlertmanager {
			c.Replay = ReplayConsumer(s.Name)
		}
		out = append(out, c)
	}
	return out
}

// sinkFilters are the subjects a sink's durable filters: every finding
// event, unless a webhook names its subjects.
func sinkFilters(s SinkOptions, prefix string) []string {
	if s.Kind == KindWebhook && len(s.Webhook.Subjects) > 0 {
		return slices.Clone(s.Webhook.Subjects)
	}
	return []string{findingsFilter(prefix)}
}
