-- +goose Up
-- The finding lists put the net's findings first: deterministic before
-- model, then by severity, then newest first. A run full of model findings
-- can no longer push the net's findings off the first page. The list
-- indexes follow the new order.
DROP INDEX findings_list_status;
DROP INDEX findings_list_all;
CREATE INDEX findings_list_status ON findings(status,
    (CASE WHEN source = 'model' THEN 4 ELSE 0 END + CASE severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 WHEN 'watch' THEN 2 ELSE 3 END), detected_at DESC, id);
CREATE INDEX findings_list_all ON findings(
    (CASE WHEN source = 'model' THEN 4 ELSE 0 END + CASE severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 WHEN 'watch' THEN 2 ELSE 3 END), detected_at DESC, id);

-- +goose Down
DROP INDEX findings_list_status;
DROP INDEX findings_list_all;
CREATE INDEX findings_list_status ON findings(status,
    (CASE severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 WHEN 'watch' THEN 2 ELSE 3 END), detected_at DESC, id);
CREATE INDEX findings_list_all ON findings(
    (CASE severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 WHEN 'watch' THEN 2 ELSE 3 END), detected_at DESC, id);
