package store

import (
	"context"
	"database/sql"
	"fmt"
)

// KeptCopies returns the copies a source kept under scope, by key
// (snapshot/proxmox's kept guest reads).
func (s *Store) KeptCopies(ctx context.Context, scope string) (map[string][]byte, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT key, data FROM source_copies WHERE scope = ?", scope)
	if err != nil {
		return nil, fmt.Errorf("kept copies: %w", err)
	}
	defer rows.Close()
	out := map[string][]byte{}
	for rows.Next() {
		var k string
		var v []byte
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("kept copies: %w", err)
		}
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("kept copies: %w", err)
	}
	return out, nil
}

// KeepCopies saves a source's copies under scope in one transaction; a
// nil value deletes its key.
func (s *Store) KeepCopies(ctx context.Context, scope string, copies map[string][]byte) error {
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		for k, v := range copies {
			var err error
			if v == nil {
				_, err = tx.ExecContext(ctx, "DELETE FROM source_copies WHERE scope = ? AND key = ?", scope, k)
			} else {
				_, err = tx.ExecContext(ctx, "INSERT INTO source_copies (scope, key, data) VALUES (?, ?, ?) "+
					"ON CONFLICT (scope, key) DO UPDATE SET data = excluded.data", scope, k, string(v))
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("keep copies: %w", err)
	}
	return nil
}
