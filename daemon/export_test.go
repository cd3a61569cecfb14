package daemon

import (
	"context"
	"testing"
	"time"

	"github.com/patrold/patrold/internal/testkit"
)

// Crash stops d the way a killed process looks to the cluster: the
// scheduler stops, the NATS connection closes at once (no flush, no lease
// release: the lease key stays until it runs out), then the rest stops.
func (d *Daemon) Crash() {
	if d.sched != nil {
		d.sched.Stop()
	}
	if d.msg != nil {
		d.msg.cancel()
		d.msg.bus.Conn().Close()
	}
	if d.cluster != nil {
		_ = d.cluster.Stop(context.Background())
	}
	_ = d.Stop(context.Background())
}

// CloseNATS drops d's NATS connection (as a network cut would).
func (d *Daemon) CloseNATS() { d.msg.bus.Conn().Close() }

// SetRelayInterval sets the relay's polling fallback of daemons started
// from now on (0: the default).
func SetRelayInterval(d time.Duration) { relayInterval = d }

// WaitIntegrityChecked waits until the background quick_check has given
// its verdict on the failed run id.
func (d *Daemon) WaitIntegrityChecked(t *testing.T, id string) {
	t.Helper()
	testkit.Eventually(t, 10*time.Second, "integrity checked after run "+id, func() bool {
		d.integrity.mu.Lock()
		defer d.integrity.mu.Unlock()
		return d.integrity.run == id
	})
}
