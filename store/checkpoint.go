package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"os"
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
	sql.Register(driverName, &sqlite3.SQLiteDriver{ConnectHook: connectPragmas})
}

// fileConnector opens a store's connections to the file it opened first,
// and only to it (the driver's registered pragmas included). A file put
// in its place later (a restore, a mistake) is another database: a
// connection the pool opens then fails with a FileMissingError instead
// of reading or writing it. The connections already open go on with the
// file they opened.
type fileConnector struct {
	dsn    string
	drv    *sqlite3.SQLiteDriver
	path   string
	opened os.FileInfo // nil: no file to hold to (":memory:")
}

func newFileConnector(dsn, path string, opened os.FileInfo) *fileConnector {
	c := &fileConnector{dsn: dsn, path: path, opened: opened}
	// Checked once the file is open; an open that failed (a deleted file)
	// is told apart by Connect.
	c.drv = &sqlite3.SQLiteDriver{ConnectHook: func(conn *sqlite3.SQLiteConn) error {
		if err := c.same(); err != nil {
			return err
		}
		return connectPragmas(conn)
	}}
	return c
}

// same is nil while path is the file the store opened.
// The pools' mode=rw keeps a deleted file from being created again; this
// keeps a replaced one from being used.
func (c *fileConnector) same() error {
	if c.opened == nil {
		return nil
	}
	if fi, err := os.Stat(c.path); err != nil || !os.SameFile(c.opened, fi) {
		return &FileMissingError{Path: c.path}
	}
	return nil
}

func (c *fileConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	if err != nil && c.same() != nil {
		return nil, &FileMissingError{Path: c.path, Cause: err}
	}
	return conn, err
}

func (c *fileConnector) Driver() driver.Driver { return c.drv }

// WALLimit bounds the write-ahead log on disk while a replica applies
// the state stream (boundWAL). It leaves room for one large run commit
// (about 10 MB for 10k findings).
const WALLimit = 16 << 20

// walLimit is WALLimit, a var for tests.
var walLimit int64 = WALLimit

// boundWAL runs a TRUNCATE checkpoint when the write-ahead log is past
// walLimit: the whole log is copied into the database file and the file
// cut to zero. Passive checkpoints never finish while API readers keep
// overlapping snapshots open and changes keep coming: a replica that
// applied a long catch-up grew its log until the disk was full. The
// applier calls it between two changes, so no write of its own races the
// checkpoint: the readers of older snapshots finish, newer ones read the
// database file, and the log can be cut. A checkpoint that cannot finish
// (a full disk: the database file cannot grow) is tried again after the
// next change.
func (s *Store) boundWAL(ctx context.Context) {
	if s.path == "" || s.path == ":memory:" {
		return
	}
	if fi, err := os.Stat(s.path + "-wal"); err == nil && fi.Size() > walLimit {
		// Readers that outlast truncateWait leave the log to the next try.
		ctx, cancel := context.WithTimeout(ctx, truncateWait)
		defer cancel()
		s.ck.mu.Lock()
		defer s.ck.mu.Unlock()
		_, _ = s.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	}
}

// truncateWait bounds how long boundWAL waits for the readers of older
// snapshots (the applier waits meanwhile).
const truncateWait = time.Second

// checkpointEvery is how often the checkpointer copies committed pages
// from the write-ahead log into the database file (a passive checkpoint:
// it never blocks readers or writers, and with nothing new it does no
// I/O). A var for tests.
var checkpointEvery = time.Second

// checkpointer runs a passive checkpoint every checkpointEvery until
// stopped.
type checkpointer struct {
	// mu: one checkpoint at a time (a second one would find SQLite's
	// checkpoint lock taken and give up at once).
	mu   sync.Mutex
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
				c.mu.Lock()
				_, _ = db.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)")
				c.mu.Unlock()
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
