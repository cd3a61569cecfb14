package daemon

import (
	"context"
	"fmt"
)

// notify sends a state to systemd when NOTIFY_SOCKET is set; otherwise it
// does nothing.
func (d *Daemon) notify(state string) { d.root.notifySystemd(state) }

// watchdog pings systemd while the store answers, so a wedged daemon is
// restarted.
func (d *Daemon) watchdog(ctx context.Context) {
	d.root.watchdog(ctx, func(ctx context.Context) error {
		if err := d.store.Ping(ctx); err != nil {
			return fmt.Errorf("store does not answer: %w", err)
		}
		return nil
	})
}
