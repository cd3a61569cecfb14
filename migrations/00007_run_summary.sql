-- +goose Up
-- A run's summary (duration, reasons, counts): what run lists show, so a
-- list never reads the stored reports. Existing runs are summarised from
-- their reports once, here.
ALTER TABLE runs ADD COLUMN summary TEXT NOT NULL DEFAULT '{}';
UPDATE runs SET summary = json_object(
    'duration_ms', coalesce(json_extract(report, '$.duration_ms'), 0),
    'status_reasons', json(coalesce(json_extract(report, '$.status_reasons'), '[]')),
    'resources', coalesce((SELECT sum(value) FROM json_each(report, '$.resources')), 0),
    'invalid_resources', coalesce(json_array_length(report, '$.invalid_resources'), 0),
    'signals', coalesce(json_array_length(report, '$.signals'), 0),
    'findings', coalesce(json_array_length(report, '$.findings'), 0),
    'resolved', coalesce(json_array_length(report, '$.resolved'), 0),
    'errors', coalesce(json_array_length(report, '$.errors'), 0))
WHERE json_valid(report) AND report <> '{}';

-- The narrow copy of every run record that lists, the spend ledger and
-- retention read. In the runs table the columns after the report (cost,
-- summary) can only be reached by walking the report's overflow pages, so
-- a list of 50 runs of 5 MB reports would read 250 MB. Triggers keep the
-- copy in step with runs, whoever writes them.
CREATE TABLE run_list (
    id          TEXT PRIMARY KEY,
    trigger     TEXT NOT NULL,
    status      TEXT NOT NULL,
    analysis    TEXT NOT NULL,
    started_at  TEXT NOT NULL,
    finished_at TEXT,
    complete    INTEGER NOT NULL DEFAULT 0,
    cost_usd    REAL NOT NULL DEFAULT 0,
    summary     TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX run_list_started ON run_list(started_at, id);
INSERT INTO run_list (id, trigger, status, analysis, started_at, finished_at, complete, cost_usd, summary)
    SELECT id, trigger, status, analysis, started_at, finished_at, complete, cost_usd, summary FROM runs;

-- +goose StatementBegin
-- Plain statements only: a conflict clause inside a trigger is overridden
-- by the outer statement's (an upsert of runs would turn REPLACE into ABORT).
CREATE TRIGGER run_list_insert AFTER INSERT ON runs BEGIN
    DELETE FROM run_list WHERE id = NEW.id;
    INSERT INTO run_list (id, trigger, status, analysis, started_at, finished_at, complete, cost_usd, summary)
    VALUES (NEW.id, NEW.trigger, NEW.status, NEW.analysis, NEW.started_at, NEW.finished_at, NEW.complete, NEW.cost_usd, NEW.summary);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER run_list_update AFTER UPDATE ON runs BEGIN
    DELETE FROM run_list WHERE id = OLD.id AND OLD.id <> NEW.id;
    UPDATE run_list SET trigger = NEW.trigger, status = NEW.status, analysis = NEW.analysis, started_at = NEW.started_at,
        finished_at = NEW.finished_at, complete = NEW.complete, cost_usd = NEW.cost_usd, summary = NEW.summary
    WHERE id = NEW.id;
    INSERT INTO run_list (id, trigger, status, analysis, started_at, finished_at, complete, cost_usd, summary)
    SELECT NEW.id, NEW.trigger, NEW.status, NEW.analysis, NEW.started_at, NEW.finished_at, NEW.complete, NEW.cost_usd, NEW.summary
    WHERE NOT EXISTS (SELECT 1 FROM run_list WHERE id = NEW.id);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER run_list_delete AFTER DELETE ON runs BEGIN
    DELETE FROM run_list WHERE id = OLD.id;
END;
-- +goose StatementEnd

-- Finding lists walk these indexes in their sort order (most severe, then
-- newest), so a page reads its rows and no more.
CREATE INDEX findings_list_status ON findings(status,
    (CASE severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 WHEN 'watch' THEN 2 ELSE 3 END), last_seen_at DESC, id);
CREATE INDEX findings_list_all ON findings(
    (CASE severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 WHEN 'watch' THEN 2 ELSE 3 END), last_seen_at DESC, id);

-- +goose Down
DROP INDEX findings_list_all;
DROP INDEX findings_list_status;
DROP TRIGGER run_list_delete;
DROP TRIGGER run_list_update;
DROP TRIGGER run_list_insert;
DROP TABLE run_list;
ALTER TABLE runs DROP COLUMN summary;
