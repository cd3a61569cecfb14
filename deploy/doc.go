// Package deploy holds patrold's deployment files: the systemd unit, the
// fully commented example configuration, Prometheus rules for the daemon
// itself with their unit tests, a Grafana dashboard and a NATS cluster
// example. It has no code; its tests keep the files valid and true to the
// daemon.
package deploy
