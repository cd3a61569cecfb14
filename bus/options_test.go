package bus

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestDefaultOptionsMatchTheContract(t *testing.T) {
	o := DefaultOptions()
	if o.URL != "" || o.SubjectPrefix != "patrol" || o.Embedded.Listen != "127.0.0.1:4222" ||
		o.Stream.Name != "PATROL" || o.Stream.MaxAge != 720*time.Hour || o.Stream.MaxBytes != 1<<30 ||
		o.Stream.Replicas != 1 || o.Outbox.Batch != 256 || o.Outbox.Retention != 168*time.Hour ||
		o.Lease.Bucket != "patrold_leader" || o.Lease.TTL != 30*time.Second {
		t.Fatalf("defaults %+v", o)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (Options{}).Validate(); err != nil {
		t.Fatalf("zero options (all defaults) invalid: %v", err)
	}
}

// A valid configuration with one field broken fails with a message naming
// exactly that key.
func TestOptionsValidateNamesTheKey(t *testing.T) {
	cases := []struct {
		key    string
		break_ func(o *Options)
	}{
		{"nats.subject_prefix", func(o *Options) { o.SubjectPrefix = "patrol.events" }},
		{"nats.subject_prefix", func(o *Options) { o.SubjectPrefix = "pa trol" }},
		{"nats.source", func(o *Options) { o.Source = "patrold/a b" }},
		{"nats.url", func(o *Options) { o.URL = "nats://a:4222,,nats://b:4222" }},
		{"nats.embedded.listen", func(o *Options) { o.Embedded.Listen = "4222" }},
		{"nats.embedded.listen", func(o *Options) { o.Embedded.Listen = "127.0.0.1:99999" }},
		{"nats.embedded.listen", func(o *Options) { o.Embedded.Listen = ":4222" }},
		{"nats.embedded.listen", func(o *Options) { o.Embedded.Listen = "0.0.0.0:4222" }},
		{"nats.embedded.listen", func(o *Options) { o.Embedded.Listen = "192.168.1.10:4222" }},
		{"nats.credentials_file", func(o *Options) { o.NkeyFile = "daemon.nk"; o.User, o.Password = "u", "p" }},
		{"nats.credentials_file", func(o *Options) { o.CredentialsFile = "a.creds"; o.TokenFile = "t" }},
		{"nats.user", func(o *Options) { o.User = "patrold" }},
		{"nats.tls.cert_file", func(o *Options) { o.TLS.CertFile = "c.pem" }},
		{"nats.stream.name", func(o *Options) { o.Stream.Name = "PATROL.X" }},
		{"nats.stream.max_age", func(o *Options) { o.Stream.MaxAge = -time.Hour }},
		{"nats.stream.max_bytes", func(o *Options) { o.Stream.MaxBytes = -1 }},
		{"nats.stream.replicas", func(o *Options) { o.Stream.Replicas = 7 }},
		{"nats.stream.duplicate_window", func(o *Options) { o.Stream.DuplicateWindow = 1000 * time.Hour }},
		{"nats.outbox.batch", func(o *Options) { o.Outbox.Batch = -5 }},
		{"nats.outbox.retention", func(o *Options) { o.Outbox.Retention = -time.Second }},
		{"nats.lease.bucket", func(o *Options) { o.Lease.Bucket = "leader.lease" }},
		{"nats.lease.ttl", func(o *Options) { o.Lease.TTL = 100 * time.Millisecond }},
	}
	for _, c := range cases {
		o := DefaultOptions()
		c.break_(&o)
		err := o.Validate()
		if err == nil {
			t.Errorf("%s: accepted", c.key)
			continue
		}
		if lines := strings.Split(err.Error(), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], c.key+": ") {
			t.Errorf("%s: error %q, want one problem naming the key", c.key, err)
		}
	}
}

func TestOptionsNeverPrintThePassword(t *testing.T) {
	o := DefaultOptions()
	o.URL, o.User, o.Password = "nats://nats.internal:4222", "patrold", "hunter2-very-secret"
	js, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	ys, err := yaml.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{
		"String": o.String(), "%v": fmt.Sprintf("%v", o), "%+v": fmt.Sprintf("%+v", o),
		"json": string(js), "yaml": string(ys),
	} {
		if strings.Contains(out, "hunter2") {
			t.Errorf("%s prints the password: %s", name, out)
		}
		if !strings.Contains(out, "patrold") || !strings.Contains(out, hiddenSecret) {
			t.Errorf("%s hides too much: %s", name, out)
		}
	}
	if o.Password != "hunter2-very-secret" {
		t.Fatal("printing changed the options")
	}
}
