-- +goose Up
-- Cluster mode fencing: every state change carries the epoch of the writer
-- that captured it (the leader lease's revision when that writer took the
-- lease; a later holder's is always higher). A new writer's first change
-- is an epoch marker; a replica ignores changes of an epoch below the
-- highest it applied, so a deposed writer that still publishes changes no
-- replica's rows.
ALTER TABLE replica_state ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE replica_state ADD COLUMN applied_epoch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE replica_state ADD COLUMN fenced INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE replica_state DROP COLUMN fenced;
ALTER TABLE replica_state DROP COLUMN applied_epoch;
ALTER TABLE replica_state DROP COLUMN epoch;
