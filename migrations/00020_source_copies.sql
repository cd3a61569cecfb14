-- +goose Up
-- What a source keeps between runs and restarts: the Proxmox source's
-- guest configs, agent answers and snapshot lists, each a JSON document
-- by scope (the cluster's URL) and key ("qemu/100/config"). A restart
-- then reads again only what changed (docs/SOURCES.md). Not replicated:
-- the copies are each instance's own, like its usage history.
CREATE TABLE source_copies (
    scope TEXT NOT NULL,
    key   TEXT NOT NULL,
    data  TEXT NOT NULL,
    PRIMARY KEY (scope, key)
);

-- +goose Down
DROP TABLE source_copies;
