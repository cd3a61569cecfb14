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

-- +goose Down
ALTER TABLE runs DROP COLUMN summary;
