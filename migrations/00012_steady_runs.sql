-- +goose Up
-- Steady runs. A run re-detects most active findings unchanged; it used to
-- rewrite each one's whole row (about 1 KB, and its entries in both list
-- indexes, which held last_seen_at) to move three values. Those three now
-- live in a narrow table of their own, finding_seen, one row per finding,
-- and the finding lists sort by severity and then by when a finding was
-- first detected (newest first), which a re-detection does not move.
CREATE TABLE finding_seen (
    id           TEXT PRIMARY KEY REFERENCES findings(id) ON DELETE CASCADE,
    last_seen_at TEXT NOT NULL,
    last_run_id  TEXT NOT NULL DEFAULT '',
    times_raised INTEGER NOT NULL DEFAULT 0
);
INSERT INTO finding_seen (id, last_seen_at, last_run_id, times_raised)
    SELECT id, last_seen_at, last_run_id, times_raised FROM findings;
-- Cluster capture triggers name every column; EnableCapture makes them
-- again from the schema when this instance next writes.
DROP TRIGGER IF EXISTS replica_findings_ins;
DROP TRIGGER IF EXISTS replica_findings_upd;
DROP TRIGGER IF EXISTS replica_findings_del;
DROP INDEX findings_list_status;
DROP INDEX findings_list_all;
ALTER TABLE findings DROP COLUMN last_seen_at;
ALTER TABLE findings DROP COLUMN last_run_id;
ALTER TABLE findings DROP COLUMN times_raised;
CREATE INDEX findings_list_status ON findings(status,
    (CASE severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 WHEN 'watch' THEN 2 ELSE 3 END), detected_at DESC, id);
CREATE INDEX findings_list_all ON findings(
    (CASE severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 WHEN 'watch' THEN 2 ELSE 3 END), detected_at DESC, id);
-- The sweep after every run looks for few rows among many: partial
-- indexes hold only the rows each of its conditions can match.
CREATE INDEX findings_sweep_resolved ON findings(resolved_at) WHERE status = 'resolved';
CREATE INDEX findings_sweep_dismissed ON findings(id) WHERE dismissed_reason != '';
CREATE INDEX findings_sweep_silenced ON findings(id) WHERE status = 'active' AND silenced = 1;
CREATE INDEX findings_sweep_remind ON findings(dismissed_at) WHERE status = 'active' AND dismissed_reason = 'will_fix_later';
-- And the gate after every run looks for the findings under investigation.
CREATE INDEX findings_investigating ON findings(id) WHERE investigation_status = 'running';

-- The findings version: a counter every change to the findings table moves
-- (on this instance, whoever makes it: a run, an operator action, an
-- investigation, retention, a replicated change). A run that kept the
-- active findings in memory after its commit uses them for the next run
-- only while the version is still the one it left (store/active_cache.go),
-- instead of reading every active finding whole again.
--
-- The triggers count inserts, deletes and updates of findings rows. The
-- three values a re-detection moves are in finding_seen, which every write
-- of a finding's row writes too; the touch statement (of a run, and of a
-- replica applying one) updates only finding_seen and moves the version
-- itself, once per statement, not once per row.
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
CREATE TRIGGER findings_version_update AFTER UPDATE ON findings BEGIN
    UPDATE findings_version SET n = n + 1 WHERE id = 1;
END;
-- +goose StatementEnd

-- +goose Down
DROP INDEX findings_investigating;
DROP INDEX findings_sweep_remind;
DROP INDEX findings_sweep_silenced;
DROP INDEX findings_sweep_dismissed;
DROP INDEX findings_sweep_resolved;
DROP TRIGGER findings_version_update;
DROP TRIGGER findings_version_delete;
DROP TRIGGER findings_version_insert;
DROP TABLE findings_version;
DROP INDEX findings_list_all;
DROP INDEX findings_list_status;
DROP TRIGGER IF EXISTS replica_findings_ins;
DROP TRIGGER IF EXISTS replica_findings_upd;
DROP TRIGGER IF EXISTS replica_findings_del;
ALTER TABLE findings ADD COLUMN last_seen_at TEXT NOT NULL DEFAULT '';
ALTER TABLE findings ADD COLUMN last_run_id TEXT NOT NULL DEFAULT '';
ALTER TABLE findings ADD COLUMN times_raised INTEGER NOT NULL DEFAULT 0;
UPDATE findings SET (last_seen_at, last_run_id, times_raised) =
    (SELECT last_seen_at, last_run_id, times_raised FROM finding_seen WHERE finding_seen.id = findings.id);
DROP TABLE finding_seen;
CREATE INDEX findings_list_status ON findings(status,
    (CASE severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 WHEN 'watch' THEN 2 ELSE 3 END), last_seen_at DESC, id);
CREATE INDEX findings_list_all ON findings(
    (CASE severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 WHEN 'watch' THEN 2 ELSE 3 END), last_seen_at DESC, id);
