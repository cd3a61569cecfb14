-- +goose Up
-- Usage history for capacity_forecast: one compact series per resource
-- (storage usage_percent, guest disk_percent), at most one point per
-- resource per sampling interval, pruned past the retention. Not the run
-- reports: a forecast reads a few hundred numbers per resource.
CREATE TABLE usage_points (
    resource_id TEXT    NOT NULL,
    at          INTEGER NOT NULL, -- Unix seconds
    value       REAL    NOT NULL, -- percent used
    PRIMARY KEY (resource_id, at)
) WITHOUT ROWID;
CREATE INDEX usage_points_at ON usage_points(at);

-- +goose Down
DROP TABLE usage_points;
