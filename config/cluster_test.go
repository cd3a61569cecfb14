package config

import (
	"reflect"
	"testing"

	"github.com/patrold/patrold/cluster"
)

func TestClusterSection(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		env  []string
		want *cluster.Config
	}{
		{"absent: single instance", "log:\n  level: info\n", nil, nil},
		{"present with a name", "cluster:\n  instance: node-a\n", nil, &cluster.Config{Instance: "node-a"}},
		{"present, name generated", "cluster:\n  instance: \"\"\n", nil, &cluster.Config{}},
		{"empty section", "cluster: {}\n", nil, &cluster.Config{}},
		{"null section: single instance", "cluster:\n", nil, nil},
		{"switched on from the environment", "", []string{"PATROLD_CLUSTER_INSTANCE=node-b"}, &cluster.Config{Instance: "node-b"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Load([]byte(c.yaml), c.env)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cfg.Cluster, c.want) {
				t.Fatalf("cluster = %#v, want %#v", cfg.Cluster, c.want)
			}
			if cfg.Clustered() != (c.want != nil) {
				t.Fatalf("Clustered() = %v", cfg.Clustered())
			}
		})
	}
}

func TestClusterInstanceRefused(t *testing.T) {
	_, err := Load([]byte("cluster:\n  instance: \"has space\"\n"), nil)
	want := `invalid configuration: cluster.instance: "has space" must be 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
	_, err = Load([]byte("cluster:\n  name: x\n"), nil)
	if err == nil || err.Error() != "invalid configuration: cluster.name: unknown key" {
		t.Fatalf("err = %v", err)
	}
}
