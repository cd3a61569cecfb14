package proxmox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	valid := func() Options {
		o := DefaultOptions()
		o.URL, o.TokenID, o.TokenSecretFile = "https://pve1.example:8006", testTokenID, "/etc/patrold/pve.token"
		return o
	}
	if err := valid().Validate(); err != nil {
		t.Fatalf("valid options: %v", err)
	}
	cases := []struct {
		name    string
		breakIt func(*Options)
		want    string
	}{
		{"no url", func(o *Options) { o.URL = "" }, "source.proxmox.url: required (e.g. https://pve1.example:8006)"},
		{"http url", func(o *Options) { o.URL = "http://pve1:8006" }, `source.proxmox.url: want https://host:port, got "http://pve1:8006"`},
		{"no token", func(o *Options) { o.TokenID = "" }, "source.proxmox.token_id: required (e.g. patrold@pve!patrol)"},
		{"token without name", func(o *Options) { o.TokenID = "patrold@pve" }, `source.proxmox.token_id: want user@realm!name, got "patrold@pve"`},
		{"token without realm", func(o *Options) { o.TokenID = "patrold!x" }, `source.proxmox.token_id: want user@realm!name, got "patrold!x"`},
		{"no secret file", func(o *Options) { o.TokenSecretFile = "" }, "source.proxmox.token_secret_file: required (a file holding the token's secret)"},
		{"ca and pin", func(o *Options) { o.TLS.CAFile, o.TLS.Fingerprint = "/ca.pem", strings.Repeat("ab", 32) },
			"source.proxmox.tls: set at most one of ca_file, fingerprint and insecure_skip_verify"},
		{"short pin", func(o *Options) { o.TLS.Fingerprint = "AB:CD" },
			`source.proxmox.tls.fingerprint: want a SHA-256 fingerprint (32 hex bytes, colons optional), got "AB:CD"`},
		{"negative timeout", func(o *Options) { o.Timeout = -1 }, "source.proxmox.timeout: must not be negative, got -1ns"},
		{"negative concurrency", func(o *Options) { o.Concurrency = -2 }, "source.proxmox.concurrency: must not be negative, got -2"},
		{"bad storage", func(o *Options) { o.Backups.Storages = []string{"pbs", " "} }, `source.proxmox.backups.storages[1]: " " is not a storage name`},
		{"agent port", func(o *Options) { o.GuestAgent.Port = 0 }, "source.proxmox.guest_agent.port: want 1..65535, got 0"},
		{"negative rate", func(o *Options) { o.Rate = -1 }, "source.proxmox.rate: must not be negative, got -1"},
		{"negative overlap", func(o *Options) { o.NodeOverlap = -1 }, "source.proxmox.node_overlap: want 1..16 (0: 4), got -1"},
		{"large overlap", func(o *Options) { o.NodeOverlap = 17 }, "source.proxmox.node_overlap: want 1..16 (0: 4), got 17"},
		{"negative refresh", func(o *Options) { o.Refresh = -time.Minute }, "source.proxmox.refresh: must not be negative, got -1m0s"},
	}
	for _, c := range cases {
		o := valid()
		c.breakIt(&o)
		err := o.Validate()
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}

func TestNewChecksFiles(t *testing.T) {
	dir := t.TempDir()
	o := DefaultOptions()
	o.URL, o.TokenID = "https://pve1.example:8006", testTokenID
	o.TokenSecretFile = filepath.Join(dir, "missing")
	if _, err := New(o); err == nil || !strings.HasPrefix(err.Error(), "source.proxmox.token_secret_file: open ") {
		t.Errorf("missing secret: %v", err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o.TokenSecretFile = empty
	if _, err := New(o); err == nil || err.Error() != "source.proxmox.token_secret_file: "+empty+" is empty" {
		t.Errorf("empty secret: %v", err)
	}
	if err := os.WriteFile(empty, []byte(testSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	o.TLS.CAFile = empty
	if _, err := New(o); err == nil || err.Error() != "source.proxmox.tls.ca_file: "+empty+" holds no PEM certificate" {
		t.Errorf("bad CA file: %v", err)
	}
}
