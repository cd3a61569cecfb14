-- +goose Up
ALTER TABLE findings ADD COLUMN resource_tags TEXT NOT NULL DEFAULT '[]';
ALTER TABLE findings ADD COLUMN silenced INTEGER NOT NULL DEFAULT 0;

CREATE TABLE silences (
    id         TEXT PRIMARY KEY,
    matchers   TEXT NOT NULL,
    comment    TEXT NOT NULL,
    author     TEXT NOT NULL,
    starts_at  TEXT NOT NULL,
    ends_at    TEXT NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE investigations (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    finding_id  TEXT NOT NULL REFERENCES findings(id) ON DELETE CASCADE,
    attempt     INTEGER NOT NULL,
    session_id  TEXT NOT NULL DEFAULT '',
    started_at  TEXT NOT NULL,
    ended_at    TEXT,
    outcome     TEXT NOT NULL DEFAULT '',
    summary     TEXT NOT NULL DEFAULT ''
);
CREATE INDEX investigations_finding ON investigations(finding_id, attempt);

-- +goose Down
DROP TABLE investigations;
DROP TABLE silences;
ALTER TABLE findings DROP COLUMN silenced;
ALTER TABLE findings DROP COLUMN resource_tags;
