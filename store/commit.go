package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/patrold/patrold/contracts"
	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/internal/shares"
)

// CommitRun applies a run's observations and resolutions, writes findings,
// their lifecycle events, the run record and outbox rows in one
// transaction, and returns the changes.
func (s *Store) CommitRun(ctx context.Context, in findings.RunInput, finish findings.FinishFunc) ([]findings.Change, error) {
	var changes []findings.Change
	var ob *outboxWriter
	var left activeState // byID nil: nothing to keep
	var leftAt int64
	err := withTxOn(ctx, s.commitDB, func(tx *sql.Tx) error {
		active, keep, err := s.activeFindings(ctx, tx, len(in.Observations))
		if err != nil {
			return err
		}
		changes, err = reconcile(ctx, tx, in, active.byID, active.order)
		if err != nil {
			return err
		}
		up, err := newUpserter(ctx, tx)
		if err != nil {
			return err
		}
		defer up.close()
		if ob, err = newOutboxWriter(ctx, tx, in.Now); err != nil {
			return err
		}
		defer ob.close()
		silences, err := listSilences(ctx, tx, in.Now, true)
		if err != nil {
			return err
		}
		// Every change is decided first (pure); then the run record is
		// rendered (finish: the report, encoded once) on another goroutine
		// while the findings, events and outbox rows are written, which
		// only read the decided changes, as finish does.
		decisions := make([]findings.Decision, len(changes))
		explained := inhibitions(changes)
		for i := range changes {
			c := &changes[i]
			c.Finding.Silenced = findings.SilenceSet(silences).Silenced(&c.Finding)
			c.Finding.Inhibits = explained[c.Finding.ID]
			c.Finding, decisions[i] = in.Policy.Decide(*c, c.Finding.Held(), in.Now)
		}
		fin := finishAsync(finish, changes)
		var touched []touchedFinding
		werr := func() error {
			for i := range changes {
				c, d := &changes[i], decisions[i]
				f := &c.Finding
				if !d.Publish && onlyTouched(c) {
					touched = append(touched, touchedFinding{f.ID, f.TimesRaised})
					continue
				}
				if err := up.write(ctx, f); err != nil {
					return err
				}
				if kind, detail := findings.EventFor(*c); kind != "" {
					if err := up.addEvent(ctx, findings.Event{FindingID: f.ID, At: in.Now, Kind: kind, Detail: detail, RunID: in.RunID}, c.Kind == findings.ChangeNew); err != nil {
						return err
					}
				}
				if d.Publish {
					if err := ob.add(ctx, findings.FindingEvent(f, d, in.RunID, in.Now)); err != nil {
						return err
					}
				}
			}
			// In id order: each touch's object, and so the lookups of its
			// update, walk finding_seen's key in order.
			slices.SortFunc(touched, func(a, b touchedFinding) int { return strings.Compare(a.id, b.id) })
			return touch(ctx, tx, touched, in.Now, in.RunID)
		}()
		done := <-fin // always waited for: finish must not outlive the transaction
		if werr != nil {
			return werr
		}
		if done.panic != nil {
			_ = tx.Rollback() // the store stays usable; the panic is the caller's
			panic(done.panic)
		}
		rec, extra, err := done.rec, done.extra, done.err
		if err != nil {
			return err
		}
		if err := putRun(ctx, tx, rec); err != nil {
			return err
		}
		for _, d := range extra {
			if err := ob.add(ctx, d); err != nil {
				return err
			}
		}
		if !keep {
			return nil
		}
		version, err := findingsVersion(ctx, tx)
		if err != nil {
			return err
		}
		m, sameMembers := leave(active.byID, changes)
		if m == nil {
			return nil
		}
		left, leftAt = activeState{byID: m}, version
		if sameMembers { // what was built from the members still holds
			left.order, left.keyList = active.order, active.keyList
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("commit run %s: %w", in.RunID, err)
	}
	if left.byID != nil {
		s.active.put(left, leftAt)
	}
	// Committed: the relay publishes the run's events from memory, as it
	// does Enqueue's (checked against the database's window).
	s.recent.add(ob.written)
	return changes, nil
}

// finished is what a FinishFunc returned (or the panic it raised).
type finished struct {
	rec   findings.RunRecord
	extra []findings.OutboxDraft
	err   error
	panic any
}

// finishAsync calls finish(changes) on its own goroutine; a panic is
// handed back to be raised again by the caller.
func finishAsync(finish findings.FinishFunc, changes []findings.Change) <-chan finished {
	out := make(chan finished, 1)
	go func() {
		var r finished
		defer func() {
			if p := recover(); p != nil {
				r.panic = p
			}
			out <- r
		}()
		r.rec, r.extra, r.err = finish(changes)
	}()
	return out
}

// reconcile decides a run's changes from two inputs. One is the active
// findings, by id and their ids in order (the order unobserved ones are
// resolved in). The other, read in one query for the run, is the resolved
// history of the ids observed again (a regression).
func reconcile(ctx context.Context, tx *sql.Tx, in findings.RunInput, active map[string]findings.Finding, order []string) ([]findings.Change, error) {
	// Normalising (each observation's identity, a hash) and observing are
	// per observation: both run in shares, one per core. What depends on
	// the order is done in one pass between them: the first observation
	// of a finding wins, and the changes keep the observations' order.
	all := slices.Clone(in.Observations)
	allIDs := make([]string, len(all))
	shares.Each(len(all), reconcileShare, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			allIDs[i] = all[i].Normalize()
		}
	})
	obs := all[:0]
	ids := allIDs[:0]
	seen := make(map[string]bool, len(all))
	var missing []string
	for i, id := range allIDs {
		if seen[id] {
			continue // one observation per finding per run; the first wins
		}
		seen[id] = true
		obs, ids = append(obs, all[i]), append(ids, id)
		if _, ok := active[id]; !ok {
			missing = append(missing, id)
		}
	}
	history, err := findingsByID(ctx, tx, missing)
	if err != nil {
		return nil, err
	}
	suppressed, err := suppressionSet(ctx, tx)
	if err != nil {
		return nil, err
	}
	observed := make([]findings.Change, len(obs))
	dropped := make([]bool, len(obs))
	shares.Each(len(obs), reconcileShare, func(lo, hi int) {
		var cur findings.Finding // the active finding observed (Observe copies it)
		for i := lo; i < hi; i++ {
			o := obs[i]
			var prev *findings.Finding
			if f, ok := active[ids[i]]; ok {
				cur = f
				prev = &cur
			} else {
				prev = history[ids[i]]
			}
			if prev == nil && suppressed[suppressionKey{o.ResourceID, string(o.Category)}] {
				dropped[i] = true // a suppression rule drops new findings for this pair
				continue
			}
			observed[i] = findings.Observe(prev, o, in.Now, in.RunID)
		}
	})
	changes := observed[:0]
	for i := range observed {
		if !dropped[i] {
			changes = append(changes, observed[i])
		}
	}
	if !in.Reconcile {
		return changes, nil
	}
	for _, id := range order {
		if seen[id] {
			continue
		}
		f := active[id]
		if reason := in.Resolution(&f); reason != "" {
			changes = append(changes, findings.Resolve(f, reason, "", in.Now, in.RunID))
		} else if c, ok := in.Hold(f); ok {
			changes = append(changes, c)
		}
	}
	return changes, nil
}

// reconcileShare is the fewest observations worth a goroutine of their own.
const reconcileShare = 1024

// findingsByID reads the stored findings among ids in one query (a JSON
// array bound as one parameter, so there is no limit on how many).
func findingsByID(ctx context.Context, q querier, ids []string) (map[string]*findings.Finding, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, err
	}
	found, err := queryFindingsSized(ctx, q, len(ids), "WHERE id IN (SELECT value FROM json_each(?))", string(list))
	if err != nil {
		return nil, err
	}
	out := make(map[string]*findings.Finding, len(found))
	for i := range found {
		out[found[i].ID] = &found[i]
	}
	return out, nil
}

// putRun writes the run record. The row StartRun wrote is updated in
// place; it is not replaced, since REPLACE deletes and re-inserts the row
// and its index entries. The report is bound as the bytes encoded once,
// cast to TEXT in SQLite rather than copied into a Go string.
func putRun(ctx context.Context, tx *sql.Tx, r findings.RunRecord) error {
	report := []byte(r.Report)
	if len(report) == 0 {
		report = []byte("{}")
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO runs (id, trigger, status, analysis, started_at, finished_at, complete, report, exchange, cost_usd, summary)
		VALUES (?,?,?,?,?,?,?,CAST(? AS TEXT),?,?,?)
		ON CONFLICT(id) DO UPDATE SET trigger = excluded.trigger, status = excluded.status, analysis = excluded.analysis,
		started_at = excluded.started_at, finished_at = excluded.finished_at, complete = excluded.complete,
		report = excluded.report, exchange = excluded.exchange, cost_usd = excluded.cost_usd, summary = excluded.summary`,
		r.ID, r.Trigger, r.Status, r.Analysis, fmtTime(r.StartedAt), fmtTimePtr(r.FinishedAt), r.Complete, report,
		string(r.Exchange), r.CostUSD, encodeSummary(r.Summary))
	if err != nil {
		return fmt.Errorf("write run %s: %w", r.ID, err)
	}
	return nil
}

type suppressionKey struct{ resource, category string }

func suppressionSet(ctx context.Context, q querier) (map[suppressionKey]bool, error) {
	rows, err := q.QueryContext(ctx, "SELECT resource_id, category FROM suppressions")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[suppressionKey]bool{}
	for rows.Next() {
		var k suppressionKey
		if err := rows.Scan(&k.resource, &k.category); err != nil {
			return nil, err
		}
		out[k] = true
	}
	return out, rows.Err()
}

// inhibitions counts, per parent finding id, the active findings of
// changes it explains. An inhibition names a parent observed in the same
// run (findings.Inhibit), so the parent is among changes.
func inhibitions(changes []findings.Change) map[string]int {
	var out map[string]int
	for i := range changes {
		f := &changes[i].Finding
		if f.InhibitedBy == "" {
			continue
		}
		if out == nil {
			out = map[string]int{}
		}
		out[f.InhibitedBy]++
	}
	return out
}

// onlyTouched reports whether a change moved nothing but last_seen_at,
// times_raised and last_run_id (a steady-state re-detection with the same
// text): those rows are updated in one statement.
func onlyTouched(c *findings.Change) bool {
	if c.Kind != findings.ChangeUnchanged || c.Previous == nil {
		return false
	}
	a, b := c.Previous, &c.Finding
	return a.Severity == b.Severity && a.Title == b.Title && a.Description == b.Description && a.Recommendation == b.Recommendation &&
		a.Evidence == b.Evidence && a.ResourceName == b.ResourceName && a.ResourceKind == b.ResourceKind && a.ResourceNode == b.ResourceNode &&
		a.Silenced == b.Silenced && a.InhibitedBy == b.InhibitedBy && a.SeenWhileSuppressed == b.SeenWhileSuppressed && a.Flapping == b.Flapping &&
		len(a.Transitions) == len(b.Transitions) && slices.Equal(a.ResourceTags, b.ResourceTags) &&
		a.TimesRaised+1 == b.TimesRaised
}

// touchedFinding is a finding a run re-detected unchanged and the times it
// has now been raised.
type touchedFinding struct {
	id     string
	raised int
}

// touch records a re-detection of many unchanged findings in one
// statement (per chunk). In cluster capture it is replicated as one touch
// change per chunk instead of a row image per finding (captureTouch). It
// sets each finding's times raised to the value the run decided, not one
// more than what a database holds. So a replica whose row had drifted (a
// write of a deposed writer that never reached the stream) is brought
// back into line by the next touch, instead of staying one off for good.
func touch(ctx context.Context, tx *sql.Tx, found []touchedFinding, now time.Time, runID string) error {
	for len(found) > 0 {
		chunk := found[:min(len(found), touchChunk)]
		found = found[len(chunk):]
		list := raisedObject(chunk)
		err := captureTouch(ctx, tx, list, fmtTime(now), runID, func() error { return touchRows(ctx, tx, list, fmtTime(now), runID) })
		if err != nil {
			return fmt.Errorf("touch findings: %w", err)
		}
	}
	return nil
}

// raisedObject is the JSON object {id: times raised, ...} of found, in
// their order (the caller's: by id).
func raisedObject(found []touchedFinding) []byte {
	b := make([]byte, 0, 2+len(found)*28)
	b = append(b, '{')
	for i, f := range found {
		if i > 0 {
			b = append(b, ',')
		}
		b = contracts.AppendJSONString(b, f.id)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(f.raised), 10)
	}
	return append(b, '}')
}

// touchChunk bounds the findings of one touch (one replicated change of
// about 25 bytes a finding, well under a NATS message).
const touchChunk = 5000

// touchRows is the re-detection update itself, on a JSON object of finding
// ids and the times each has been raised: of their narrow finding_seen
// rows, not the findings rows. It moves the findings version once
// (finding_seen has no version trigger, so a touch of many rows costs one
// counter update).
func touchRows(ctx context.Context, tx *sql.Tx, raised []byte, lastSeen, runID string) error {
	if _, err := tx.ExecContext(ctx, `UPDATE finding_seen SET last_seen_at = ?, last_run_id = ?, times_raised = j.value
		FROM json_each(?) AS j WHERE finding_seen.id = j.key`, lastSeen, runID, string(raised)); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, "UPDATE findings_version SET n = n + 1 WHERE id = 1")
	return err
}
