-- +goose Up
-- Remediation sessions (one row per assistant session, its transcript as
-- the JSON of docs/ASSISTANT.md#transcript) and the write approvals they wait for. An approval
-- row carries everything needed to resume its session exactly where it
-- stopped: the state machine snapshot, the transcript so far and, for a
-- model-driven session, the conversation.
CREATE TABLE remediation_sessions (
    id          TEXT PRIMARY KEY,
    finding_id  TEXT NOT NULL,
    attempt     INTEGER NOT NULL,
    driver      TEXT NOT NULL,
    outcome     TEXT NOT NULL DEFAULT '',
    summary     TEXT NOT NULL DEFAULT '',
    started_at  TEXT NOT NULL,
    finished_at TEXT,
    transcript  TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX remediation_sessions_finding ON remediation_sessions(finding_id, attempt);

CREATE TABLE approvals (
    id          TEXT PRIMARY KEY,
    finding_id  TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    attempt     INTEGER NOT NULL,
    resource_id TEXT NOT NULL DEFAULT '',
    action      TEXT NOT NULL,
    args        TEXT NOT NULL DEFAULT '{}',
    risk        TEXT NOT NULL,
    state       TEXT NOT NULL CHECK (state IN ('pending', 'approved', 'denied', 'expired')),
    created_at  TEXT NOT NULL,
    expires_at  TEXT NOT NULL,
    decided_at  TEXT,
    decided_by  TEXT NOT NULL DEFAULT '',
    driver      TEXT NOT NULL,
    autonomy    TEXT NOT NULL,
    started_at  TEXT NOT NULL,
    turns       INTEGER NOT NULL DEFAULT 0,
    fsm         TEXT NOT NULL,
    transcript  TEXT NOT NULL,
    messages    TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX approvals_state ON approvals(state, expires_at);
-- A session waits for at most one approval at a time.
CREATE UNIQUE INDEX approvals_pending_session ON approvals(session_id) WHERE state = 'pending';

-- +goose Down
DROP TABLE approvals;
DROP TABLE remediation_sessions;
