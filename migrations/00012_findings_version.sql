-- +goose Up
-- The findings version: a counter every change to the findings table moves
-- (on this instance, whoever makes it: a run, an operator action, an
-- investigation, retention, a replicated change). A run that kept the
-- active findings in memory after its commit uses them for the next run
-- only while the version is still the one it left (store/active_cache.go),
-- instead of reading every active finding whole again.
--
-- The triggers count inserts, deletes and updates of any column but the
-- three a re-detection moves (last_seen_at, last_run_id, times_raised):
-- the touch statement of a run, and of a replica applying one, moves the
-- version itself, once per statement, not once per row.
CREATE TABLE findings_version (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    n  INTEGER NOT NULL
);
INSERT INTO findings_version (id, n) VALUES (1, 0);

-- +goose StatementBegin
CREATE TRIGGER findings_version_insert AFTER INSERT ON findings BEGIN
    UPDATE findings_version SET n = n + 1 WHERE id = 1;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER findings_version_delete AFTER DELETE ON findings BEGIN
    UPDATE findings_version SET n = n + 1 WHERE id = 1;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER findings_version_update AFTER UPDATE OF
    id, key, resource_id, resource_kind, resource_name, category, severity, source,
    title, description, recommendation, evidence, status, detected_at, resolved_at,
    resolve_reason, resolve_note, regression_count, acknowledged_at,
    snoozed_until, dismissed_reason, dismissed_at, suppressed, seen_while_suppressed,
    investigation_attempts, investigation_status, investigation_started_at, last_investigation_at,
    last_outcome, investigation_session_id, fix_summary, previous_fix_summary, last_published_at,
    last_published_severity, last_published_event, transitions, flapping, resource_tags, silenced,
    investigation_attempt
ON findings BEGIN
    UPDATE findings_version SET n = n + 1 WHERE id = 1;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER findings_version_update;
DROP TRIGGER findings_version_delete;
DROP TRIGGER findings_version_insert;
DROP TABLE findings_version;
