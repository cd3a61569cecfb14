-- +goose Up
-- The model exchange of a remediation session (for replay), what it cost
-- (the spend ledger counts sessions as it counts runs) and, for approvals,
-- the model's reason, neutralised and capped.
ALTER TABLE remediation_sessions ADD COLUMN exchange TEXT NOT NULL DEFAULT '';
ALTER TABLE remediation_sessions ADD COLUMN cost_usd REAL NOT NULL DEFAULT 0;
ALTER TABLE approvals ADD COLUMN reason TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE approvals DROP COLUMN reason;
ALTER TABLE remediation_sessions DROP COLUMN cost_usd;
ALTER TABLE remediation_sessions DROP COLUMN exchange;
