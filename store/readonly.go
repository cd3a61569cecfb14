package store

import (
	"context"
	"database/sql"
	"net/url"
)

// FindingBrief is one finding as a shell completion offers it.
type FindingBrief struct {
	ID, Status, ResourceID, Title string
}

// RecentFindings lists up to limit findings whose id starts with prefix,
// active ones first, then the newest detected first, from the database at path opened read-only.
// It never creates, migrates, locks or writes the file: a shell
// completion runs beside the daemon that owns it.
func RecentFindings(ctx context.Context, path, prefix string, limit int) ([]FindingBrief, error) {
	q := url.Values{"mode": {"ro"}, "_busy_timeout": {"1000"}}
	db, err := sql.Open("sqlite3", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT id, status, resource_id, title FROM findings
		WHERE substr(id, 1, length(?1)) = ?1 ORDER BY status != 'active', detected_at DESC, id LIMIT ?2`, prefix, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []FindingBrief
	for rows.Next() {
		var b FindingBrief
		if err := rows.Scan(&b.ID, &b.Status, &b.ResourceID, &b.Title); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}
