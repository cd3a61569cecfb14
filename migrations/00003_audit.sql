-- +goose Up
-- One row per mutating API call made with a known token (successful or
-- not). The token itself is never stored: token_id is the first 8 hex
-- characters of its SHA-256.
CREATE TABLE audit_events (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    at          TEXT NOT NULL,
    token_name  TEXT NOT NULL DEFAULT '',
    token_id    TEXT NOT NULL DEFAULT '',
    method      TEXT NOT NULL,
    path        TEXT NOT NULL,
    route       TEXT NOT NULL,
    target_kind TEXT NOT NULL DEFAULT '',
    target_id   TEXT NOT NULL DEFAULT '',
    action      TEXT NOT NULL DEFAULT '',
    status      INTEGER NOT NULL,
    error_code  TEXT NOT NULL DEFAULT '',
    remote_addr TEXT NOT NULL DEFAULT ''
);
CREATE INDEX audit_events_at ON audit_events(at);
CREATE INDEX audit_events_target ON audit_events(target_kind, target_id);

-- +goose Down
DROP TABLE audit_events;
