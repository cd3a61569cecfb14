-- +goose Up
-- The outbox's sent mark leaves the event rows (issue 15). Marking a
-- window of ~1 KB rows sent used to rewrite every row (and its entry in the
-- outbox_pending index); now the relay writes one small row per window:
-- the highest seq the window acknowledged (every row at or below it was
-- acknowledged, since the relay marks only an unbroken prefix in seq
-- order) and when. Unsent rows are those above the highest mark, a range
-- of the primary key, so sent rows are never visited.
CREATE TABLE outbox_sent (
    seq     INTEGER PRIMARY KEY,
    sent_at TEXT NOT NULL
);

-- The rows already marked, one mark per window (the rows a window marked
-- share its sent_at), the time rewritten in the marks' fixed-width form
-- (milliseconds), which compares in time order as text. Only the sent prefix is carried over: a sent row
-- above an unsent one, which the relay never leaves, is published again
-- (its Nats-Msg-Id lets the stream drop it).
INSERT INTO outbox_sent (seq, sent_at)
SELECT max(seq), coalesce(strftime('%Y-%m-%dT%H:%M:%fZ', sent_at), sent_at) FROM outbox
WHERE sent_at IS NOT NULL
  AND seq < coalesce((SELECT min(seq) FROM outbox WHERE sent_at IS NULL), 9223372036854775807)
GROUP BY sent_at;

DROP INDEX outbox_pending;
ALTER TABLE outbox DROP COLUMN sent_at;

-- +goose Down
ALTER TABLE outbox ADD COLUMN sent_at TEXT;
UPDATE outbox SET sent_at = (SELECT s.sent_at FROM outbox_sent s WHERE s.seq >= outbox.seq ORDER BY s.seq LIMIT 1)
WHERE seq <= (SELECT max(seq) FROM outbox_sent);
CREATE INDEX outbox_pending ON outbox(sent_at, seq);
DROP TABLE outbox_sent;
