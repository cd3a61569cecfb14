package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/patrold/patrold/findings"
)

// RequestInvestigations runs the gate over the candidates at now and, for
// each that passes (up to gate.MaxConcurrent running at once), marks the
// investigation running, records the attempt and writes the remediation
// request to the outbox, all in one transaction. It returns the findings
// handed over.
func (s *Store) RequestInvestigations(ctx context.Context, ids []string, gate findings.Gate, autonomy findings.Autonomy, now time.Time, draft findings.RequestDraft) ([]findings.Finding, error) {
	if autonomy == "" || autonomy == findings.AutonomyMonitor || len(ids) == 0 {
		return nil, nil
	}
	var out []findings.Finding
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		var running int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM findings INDEXED BY findings_investigating WHERE investigation_status = 'running'").Scan(&running); err != nil {
			return err
		}
		silences, err := listSilences(ctx, tx, now, true)
		if err != nil {
			return err
		}
		// The writer's epoch (0 on a single instance): an outcome must
		// carry it back to apply.
		var epoch uint64
		if err := tx.QueryRowContext(ctx, "SELECT epoch FROM replica_state WHERE id = 1").Scan(&epoch); err != nil {
			return fmt.Errorf("writer epoch: %w", err)
		}
		w, err := newOutboxWriter(ctx, tx, now)
		if err != nil {
			return err
		}
		defer w.close()
		for _, id := range ids {
			if gate.MaxConcurrent > 0 && running >= gate.MaxConcurrent {
				break
			}
			f, err := getFinding(ctx, tx, id)
			if err != nil {
				return err
			}
			f.Silenced = findings.SilenceSet(silences).Silenced(&f)
			if ok, _ := gate.ShouldInvestigate(&f, autonomy, now); !ok {
				continue
			}
			// The wire attempt continues after every earlier episode's, so
			// the request, its session and its outcome are this episode's
			// own.
			var last int
			if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(attempt), 0) FROM investigations WHERE finding_id = ?", f.ID).Scan(&last); err != nil {
				return fmt.Errorf("last investigation attempt: %w", err)
			}
			t := now
			f.Attempts++
			f.Attempt = max(last, f.Attempt) + 1
			f.InvestigationStatus, f.InvestigationStarted, f.InvestigationSession = findings.InvestigationRunning, &t, ""
			ev := findings.Event{FindingID: f.ID, At: now, Kind: "investigation_requested", Detail: investigationDetail(&f, autonomy)}
			if err := writeOne(ctx, tx, &f, &ev); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO investigations (finding_id, attempt, episode, started_at, epoch) VALUES (?,?,?,?,?)",
				f.ID, f.Attempt, f.RegressionCount+1, fmtTime(now), epoch); err != nil {
				return fmt.Errorf("record investigation: %w", err)
			}
			if err := w.add(ctx, draft(&f, f.Attempt, epoch)); err != nil {
				return err
			}
			running++
			out = append(out, f)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("request investigations: %w", err)
	}
	return out, nil
}

// investigationDetail is the investigation_requested event's detail: the
// attempt of the episode, and the wire attempt when they differ.
func investigationDetail(f *findings.Finding, autonomy findings.Autonomy) string {
	if f.Attempt == f.Attempts {
		return fmt.Sprintf("attempt %d (%s)", f.Attempts, autonomy)
	}
	return fmt.Sprintf("attempt %d of episode %d, request attempt %d (%s)", f.Attempts, f.RegressionCount+1, f.Attempt, autonomy)
}

// RecordOutcome applies a session's investigation outcome. It applies
// only to the session patrold dispatched, once:
//   - the session is stored for the same finding and attempt;
//   - the attempt is the finding's current one and its investigation
//     carries the outcome's epoch;
//   - the investigation is not final yet (fix_queued is not: the session
//     resumes after approval).
//
// Any other outcome (redelivered, stale, forged) changes nothing and
// returns applied=false. fix_verified resolves the finding: the caller
// has re-checked the condition (findings/outcome).
func (s *Store) RecordOutcome(ctx context.Context, o findings.Outcome, now time.Time) (applied bool, err error) {
	return s.recordOutcome(ctx, o, now, true)
}

// recordOutcome applies o; dispatched requires the session match (an
// outcome patrold decides itself, a timeout, names no session).
func (s *Store) recordOutcome(ctx context.Context, o findings.Outcome, now time.Time, dispatched bool) (applied bool, err error) {
	if !findings.ValidOutcome(o.Outcome) {
		return false, &findings.InputError{Field: "outcome", Problem: fmt.Sprintf("unknown outcome %q", o.Outcome)}
	}
	err = s.withTx(ctx, func(tx *sql.Tx) error {
		f, err := getFinding(ctx, tx, o.FindingID)
		if err != nil {
			return err
		}
		var ended sql.NullString
		var stored string
		var epoch uint64
		err = tx.QueryRowContext(ctx, "SELECT ended_at, outcome, epoch FROM investigations WHERE finding_id = ? AND attempt = ?", f.ID, o.Attempt).Scan(&ended, &stored, &epoch)
		// Stale (not the current attempt) or already final: nothing to do.
		// fix_queued is not final: the session resumes after approval.
		if err == sql.ErrNoRows || o.Attempt != f.Attempt || (ended.Valid && (stored == o.Outcome || stored != findings.OutcomeFixQueued)) {
			return nil
		}
		if err != nil {
			return err
		}
		//mutate:outcome-session-match ./findings/outcome ^TestForgedOutcomesChangeNothing$
		if dispatched {
			ok, err := sessionDispatched(ctx, tx, o, epoch)
			if err != nil || !ok {
				return err
			}
		}
		t := now
		f.InvestigationStatus, f.LastOutcome, f.LastInvestigationAt = "", o.Outcome, &t
		if o.SessionID != "" {
			f.InvestigationSession = o.SessionID
		}
		ev := findings.Event{FindingID: f.ID, At: now, Kind: "investigation_" + o.Outcome, Detail: o.Summary}
		if o.Outcome == findings.OutcomeFixVerified {
			f.FixSummary = o.Summary
			if f.Active() {
				f = findings.Resolve(f, findings.ResolveFixVerified, o.Summary, now, "").Finding
			}
		}
		if err := writeOne(ctx, tx, &f, &ev); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE investigations SET ended_at = ?, outcome = ?, summary = ?, session_id = ? WHERE finding_id = ? AND attempt = ?",
			fmtTime(now), o.Outcome, o.Summary, o.SessionID, f.ID, o.Attempt); err != nil {
			return err
		}
		if o.Outcome == findings.OutcomeFixVerified {
			w, err := newOutboxWriter(ctx, tx, now)
			if err != nil {
				return err
			}
			defer w.close()
			if err := w.add(ctx, findings.FindingEvent(&f, findings.Decision{Publish: true, Event: findings.EventResolved, Reason: findings.ReasonResolved}, "", now)); err != nil {
				return err
			}
		}
		applied = true
		return nil
	})
	return applied, err
}

// sessionDispatched reports whether o answers a session patrold
// dispatched: the session is stored for o's finding and attempt, and o
// carries the epoch its investigation was requested in.
func sessionDispatched(ctx context.Context, tx *sql.Tx, o findings.Outcome, epoch uint64) (bool, error) {
	//mutate:outcome-epoch-match ./findings/outcome ^TestForgedOutcomesChangeNothing$
	if o.SessionID == "" || o.Epoch != epoch {
		return false, nil
	}
	var n int
	err := tx.QueryRowContext(ctx, "SELECT count(*) FROM remediation_sessions WHERE id = ? AND finding_id = ? AND attempt = ?",
		o.SessionID, o.FindingID, o.Attempt).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("session of the outcome: %w", err)
	}
	return n == 1, nil
}

// RecoverStuck marks investigations running longer than the gate's timeout
// plus StuckGrace as timed out; they are retried through the gate. It also
// ends the investigation records every earlier episode left open (a
// finding resolved or reopened while one ran): no outcome can apply to
// them any more.
func (s *Store) RecoverStuck(ctx context.Context, gate findings.Gate, now time.Time) ([]string, error) {
	if _, err := s.exec(ctx, `UPDATE investigations SET ended_at = ?, outcome = ?, summary = ?
		WHERE ended_at IS NULL AND started_at < ? AND NOT EXISTS (SELECT 1 FROM findings f WHERE f.id = investigations.finding_id
			AND f.investigation_status = 'running' AND f.investigation_attempt = investigations.attempt)`,
		fmtTime(now), findings.OutcomeTimedOut, "episode ended without an outcome", fmtTime(now.Add(-(gate.Timeout + findings.StuckGrace)))); err != nil {
		return nil, fmt.Errorf("end investigations of earlier episodes: %w", err)
	}
	// The partial index holds only the findings under investigation: a run
	// that hands over nothing reads none.
	running, err := queryFindings(ctx, s.db, "WHERE id IN (SELECT id FROM findings INDEXED BY findings_investigating WHERE investigation_status = 'running')")
	if err != nil {
		return nil, err
	}
	var out []string
	for i := range running {
		if !gate.Stuck(&running[i], now) {
			continue
		}
		if ok, err := s.recordOutcome(ctx, findings.Outcome{FindingID: running[i].ID, Attempt: running[i].Attempt, Outcome: findings.OutcomeTimedOut, Summary: "no outcome before timeout"}, now, false); err != nil {
			return out, err
		} else if ok {
			out = append(out, running[i].ID)
		}
	}
	return out, nil
}

// Investigations returns the investigation records of a finding.
func (s *Store) Investigations(ctx context.Context, id string) ([]findings.InvestigationRecord, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT finding_id, attempt, episode, session_id, started_at, ended_at, outcome, summary FROM investigations WHERE finding_id = ? ORDER BY attempt, id", id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []findings.InvestigationRecord
	for rows.Next() {
		var r findings.InvestigationRecord
		var st string
		var en sql.NullString
		if err := rows.Scan(&r.FindingID, &r.Attempt, &r.Episode, &r.SessionID, &st, &en, &r.Outcome, &r.Summary); err != nil {
			return nil, err
		}
		r.StartedAt, r.EndedAt = parseTime(st), parseTimePtr(en)
		out = append(out, r)
	}
	return out, rows.Err()
}

// Dispatched reports whether patrold dispatched a session for the
// finding's attempt that may still report: the attempt is the finding's
// current one and its investigation is open (or parked for an approval,
// fix_queued).
func (s *Store) Dispatched(ctx context.Context, findingID string, attempt int) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM investigations i JOIN findings f ON f.id = i.finding_id
		WHERE i.finding_id = ? AND i.attempt = ? AND f.investigation_attempt = i.attempt
		AND (i.ended_at IS NULL OR i.outcome = ?)`, findingID, attempt, findings.OutcomeFixQueued).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("dispatched investigation: %w", err)
	}
	return n > 0, nil
}
