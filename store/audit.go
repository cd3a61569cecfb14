package store

import (
	"context"
	"fmt"
	"time"

	"github.com/patrold/patrold/store/records"
)

// auditTimeLayout is fixed-width UTC, so stored audit times sort as text.
const auditTimeLayout = "2006-01-02T15:04:05.000000000Z"

// InsertAudit appends one audit event.
func (s *Store) InsertAudit(ctx context.Context, ev records.AuditEvent) error {
	_, err := s.exec(ctx, `INSERT INTO audit_events
		(at, token_name, token_id, method, path, route, target_kind, target_id, action, status, error_code, remote_addr)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`,
		ev.At.UTC().Format(auditTimeLayout), ev.TokenName, ev.TokenID, ev.Method, ev.Path, ev.Route,
		ev.TargetKind, ev.TargetID, ev.Action, ev.Status, ev.ErrorCode, ev.RemoteAddr)
	if err != nil {
		return fmt.Errorf("insert audit event: %w", err)
	}
	return nil
}

// AuditEvents returns the newest audit events first, at most limit.
func (s *Store) AuditEvents(ctx context.Context, limit int) ([]records.AuditEvent, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT at, token_name, token_id, method, path, route, target_kind,
		target_id, action, status, error_code, remote_addr FROM audit_events ORDER BY seq DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("list audit events: %w", err)
	}
	defer rows.Close()
	var out []records.AuditEvent
	for rows.Next() {
		var ev records.AuditEvent
		var at string
		if err := rows.Scan(&at, &ev.TokenName, &ev.TokenID, &ev.Method, &ev.Path, &ev.Route, &ev.TargetKind,
			&ev.TargetID, &ev.Action, &ev.Status, &ev.ErrorCode, &ev.RemoteAddr); err != nil {
			return nil, err
		}
		ev.At, _ = time.Parse(auditTimeLayout, at)
		out = append(out, ev)
	}
	return out, rows.Err()
}

// PruneAudit deletes audit events older than before and returns how many.
func (s *Store) PruneAudit(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.exec(ctx, "DELETE FROM audit_events WHERE at < ?", before.UTC().Format(auditTimeLayout))
	if err != nil {
		return 0, fmt.Errorf("prune audit events: %w", err)
	}
	return res.RowsAffected()
}
