-- +goose Up
-- Cluster mode (issue 13b): the leader's triggers (created at start by
-- store.EnableCapture, from the tables' current columns) copy every
-- committed row change into the outbox as a state-change event; a standby
-- applies those events in stream order and records the stream sequence it
-- applied last. One row, id 1.
CREATE TABLE replica_state (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    capture     INTEGER NOT NULL DEFAULT 0,
    applying    INTEGER NOT NULL DEFAULT 0,
    subject     TEXT NOT NULL DEFAULT '',
    origin      TEXT NOT NULL DEFAULT '',
    applied_seq INTEGER NOT NULL DEFAULT 0,
    -- origin of the last change applied (self included): who wrote last
    applied_origin TEXT NOT NULL DEFAULT '',
    applied_at  TEXT
);
INSERT INTO replica_state (id) VALUES (1);

-- +goose Down
DROP TABLE replica_state;
