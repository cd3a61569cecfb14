package deploy_test

import (
	"os/exec"
	"testing"

	"github.com/patrold/patrold/config"
	"github.com/patrold/patrold/notify"
)

// TestNotifyExample: the notify example loads and validates as a whole
// configuration and shows both kinds.
func TestNotifyExample(t *testing.T) {
	cfg, err := config.Load([]byte(read(t, "notify.example.yaml")), nil)
	if err != nil {
		t.Fatalf("notify.example.yaml: %v", err)
	}
	kinds := map[string]int{}
	for _, s := range cfg.Notify.Sinks {
		kinds[s.Kind]++
	}
	if kinds[notify.KindAlertmanager] != 1 || kinds[notify.KindWebhook] != 2 || !cfg.Notify.InServe {
		t.Fatalf("sinks: %+v", cfg.Notify)
	}
}

// TestAlertmanagerExample checks the Alertmanager side with amtool.
func TestAlertmanagerExample(t *testing.T) {
	bin := tool(t, "amtool")
	if out, err := exec.Command(bin, "check-config", "alertmanager.example.yml").CombinedOutput(); err != nil {
		t.Fatalf("amtool check-config: %v\n%s", err, out)
	}
}
