package daemon

import (
	"context"
	"fmt"
	"time"

	sddaemon "github.com/coreos/go-systemd/v22/daemon"
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

// notifySystemd sends a state to systemd when NOTIFY_SOCKET is set.
func (r *Root) notifySystemd(state string) {
	if ok, err := sddaemon.SdNotify(false, state); err != nil {
		r.log.Warn("sd_notify failed", "state", state, "err", err)
	} else if ok {
		r.log.Debug("sd_notify", "state", state)
	}
}

// watchdog pings systemd at half the WATCHDOG_USEC interval while healthy
// answers nil (within a quarter of it), until ctx ends: a wedged process is
// restarted.
func (r *Root) watchdog(ctx context.Context, healthy func(context.Context) error) {
	interval, err := sddaemon.SdWatchdogEnabled(false)
	if err != nil || interval <= 0 {
		return
	}
	t := time.NewTicker(interval / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			hctx, cancel := context.WithTimeout(ctx, interval/4)
			err := healthy(hctx)
			cancel()
			if err != nil {
				r.log.Error("watchdog: not pinging", "err", err)
				continue
			}
			r.notifySystemd(sddaemon.SdNotifyWatchdog)
		}
	}
}
