-- +goose Up
-- The id of the active parent finding that explains a finding
-- (inhibition, docs/FINDINGS.md); '' when none does. The partial index
-- serves the sweep (inhibitions whose parent resolved) and the lookup of
-- a parent's children.
ALTER TABLE findings ADD COLUMN inhibited_by TEXT NOT NULL DEFAULT '';
CREATE INDEX findings_inhibited_by ON findings(inhibited_by) WHERE status = 'active' AND inhibited_by != '';

-- +goose Down
DROP INDEX findings_inhibited_by;
ALTER TABLE findings DROP COLUMN inhibited_by;
