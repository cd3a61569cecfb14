package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/patrold/patrold/api"
	"github.com/patrold/patrold/contracts"
)

// dbWatchEvery is how often the daemon looks at its database file.
const dbWatchEvery = time.Second

// storeWritable is nil while the database file is the one the daemon
// opened; else the reason mutations are refused (deleted or replaced).
func (d *Daemon) storeWritable() error {
	if d.store == nil {
		return errors.New("store not open")
	}
	return d.store.FileCheck()
}

// guardStore answers every request that may write (anything but GET,
// HEAD and OPTIONS) 503 not_ready while the database file is deleted or
// replaced: a 200 would name a change written to a file the next start
// does not open.
//
// A diverged replica (cluster mode) answers every API request but the
// status 503 too: its rows include changes no other instance has.
func (d *Daemon) guardStore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := d.cluster.Diverged(); err != nil && strings.HasPrefix(r.URL.Path, "/api/") && r.URL.Path != "/api/v1/status" {
			api.WriteNotReady(w, err.Error())
			return
		}
		if !api.ReadOnly(r.Method) {
			if err := d.storeWritable(); err != nil {
				d.dbLost(err)
				api.WriteNotReady(w, fmt.Sprintf("database file gone, nothing is written: %v (restore it and restart patrold)", err))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// watchDB logs, once and at ERROR, the moment the database file is
// deleted or replaced, without waiting for a request to notice.
func (d *Daemon) watchDB(ctx context.Context) {
	tick := time.NewTicker(dbWatchEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if err := d.storeWritable(); err != nil {
				d.dbLost(err)
			}
		}
	}
}

// dbLost logs the loss of the database file once.
func (d *Daemon) dbLost(err error) {
	d.dbLostOnce.Do(func() {
		d.log.Error("DATABASE FILE DELETED OR REPLACED under the running daemon: mutations and runs are refused (503) and /readyz is unready; "+
			"restore the file from a backup (or patrold db seed in a cluster) and restart patrold", "db", d.store.Path(), "err", err)
	})
}

// checkHistory refuses to start a single instance on a new or empty
// database while the events stream already holds finding events this
// source published. The first run would announce every finding opened a
// second time. Acknowledgements and history would be gone without a word.
// created is whether this start created the database file.
func (d *Daemon) checkHistory(ctx context.Context, created bool) error {
	if d.opts.AcceptNewDatabase || d.root.Leadership().Clustered() {
		return nil
	}
	if !created {
		runs, err := d.store.Runs(ctx, 1)
		if err != nil {
			return err
		}
		if len(runs) > 0 {
			return nil
		}
	}
	n, err := d.msg.findingHistory(ctx)
	if err != nil {
		d.log.Warn("new database not checked against the events stream (stream unreadable)", "db", d.store.Path(), "err", err)
		return nil
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("database %s is new or holds no run, but stream %s already holds %d finding events from source %q: "+
		"starting on it would announce every finding opened a second time. Restore the database from a backup, "+
		"or start with --accept-new-database to begin a new history on purpose: %w", d.store.Path(), d.msg.bus.StreamName(), n, d.msg.bus.Source(), ErrNewDatabase)
}

// ErrNewDatabase: a new or empty database beside an events stream that
// already has history.
var ErrNewDatabase = errors.New("new database beside an existing history")

// findingHistory counts the finding events on the stream when the last
// of them was published by this source (0 when none, or another source
// published it: a stream shared by several instances).
func (m *messaging) findingHistory(ctx context.Context) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n, last, err := m.bus.SubjectHistory(ctx, contracts.FullSubject(m.bus.Prefix(), contracts.SubjectFindingsAll))
	if err != nil || n == 0 {
		return 0, err
	}
	var env struct {
		Source string `json:"source"`
	}
	if err := json.Unmarshal(last, &env); err != nil || env.Source != m.bus.Source() {
		return 0, nil
	}
	return n, nil
}
