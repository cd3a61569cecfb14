package daemon

import (
	"context"
	"time"

	sddaemon "github.com/coreos/go-systemd/v22/daemon"
)

// notify sends a state to systemd when NOTIFY_SOCKET is set; otherwise it
// does nothing.
func (d *Daemon) notify(state string) {
	if ok, err := sddaemon.SdNotify(false, state); err != nil {
		d.log.Warn("sd_notify failed", "state", state, "err", err)
	} else if ok {
		d.log.Debug("sd_notify", "state", state)
	}
}

// watchdog pings systemd at half the WATCHDOG_USEC interval until ctx ends.
// It pings only while the store answers, so a wedged daemon is restarted.
func (d *Daemon) watchdog(ctx context.Context) {
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
			pctx, cancel := context.WithTimeout(ctx, interval/4)
			err := d.store.Ping(pctx)
			cancel()
			if err == nil {
				d.notify(sddaemon.SdNotifyWatchdog)
			} else {
				d.log.Error("watchdog: store does not answer; not pinging", "err", err)
			}
		}
	}
}
