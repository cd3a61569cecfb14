-- +goose Up
-- What each usage series is, kept by triggers beside its points: the
-- number of points, the first and newest time, and a version. Every
-- insert, delete and update of a point moves a counter of the whole
-- history (usage_version) and gives its series the new count as its
-- version, so a series never has a version twice, even deleted and
-- recorded again. A forecast asks for the series that can be judged and
-- their digests here, one row a resource, instead of counting every
-- stored point (a month is 180 a resource), and fits again only the
-- series whose version moved (docs/PATROL_ARCHITECTURE.md, Capacity
-- forecast).
CREATE TABLE usage_version (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    n  INTEGER NOT NULL
);
INSERT INTO usage_version (id, n) VALUES (1, 1);
CREATE TABLE usage_series (
    resource_id TEXT    PRIMARY KEY,
    points      INTEGER NOT NULL,
    first_at    INTEGER NOT NULL, -- Unix seconds
    last_at     INTEGER NOT NULL,
    version     INTEGER NOT NULL
) WITHOUT ROWID;
-- The readiness query finds its candidates on first_at and reads the rest
-- from the index alone.
CREATE INDEX usage_series_first ON usage_series(first_at, points, last_at, version);
INSERT INTO usage_series (resource_id, points, first_at, last_at, version)
    SELECT resource_id, count(*), min(at), max(at), 1 FROM usage_points GROUP BY resource_id;

-- +goose StatementBegin
CREATE TRIGGER usage_series_insert AFTER INSERT ON usage_points BEGIN
    UPDATE usage_version SET n = n + 1 WHERE id = 1;
    INSERT INTO usage_series (resource_id, points, first_at, last_at, version)
        VALUES (new.resource_id, 1, new.at, new.at, (SELECT n FROM usage_version WHERE id = 1))
        ON CONFLICT (resource_id) DO UPDATE SET points = points + 1, first_at = min(first_at, excluded.first_at),
            last_at = max(last_at, excluded.last_at), version = excluded.version;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER usage_series_delete AFTER DELETE ON usage_points BEGIN
    UPDATE usage_version SET n = n + 1 WHERE id = 1;
    UPDATE usage_series SET points = points - 1, version = (SELECT n FROM usage_version WHERE id = 1),
        first_at = coalesce((SELECT min(at) FROM usage_points WHERE resource_id = old.resource_id), first_at),
        last_at = coalesce((SELECT max(at) FROM usage_points WHERE resource_id = old.resource_id), last_at)
        WHERE resource_id = old.resource_id;
    DELETE FROM usage_series WHERE resource_id = old.resource_id AND points <= 0;
END;
-- +goose StatementEnd

-- An update is the old point deleted and the new one inserted.
-- +goose StatementBegin
CREATE TRIGGER usage_series_update AFTER UPDATE ON usage_points BEGIN
    UPDATE usage_version SET n = n + 1 WHERE id = 1;
    UPDATE usage_series SET points = points - 1, version = (SELECT n FROM usage_version WHERE id = 1),
        first_at = coalesce((SELECT min(at) FROM usage_points WHERE resource_id = old.resource_id), first_at),
        last_at = coalesce((SELECT max(at) FROM usage_points WHERE resource_id = old.resource_id), last_at)
        WHERE resource_id = old.resource_id;
    DELETE FROM usage_series WHERE resource_id = old.resource_id AND points <= 0;
    INSERT INTO usage_series (resource_id, points, first_at, last_at, version)
        VALUES (new.resource_id, 1, new.at, new.at, (SELECT n FROM usage_version WHERE id = 1))
        ON CONFLICT (resource_id) DO UPDATE SET points = points + 1,
            first_at = (SELECT min(at) FROM usage_points WHERE resource_id = new.resource_id),
            last_at = (SELECT max(at) FROM usage_points WHERE resource_id = new.resource_id), version = excluded.version;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER usage_series_update;
DROP TRIGGER usage_series_delete;
DROP TRIGGER usage_series_insert;
DROP TABLE usage_series;
DROP TABLE usage_version;
