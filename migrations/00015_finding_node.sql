-- +goose Up
-- The node a finding's resource is on (its own name for a node), for
-- grouping by host in Alertmanager and in events; '' when it has none.
ALTER TABLE findings ADD COLUMN resource_node TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE findings DROP COLUMN resource_node;
