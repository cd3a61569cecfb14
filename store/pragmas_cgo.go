//go:build cgo

package store

import (
	"fmt"

	"github.com/mattn/go-sqlite3"
)

// connectPragmas runs on every connection the store opens.
// journal_size_limit: a log reset after a checkpoint is cut back to
// WALLimit instead of keeping its largest size on disk.
func connectPragmas(c *sqlite3.SQLiteConn) error {
	_, err := c.Exec(fmt.Sprintf("PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = %d", WALLimit), nil)
	return err
}
