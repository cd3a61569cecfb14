-- +goose Up
-- Cluster mode: when the state stream whose sequences applied_seq counts
-- in was created (Unix nanoseconds; 0: not known yet). A stream created
-- again (its JetStream store lost, or deleted) starts its sequences over:
-- a replica that finds another creation time reads it from its start,
-- and the change numbers say what is new (docs/CLUSTER.md).
ALTER TABLE replica_state ADD COLUMN stream_created INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE replica_state DROP COLUMN stream_created;
