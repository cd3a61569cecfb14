package store

import (
	"context"
	"database/sql"
	"sync"
	"time"

	"github.com/mattn/go-sqlite3"
)

// driverName is go-sqlite3 with SQLite's automatic checkpoint switched off
// on every connection the store opens. By default the commit that takes
// the write-ahead log past 1000 pages also copies the whole log into the
// database file and syncs both before it returns: a 10 MB commit (10k
// outbox events) waited about 35 ms for that. The store's checkpointer
// does the same work in the background instead.
const driverName = "sqlite3_patrold"

func init() {
	sql.Register(driverName, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		_, err := c.Exec("PRAGMA wal_autocheckpoint = 0", nil)
		return err
	}})
}

// checkpointEvery is how often the checkpointer copies committed pages
// from the write-ahead log into the database file (a passive checkpoint:
// it never blocks readers or writers, and with nothing new it does no
// I/O). A var for tests.
var checkpointEvery = time.Second

// checkpointer runs a passive checkpoint every checkpointEvery until
// stopped.
type checkpointer struct {
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

func startCheckpointer(db *sql.DB) *checkpointer {
	c := &checkpointer{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		t := time.NewTicker(checkpointEvery)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
				// A checkpoint that cannot finish (a reader holds old
				// pages) leaves the rest for the next one.
				_, _ = db.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)")
			}
		}
	}()
	return c
}

// close stops the checkpointer and waits for it (closing the database
// then checkpoints what is left).
func (c *checkpointer) close() {
	c.once.Do(func() { close(c.stop) })
	<-c.done
}
