package deploy_test

import (
	"os"
	"testing"
	"time"

	"github.com/patrold/patrold/config"
)

// The Proxmox example is a valid configuration that selects the proxmox
// source with the values it shows.
func TestProxmoxExampleLoads(t *testing.T) {
	data, err := os.ReadFile("proxmox.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(data, nil)
	if err != nil {
		t.Fatalf("proxmox.example.yaml: %v", err)
	}
	p := cfg.Source.Proxmox
	if cfg.Source.Kind != "proxmox" || p.URL != "https://pve1.example:8006" || p.TokenID != "patrold@pve!patrol" ||
		p.TokenSecretFile != config.Credstore+"/pve.token" || p.TLS.CAFile != "/etc/patrold/pve-root-ca.pem" ||
		p.Timeout != 30*time.Second || len(p.Backups.Storages) != 1 || p.Backups.Storages[0] != "pbs" ||
		!p.GuestAgent.Enabled || p.GuestAgent.Port != 22 {
		t.Errorf("source: %+v", cfg.Source)
	}
}
