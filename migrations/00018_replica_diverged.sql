-- +goose Up
-- Cluster mode: a restarted writer that finds its unsent state changes
-- superseded by a newer writer drops them, but its own rows still hold
-- them. diverged records that (JSON: when, the last writer, the rows
-- dropped) until the database is re-seeded from a caught-up instance;
-- '' when the database holds nothing the stream lacks (docs/CLUSTER.md).
ALTER TABLE replica_state ADD COLUMN diverged TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE replica_state DROP COLUMN diverged;
