-- +goose Up
CREATE TABLE findings (
    id                      TEXT PRIMARY KEY,
    key                     TEXT NOT NULL,
    resource_id             TEXT NOT NULL,
    resource_kind           TEXT NOT NULL DEFAULT '',
    resource_name           TEXT NOT NULL DEFAULT '',
    category                TEXT NOT NULL,
    severity                TEXT NOT NULL,
    source                  TEXT NOT NULL,
    title                   TEXT NOT NULL DEFAULT '',
    description             TEXT NOT NULL DEFAULT '',
    recommendation          TEXT NOT NULL DEFAULT '',
    evidence                TEXT NOT NULL DEFAULT '',
    status                  TEXT NOT NULL,
    detected_at             TEXT NOT NULL,
    last_seen_at            TEXT NOT NULL,
    resolved_at             TEXT,
    resolve_reason          TEXT NOT NULL DEFAULT '',
    resolve_note            TEXT NOT NULL DEFAULT '',
    times_raised            INTEGER NOT NULL DEFAULT 0,
    regression_count        INTEGER NOT NULL DEFAULT 0,
    last_run_id             TEXT NOT NULL DEFAULT '',
    acknowledged_at         TEXT,
    snoozed_until           TEXT,
    dismissed_reason        TEXT NOT NULL DEFAULT '',
    dismissed_at            TEXT,
    suppressed              INTEGER NOT NULL DEFAULT 0,
    seen_while_suppressed   INTEGER NOT NULL DEFAULT 0,
    investigation_attempts  INTEGER NOT NULL DEFAULT 0,
    investigation_status    TEXT NOT NULL DEFAULT '',
    investigation_started_at TEXT,
    last_investigation_at   TEXT,
    last_outcome            TEXT NOT NULL DEFAULT '',
    investigation_session_id TEXT NOT NULL DEFAULT '',
    fix_summary             TEXT NOT NULL DEFAULT '',
    previous_fix_summary    TEXT NOT NULL DEFAULT '',
    last_published_at       TEXT,
    last_published_severity TEXT NOT NULL DEFAULT '',
    last_published_event    TEXT NOT NULL DEFAULT '',
    transitions             TEXT NOT NULL DEFAULT '[]',
    flapping                INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX findings_status ON findings(status);
CREATE INDEX findings_resource ON findings(resource_id, category);

CREATE TABLE finding_events (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    finding_id TEXT NOT NULL REFERENCES findings(id) ON DELETE CASCADE,
    at         TEXT NOT NULL,
    kind       TEXT NOT NULL,
    detail     TEXT NOT NULL DEFAULT '',
    run_id     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX finding_events_finding ON finding_events(finding_id, seq);

CREATE TABLE runs (
    id          TEXT PRIMARY KEY,
    trigger     TEXT NOT NULL,
    status      TEXT NOT NULL,
    analysis    TEXT NOT NULL,
    started_at  TEXT NOT NULL,
    finished_at TEXT,
    complete    INTEGER NOT NULL DEFAULT 0,
    report      TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX runs_started ON runs(started_at);

CREATE TABLE outbox (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    id          TEXT NOT NULL UNIQUE,
    subject     TEXT NOT NULL,
    type        TEXT NOT NULL,
    resource_id TEXT NOT NULL DEFAULT '',
    time        TEXT NOT NULL,
    data        BLOB NOT NULL,
    sent_at     TEXT
);
CREATE INDEX outbox_pending ON outbox(sent_at, seq);

CREATE TABLE suppressions (
    resource_id TEXT NOT NULL,
    category    TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    finding_id  TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (resource_id, category)
);

-- +goose Down
DROP TABLE suppressions;
DROP TABLE outbox;
DROP TABLE runs;
DROP TABLE finding_events;
DROP TABLE findings;
