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
-- Every captured change is numbered without a gap across writers
-- (changes: the last number this database captured; applied_n: the last
-- one it applied), so a replica that would skip a change (one aged out of
-- the stream before it joined) notices instead of diverging.
ALTER TABLE replica_state ADD COLUMN changes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE replica_state ADD COLUMN applied_n INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE replica_state DROP COLUMN applied_n;
ALTER TABLE replica_state DROP COLUMN changes;
ALTER TABLE replica_state DROP COLUMN fenced;
ALTER TABLE replica_state DROP COLUMN applied_epoch;
ALTER TABLE replica_state DROP COLUMN epoch;
