package config_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/snapshot/proxmox"
)

// The section exactly as docs/CONFIGURATION.md writes it.
const proxmoxYAML = `
source:
  kind: proxmox
  proxmox:
    url: https://pve1.example:8006
    token_id: patrold@pve!patrol
    token_secret_file: /etc/patrold/pve.token
    tls: {ca_file: "", fingerprint: "", insecure_skip_verify: false}
    timeout: 30s
    backups: {storages: []}
`

func TestProxmoxSection(t *testing.T) {
	cfg, err := config.Load([]byte(proxmoxYAML), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := proxmox.DefaultOptions()
	want.URL, want.TokenID, want.TokenSecretFile = "https://pve1.example:8006", "patrold@pve!patrol", "/etc/patrold/pve.token"
	want.Timeout = 30 * time.Second
	if !reflect.DeepEqual(cfg.Source.Proxmox, want) {
		t.Errorf("source.proxmox:\n got %+v\nwant %+v", cfg.Source.Proxmox, want)
	}
	env := []string{"PATROLD_SOURCE_PROXMOX_TIMEOUT=5s"}
	if cfg, err = config.Load([]byte(proxmoxYAML), env); err != nil || cfg.Source.Proxmox.Timeout != 5*time.Second {
		t.Errorf("env override: %v %v", err, cfg)
	}
	for _, c := range []struct{ from, to, want string }{
		{"url: https://pve1.example:8006", "url: ''", "source.proxmox.url: required"},
		{"token_id: patrold@pve!patrol", "token_id: patrold", `source.proxmox.token_id: want user@realm!name, got "patrold"`},
		{`fingerprint: ""`, `fingerprint: "12:34"`, "source.proxmox.tls.fingerprint: want a SHA-256 fingerprint"},
		{"timeout: 30s", "timeout: -1s", "source.proxmox.timeout: must not be negative"},
		{"storages: []", "storages: ['']", `source.proxmox.backups.storages[0]: "" is not a storage name`},
		{"backups: {storages: []}", "backups: {storage: []}", "source.proxmox.backups.storage: unknown key"},
	} {
		_, err := config.Load([]byte(strings.Replace(proxmoxYAML, c.from, c.to, 1)), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.to, err, c.want)
		}
	}
}
