package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
)

// ownStateChangeSQL finds the outbox row of one numbered state change:
// its number, epoch and origin (?1..?3), the newest first. The search
// runs down the primary key: a change missing from the stream is a
// recent one, met within a few rows. sent: at or below the sent mark.
const ownStateChangeSQL = "SELECT seq, id, subject, type, resource_id, time, data, seq <= " + sentMarkSQL + " FROM outbox " +
	"WHERE type = '" + contracts.TypeStateChange + "' AND json_extract(data, '$.n') = ?1 " +
	"AND json_extract(data, '$.epoch') = ?2 AND json_extract(data, '$.origin') = ?3 ORDER BY seq DESC LIMIT 1"

// OwnStateChange returns the outbox row of the state change numbered n
// this database captured as the writer it is now: in its current epoch,
// under its own name. sent says the stream acknowledged the row. found
// is false when the outbox holds none: capture is off (a deposed writer
// re-publishes nothing, docs/CLUSTER.md), the change is another epoch's
// or another writer's, or it was pruned.
func (s *Store) OwnStateChange(ctx context.Context, n uint64) (row findings.OutboxEvent, found, sent bool, err error) {
	var capture int
	var origin string
	var epoch int64
	if err := s.db.QueryRowContext(ctx, "SELECT capture, origin, epoch FROM replica_state WHERE id = 1").Scan(&capture, &origin, &epoch); err != nil {
		return row, false, false, fmt.Errorf("own state change %d: %w", n, err)
	}
	// Only the writer re-publishes, and only its own epoch's changes: a
	// deposed writer's would land after its successor's marker.
	//mutate:republish-writer-only ./cluster ^TestDeposedWriterNeverRepublishes$
	if capture != 1 || n == 0 {
		return row, false, false, nil
	}
	var at string
	var data []byte
	err = s.db.QueryRowContext(ctx, ownStateChangeSQL, int64(n), epoch, origin).
		Scan(&row.Seq, &row.ID, &row.Subject, &row.Type, &row.ResourceID, &at, &data, &sent)
	if errors.Is(err, sql.ErrNoRows) {
		return row, false, false, nil
	}
	if err != nil {
		return row, false, false, fmt.Errorf("own state change %d: %w", n, err)
	}
	row.Time, row.Data = parseTime(at), json.RawMessage(data)
	return row, true, sent, nil
}

// ownRecordSQL finds the newest sent outbox row of state change number
// ?1 by origin ?2, of any epoch, and whether capture is on.
const ownRecordSQL = "SELECT data, (SELECT capture FROM replica_state WHERE id = 1) FROM outbox " +
	"WHERE type = '" + contracts.TypeStateChange + "' AND json_extract(data, '$.n') = ?1 " +
	"AND json_extract(data, '$.origin') = ?2 AND seq <= " + sentMarkSQL + " ORDER BY seq DESC LIMIT 1"

// OwnRecord returns state change n as this database captured it under
// origin, from its outbox, once the stream acknowledged it. capturing
// says this database captures now (its instance writes: it publishes a
// lost change again instead). found is false when the outbox holds no
// such row (never captured here, unsent, or pruned).
func (s *Store) OwnRecord(ctx context.Context, n uint64, origin string) (c contracts.StateChange, capturing, found bool, err error) {
	var data []byte
	var capture int
	err = s.db.QueryRowContext(ctx, ownRecordSQL, int64(n), origin).Scan(&data, &capture)
	if errors.Is(err, sql.ErrNoRows) {
		return c, false, false, nil
	}
	if err != nil {
		return c, false, false, fmt.Errorf("own record of state change %d: %w", n, err)
	}
	if c, err = contracts.DecodeStateChange(data); err != nil {
		return c, false, false, fmt.Errorf("own record of state change %d: %w", n, err)
	}
	return c, capture == 1, true, nil
}
