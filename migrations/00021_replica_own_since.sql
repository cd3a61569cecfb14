-- +goose Up
-- Cluster mode: the first writer epoch whose changes of this instance's
-- own its rows hold. A re-seed replaces the rows, so changes of its own
-- still on their way from before are applied like any writer's: the
-- re-seed raises own_since above every epoch this database captured in,
-- and the next tenure starts at it (docs/CLUSTER.md). 1: every epoch.
ALTER TABLE replica_state ADD COLUMN own_since INTEGER NOT NULL DEFAULT 1;

-- +goose Down
ALTER TABLE replica_state DROP COLUMN own_since;
