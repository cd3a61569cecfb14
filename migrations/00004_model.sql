-- +goose Up
-- The model exchange of a run (for replay) and what it cost (the spend
-- ledger that per-day and per-30-day budgets read).
ALTER TABLE runs ADD COLUMN exchange TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN cost_usd REAL NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE runs DROP COLUMN cost_usd;
ALTER TABLE runs DROP COLUMN exchange;
