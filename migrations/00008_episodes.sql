-- +goose Up
-- Remediation episodes: investigation_attempts counts the attempts of the
-- current episode (reset when a finding reopens; the gate's max_attempts
-- reads it), while investigation_attempt is the number on the wire of the
-- current or last request, unique per finding across episodes, so a
-- reopened finding's requests, sessions and outcomes never reuse an earlier
-- episode's. Until now both were the same number.
ALTER TABLE findings ADD COLUMN investigation_attempt INTEGER NOT NULL DEFAULT 0;
UPDATE findings SET investigation_attempt = investigation_attempts;
-- The episode (the finding's regression_count when it was requested).
ALTER TABLE investigations ADD COLUMN episode INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE investigations DROP COLUMN episode;
ALTER TABLE findings DROP COLUMN investigation_attempt;
