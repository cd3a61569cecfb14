-- +goose Up
-- A remediation outcome applies only to the session patrold dispatched:
-- the investigation records the writer's epoch it was requested in (0 on
-- a single instance), and an outcome must carry the same epoch back.
ALTER TABLE investigations ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE investigations DROP COLUMN epoch;
