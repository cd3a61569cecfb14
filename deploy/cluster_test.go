package deploy_test

import (
	"os"
	"testing"

	"github.com/patrold/patrold/config"
)

// The cluster example loads, is in cluster mode with an R3 stream on a
// three-server URL list.
func TestClusterExampleLoads(t *testing.T) {
	data, err := os.ReadFile("patrold.cluster.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(data, nil)
	if err != nil {
		t.Fatalf("patrold.cluster.example.yaml: %v", err)
	}
	if !cfg.Clustered() || cfg.Cluster.Instance != "patrol-1" || cfg.Cluster.SecretFile != "/etc/patrold/bus.key" || cfg.NATS.Stream.Replicas != 3 ||
		cfg.NATS.URL != "nats://nats-1:4222,nats://nats-2:4222,nats://nats-3:4222" || len(cfg.HTTP.Tokens) != 1 {
		t.Errorf("cluster example: cluster=%+v nats=%+v tokens=%d", cfg.Cluster, cfg.NATS, len(cfg.HTTP.Tokens))
	}
}
