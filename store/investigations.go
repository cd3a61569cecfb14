package findings

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// InvestigationRecord is one attempt at investigating a finding.
type InvestigationRecord struct {
	FindingID string     `json:"finding_id"`
	Attempt   int        `json:"attempt"`
	SessionID string     `json:"session_id,omitempty"`
	StartedAt time.Time  `json:"started_at"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	Outcome   string     `json:"outcome,omitempty"`
	Summary   string     `json:"summary,omitempty"`
}

// RequestDraft renders the remediation request event for a finding that
// passed the gate, for the given attempt.
type RequestDraft func(f *Finding, attempt int) OutboxDraft

// RequestInvestigations runs the gate over the candidates at now and, for
// each that passes (up to gate.MaxConcurrent running at once), marks the
// investigation running, records the attempt and writes the remediation
// request to the outbox, all in one transaction. It returns the findings
// handed over.
func (s *Store) RequestInvestigations(ctx context.Context, ids []string, gate Gate, autonomy Autonomy, now time.Time, draft RequestDraft) ([]Finding, error) {
	if autonomy == "" || autonomy == AutonomyMonitor || len(ids) == 0 {
		return nil, nil
	}
	var out []Finding
	err := s.withTx(ctx, func(tx *sql.Tx) error {
		var running int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM findings WHERE investigation_status = 'running'").Scan(&running); err != nil {
			return err
		}
		silences, err := listSilences(ctx, tx, now, true)
		if err != nil {
			return err
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
			f.Silenced = SilenceSet(silences).Silenced(&f)
			if ok, _ := gate.ShouldInvestigate(&f, autonomy, now); !ok {
				continue
			}
			t := now
			f.Attempts++
			f.InvestigationStatus, f.InvestigationStarted, f.InvestigationSession = InvestigationRunning, &t, ""
			ev := Event{FindingID: f.ID, At: now, Kind: "investigation_requested", Detail: fmt.Sprintf("attempt %d (%s)", f.Attempts, autonomy)}
			if err := writeOne(ctx, tx, &f, &ev); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO investigations (finding_id, attempt, started_at) VALUES (?,?,?)", f.ID, f.Attempts, fmtTime(now)); err != nil {
				return fmt.Errorf("record investigation: %w", err)
			}
			if err := w.add(ctx, draft(&f, f.Attempts)); err != nil {
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

// Outcome is the end of one investigation, as reported by a session.
type Outcome struct {
	FindingID string
	SessionID string
	Attempt   int
	Outcome   string
	Summary   string
}

// validOutcomes are the outcomes a session may report.
var validOutcomes = map[string]bool{
	OutcomeFixVerified: true, OutcomeFixQueued: true, OutcomeFixExecuted: true, OutcomeFixFailed: true,
	OutcomeFixVerificationFailed: true, OutcomeFixVerificationUnknown: true, OutcomeFixRejected: true,
	OutcomeCannotFix: true, OutcomeNeedsAttention: true, OutcomeTimedOut: true,
}

// ValidOutcome reports whether o is an outcome a session may report.
func ValidOutcome(o string) bool { return validOutcomes[o] }

// RecordOutcome applies an investigation outcome. A redelivered or stale
// outcome (an attempt other than the current one, or one already recorded)
// changes nothing and returns applied=false. fix_verified resolves the
// finding.
func (s *Store) RecordOutcome(ctx context.Context, o Outcome, now time.Time) (applied bool, err error) {
	if !validOutcomes[o.Outcome] {
		return false, &InputError{Field: "outcome", Problem: fmt.Sprintf("unknown outcome %q", o.Outcome)}
	}
	err = s.withTx(ctx, func(tx *sql.Tx) error {
		f, err := getFinding(ctx, tx, o.FindingID)
		if err != nil {
			return err
		}
		var ended sql.NullString
		var stored string
		err = tx.QueryRowContext(ctx, "SELECT ended_at, outcome FROM investigations WHERE finding_id = ? AND attempt = ?", f.ID, o.Attempt).Scan(&ended, &stored)
		// Stale (not the current attempt) or already final: nothing to do.
		// fix_queued is not final: the session resumes after approval.
		if err == sql.ErrNoRows || o.Attempt != f.Attempts || (ended.Valid && (stored == o.Outcome || stored != OutcomeFixQueued)) {
			return nil
		}
		if err != nil {
			return err
		}
		t := now
		f.InvestigationStatus, f.LastOutcome, f.LastInvestigationAt = "", o.Outcome, &t
		if o.SessionID != "" {
			f.InvestigationSession = o.SessionID
		}
		ev := Event{FindingID: f.ID, At: now, Kind: "investigation_" + o.Outcome, Detail: o.Summary}
		if o.Outcome == OutcomeFixVerified {
			f.FixSummary = o.Summary
			if f.Active() {
				f = Resolve(f, ResolveFixVerified, o.Summary, now, "").Finding
			}
		}
		if err := writeOne(ctx, tx, &f, &ev); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE investigations SET ended_at = ?, outcome = ?, summary = ?, session_id = ? WHERE finding_id = ? AND attempt = ?",
			fmtTime(now), o.Outcome, o.Summary, o.SessionID, f.ID, o.Attempt); err != nil {
			return err
		}
		if o.Outcome == OutcomeFixVerified {
			w, err := newOutboxWriter(ctx, tx, now)
			if err != nil {
				return err
			}
			defer w.close()
			if err := w.add(ctx, findingEvent(&f, Decision{Publish: true, Event: EventResolved, Reason: ReasonResolved}, "", now)); err != nil {
				return err
			}
		}
		applied = true
		return nil
	})
	return applied, err
}

// RecoverStuck marks investigations running longer than the gate's timeout
// plus StuckGrace as timed out; they are retried through the gate.
func (s *Store) RecoverStuck(ctx context.Context, gate Gate, now time.Time) ([]string, error) {
	running, err := queryFindings(ctx, s.db, "WHERE investigation_status = 'running'")
	if err != nil {
		return nil, err
	}
	var out []string
	for i := range running {
		if !gate.Stuck(&running[i], now) {
			continue
		}
		if ok, err := s.RecordOutcome(ctx, Outcome{FindingID: running[i].ID, Attempt: running[i].Attempts, Outcome: OutcomeTimedOut, Summary: "no outcome before timeout"}, now); err != nil {
			return out, err
		} else if ok {
			out = append(out, running[i].ID)
		}
	}
	return out, nil
}

// Investigations returns the investigation records of a finding.
func (s *Store) Investigations(ctx context.Context, id string) ([]InvestigationRecord, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT finding_id, attempt, session_id, started_at, ended_at, outcome, summary FROM investigations WHERE finding_id = ? ORDER BY attempt", id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []InvestigationRecord
	for rows.Next() {
		var r InvestigationRecord
		var st string
		var en sql.NullString
		if err := rows.Scan(&r.FindingID, &r.Attempt, &r.SessionID, &st, &en, &r.Outcome, &r.Summary); err != nil {
			return nil, err
		}
		r.StartedAt, r.EndedAt = parseTime(st), parseTimePtr(en)
		out = append(out, r)
	}
	return out, rows.Err()
}
