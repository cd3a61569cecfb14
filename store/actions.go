package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/patrold/patrold/findings"
)

// Act applies an operator action in its own transaction: the finding, its
// lifecycle event, the suppression rule and the publication are written
// together, serialised with runs, so no concurrent update is lost.
func (s *Store) Act(ctx context.Context, id string, req findings.ActionRequest, now time.Time) (findings.Finding, error) {
	var out findings.Finding
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		f, err := getFinding(ctx, tx, id)
		if err != nil {
			return err
		}
		nf, ev, pub, err := findings.ApplyAction(f, req, now)
		if err != nil {
			return err
		}
		if ev.Kind == "" { // nothing changed
			out = nf
			return nil
		}
		if err := writeOne(ctx, tx, &nf, &ev); err != nil {
			return err
		}
		switch req.Action {
		case findings.ActionSuppress:
			_, err = tx.ExecContext(ctx, "INSERT OR REPLACE INTO suppressions (resource_id, category, created_at, finding_id) VALUES (?,?,?,?)",
				nf.ResourceID, string(nf.Category), fmtTime(now), nf.ID)
		case findings.ActionUnsuppress:
			_, err = tx.ExecContext(ctx, "DELETE FROM suppressions WHERE resource_id = ? AND category = ?", nf.ResourceID, string(nf.Category))
		}
		if err != nil {
			return fmt.Errorf("suppression rule: %w", err)
		}
		if pub != nil && !nf.Silenced {
			w, err := newOutboxWriter(ctx, tx, now)
			if err != nil {
				return err
			}
			defer w.close()
			if err := w.add(ctx, findings.FindingEvent(&nf, *pub, "", now)); err != nil {
				return err
			}
		}
		out = nf
		return nil
	})
	return out, err
}

// writeOne writes one finding and optionally one event inside tx.
func writeOne(ctx context.Context, tx *sql.Tx, f *findings.Finding, ev *findings.Event) error {
	up, err := newUpserter(ctx, tx)
	if err != nil {
		return err
	}
	defer up.close()
	if err := up.write(ctx, f); err != nil {
		return err
	}
	if ev != nil && ev.Kind != "" {
		return up.addEvent(ctx, *ev, false)
	}
	return nil
}
