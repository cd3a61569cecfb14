package api

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// maxAuditField bounds caller-controlled text stored in an audit row.
const maxAuditField = 512

// auditTimeLayout is fixed-width UTC, so stored times sort as text.
const auditTimeLayout = "2006-01-02T15:04:05.000000000Z"

// AuditEvent is one audited mutating call. It never holds the token, only
// its name and TokenID.
type AuditEvent struct {
	At         time.Time `json:"at"`
	TokenName  string    `json:"token_name"`
	TokenID    string    `json:"token_id"`
	Method     string    `json:"method"`
	Path       string    `json:"path"`
	Route      string    `json:"route"`
	TargetKind string    `json:"target_kind,omitempty"`
	TargetID   string    `json:"target_id,omitempty"`
	Action     string    `json:"action,omitempty"`
	Status     int       `json:"status"`
	ErrorCode  string    `json:"error_code,omitempty"`
	RemoteAddr string    `json:"remote_addr,omitempty"`
}

// auditor appends audit events to the audit_events table and the log.
type auditor struct {
	db       *sql.DB
	log      *slog.Logger
	failures prometheus.Counter
}

func (a *API) auditEvent(r *http.Request, rt route, who identity, target string, sw *statusWriter) AuditEvent {
	action := r.PathValue("action")
	if action == "" {
		action = rt.name
	}
	return AuditEvent{
		At:         a.opts.Now().UTC(),
		TokenName:  who.name,
		TokenID:    who.id,
		Method:     r.Method,
		Path:       clip(r.URL.Path),
		Route:      rt.name,
		TargetKind: rt.target,
		TargetID:   clip(target),
		Action:     clip(action),
		Status:     sw.code(),
		ErrorCode:  string(sw.errCode),
		RemoteAddr: clip(r.RemoteAddr),
	}
}

// record logs ev and writes it. A failed write is logged and counted; the
// response has already gone out, so it cannot change the answer.
func (au *auditor) record(ctx context.Context, ev AuditEvent) {
	au.log.Info("api audit", "token_name", ev.TokenName, "token_id", ev.TokenID, "method", ev.Method,
		"path", ev.Path, "target_kind", ev.TargetKind, "target_id", ev.TargetID, "status", ev.Status, "error_code", ev.ErrorCode)
	ctx = context.WithoutCancel(ctx)
	if err := insertAudit(ctx, au.db, ev); err != nil {
		au.failures.Inc()
		au.log.Error("api audit write failed", "err", err)
	}
}

func insertAudit(ctx context.Context, db *sql.DB, ev AuditEvent) error {
	_, err := db.ExecContext(ctx, `INSERT INTO audit_events
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
func AuditEvents(ctx context.Context, db *sql.DB, limit int) ([]AuditEvent, error) {
	rows, err := db.QueryContext(ctx, `SELECT at, token_name, token_id, method, path, route, target_kind,
		target_id, action, status, error_code, remote_addr FROM audit_events ORDER BY seq DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("list audit events: %w", err)
	}
	defer rows.Close()
	var out []AuditEvent
	for rows.Next() {
		var ev AuditEvent
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
func PruneAudit(ctx context.Context, db *sql.DB, before time.Time) (int64, error) {
	res, err := db.ExecContext(ctx, "DELETE FROM audit_events WHERE at < ?", before.UTC().Format(auditTimeLayout))
	if err != nil {
		return 0, fmt.Errorf("prune audit events: %w", err)
	}
	return res.RowsAffected()
}

func clip(s string) string {
	if len(s) > maxAuditField {
		return s[:maxAuditField]
	}
	return s
}
