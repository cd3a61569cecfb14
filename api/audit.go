package api

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/store/records"
)

// maxAuditField bounds caller-controlled text stored in an audit row.
const maxAuditField = 512

// AuditEvent is one audited mutating call (stored by the store).
type AuditEvent = records.AuditEvent

// auditor appends audit events to the audit_events table and the log.
type auditor struct {
	store    auditStore
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
	if err := au.store.InsertAudit(ctx, ev); err != nil {
		au.failures.Inc()
		au.log.Error("api audit write failed", "err", err)
	}
}

// auditStore is where audit events are appended.
type auditStore interface {
	InsertAudit(ctx context.Context, ev AuditEvent) error
}

func clip(s string) string {
	if len(s) > maxAuditField {
		return s[:maxAuditField]
	}
	return s
}
