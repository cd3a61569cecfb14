package cluster

import "github.com/patrold/patrold/internal/instance"

// Config is the cluster section. Present, it switches cluster mode on:
// several instances on one NATS cluster, one of them (the lease holder)
// the writer.
type Config struct {
	// Instance is this instance's stable name among the instances (the
	// leader lease's holder). Empty: a name generated on first start and
	// kept in data_dir, so a restart (kill -9 included) is the same
	// instance.
	Instance string `koanf:"instance" yaml:"instance"`
	// SecretFile is the deployment key file every instance, worker and
	// notifier of the cluster signs and verifies bus messages with
	// (required in cluster mode; bus/msgauth's format, mode 0600).
	SecretFile string `koanf:"secret_file" yaml:"secret_file,omitempty"`
}

// Validate reports every problem, each naming its key under cluster.
func (c Config) Validate() error { return instance.Validate(c.Instance) }
