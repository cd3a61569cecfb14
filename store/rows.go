package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/patrold/patrold/findings"
)

const findingColumns = `id, key, resource_id, resource_kind, resource_name, category, severity, source,
	title, description, recommendation, evidence, status, detected_at, last_seen_at, resolved_at,
	resolve_reason, resolve_note, times_raised, regression_count, last_run_id, acknowledged_at,
	snoozed_until, dismissed_reason, dismissed_at, suppressed, seen_while_suppressed,
	investigation_attempts, investigation_status, investigation_started_at, last_investigation_at,
	last_outcome, investigation_session_id, fix_summary, previous_fix_summary, last_published_at,
	last_published_severity, last_published_event, transitions, flapping, resource_tags, silenced, investigation_attempt, resource_node,
	inhibited_by`

// findingsFrom is what findings are read from: a finding's row and its
// re-detection values (finding_seen, migration 00012), joined by id.
const findingsFrom = "findings JOIN finding_seen USING (id)"

// seenColumns are the re-detection values, kept in finding_seen: a steady
// run moves only these, in one narrow row per finding.
var seenColumns = map[string]bool{"last_seen_at": true, "last_run_id": true, "times_raised": true}

// upsertSQL writes a finding's row and upsertSeenSQL its re-detection
// values (both with findingArgs' split). Both update in place (never
// REPLACE, which would delete the row and cascade to its events and
// investigations).
var upsertSQL, upsertSeenSQL = func() (string, string) {
	var cols, sets []string
	for _, c := range strings.Split(findingColumns, ",") {
		c = strings.TrimSpace(c)
		if seenColumns[c] {
			continue
		}
		cols = append(cols, c)
		if c != "id" {
			sets = append(sets, c+" = excluded."+c)
		}
	}
	return "INSERT INTO findings (" + strings.Join(cols, ", ") + ") VALUES (" + strings.TrimSuffix(strings.Repeat("?,", len(cols)), ",") +
			") ON CONFLICT(id) DO UPDATE SET " + strings.Join(sets, ", "),
		`INSERT INTO finding_seen (id, last_seen_at, last_run_id, times_raised) VALUES (?,?,?,?)
		ON CONFLICT(id) DO UPDATE SET last_seen_at = excluded.last_seen_at, last_run_id = excluded.last_run_id, times_raised = excluded.times_raised`
}()

type scanner interface{ Scan(dest ...any) error }

// scanFinding scans a row of findingColumns.
func scanFinding(sc scanner) (findings.Finding, error) {
	var f findings.Finding
	var detected, lastSeen, transitions, tags string
	var resolved, acked, snoozed, dismissed, invStarted, lastInv, lastPub sql.NullString
	err := sc.Scan(&f.ID, &f.Key, &f.ResourceID, &f.ResourceKind, &f.ResourceName, &f.Category, &f.Severity, &f.Source,
		&f.Title, &f.Description, &f.Recommendation, &f.Evidence, &f.Status, &detected, &lastSeen, &resolved,
		&f.ResolveReason, &f.ResolveNote, &f.TimesRaised, &f.RegressionCount, &f.LastRunID, &acked,
		&snoozed, &f.DismissedReason, &dismissed, &f.Suppressed, &f.SeenWhileSuppressed,
		&f.Attempts, &f.InvestigationStatus, &invStarted, &lastInv,
		&f.LastOutcome, &f.InvestigationSession, &f.FixSummary, &f.PreviousFixSummary, &lastPub,
		&f.LastPublishedSeverity, &f.LastPublishedEvent, &transitions, &f.Flapping, &tags, &f.Silenced, &f.Attempt,
		&f.ResourceNode, &f.InhibitedBy)
	if err != nil {
		return f, err
	}
	f.DetectedAt, f.LastSeenAt = parseTime(detected), parseTime(lastSeen)
	f.ResolvedAt, f.AcknowledgedAt, f.SnoozedUntil = parseTimePtr(resolved), parseTimePtr(acked), parseTimePtr(snoozed)
	f.DismissedAt, f.InvestigationStarted, f.LastInvestigationAt = parseTimePtr(dismissed), parseTimePtr(invStarted), parseTimePtr(lastInv)
	f.LastPublishedAt = parseTimePtr(lastPub)
	f.Transitions = parseTransitions(transitions)
	f.ResourceTags = decodeTags(tags)
	return f, nil
}

// decodeTags reads the stored resource_tags column: a JSON array of
// strings as json.Marshal wrote it. The common form, plain strings with
// nothing to unescape, is split in place; anything else is left to
// encoding/json, with its result (nil for "" and "[]", and for a value
// that does not decode).
func decodeTags(s string) []string {
	if s == "" || s == "[]" {
		return nil
	}
	if tags, ok := plainTags(s); ok {
		return tags
	}
	var out []string
	_ = json.Unmarshal([]byte(s), &out)
	return out
}

// plainTags splits `["a","b"]` whose strings hold only printable ASCII
// other than '"' and '\'; ok is false for any other text.
func plainTags(s string) ([]string, bool) {
	if len(s) < 4 || s[0] != '[' || s[len(s)-1] != ']' {
		return nil, false
	}
	body := s[1 : len(s)-1]
	out := make([]string, 0, strings.Count(body, ",")+1)
	for {
		if len(body) < 2 || body[0] != '"' {
			return nil, false
		}
		end := 1
		for end < len(body) && body[end] != '"' {
			if c := body[end]; c < 0x20 || c > 0x7e || c == '\\' {
				return nil, false
			}
			end++
		}
		if end == len(body) {
			return nil, false
		}
		out = append(out, body[1:end])
		body = body[end+1:]
		if body == "" {
			return out, true
		}
		if body[0] != ',' {
			return nil, false
		}
		body = body[1:]
	}
}

// findingArgs are the arguments of upsertSQL (row) and upsertSeenSQL
// (seen) for f.
func findingArgs(f *findings.Finding) (row, seen []any) {
	tr := formatTransitions(f.Transitions)
	tags, _ := json.Marshal(f.ResourceTags)
	if f.ResourceTags == nil {
		tags = []byte("[]")
	}
	row = []any{f.ID, f.Key, f.ResourceID, f.ResourceKind, f.ResourceName, f.Category, f.Severity, f.Source,
		f.Title, f.Description, f.Recommendation, f.Evidence, f.Status, fmtTime(f.DetectedAt), fmtTimePtr(f.ResolvedAt),
		f.ResolveReason, f.ResolveNote, f.RegressionCount, fmtTimePtr(f.AcknowledgedAt),
		fmtTimePtr(f.SnoozedUntil), f.DismissedReason, fmtTimePtr(f.DismissedAt), f.Suppressed, f.SeenWhileSuppressed,
		f.Attempts, f.InvestigationStatus, fmtTimePtr(f.InvestigationStarted), fmtTimePtr(f.LastInvestigationAt),
		f.LastOutcome, f.InvestigationSession, f.FixSummary, f.PreviousFixSummary, fmtTimePtr(f.LastPublishedAt),
		f.LastPublishedSeverity, f.LastPublishedEvent, tr, f.Flapping, string(tags), f.Silenced, f.Attempt, f.ResourceNode, f.InhibitedBy}
	return row, []any{f.ID, fmtTime(f.LastSeenAt), f.LastRunID, f.TimesRaised}
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

func queryFindings(ctx context.Context, q querier, where string, args ...any) ([]findings.Finding, error) {
	return queryFindingsSized(ctx, q, 0, where, args...)
}

// queryFindingsSized is queryFindings with room for about size findings
// up front: a Finding is large, and growing the slice row by row copies
// every finding read so far, again and again.
func queryFindingsSized(ctx context.Context, q querier, size int, where string, args ...any) ([]findings.Finding, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+findingColumns+" FROM "+findingsFrom+" "+where, args...)
	if err != nil {
		return nil, fmt.Errorf("query findings: %w", err)
	}
	defer rows.Close()
	var out []findings.Finding // nil when nothing matches, as before
	if size > 0 {
		out = make([]findings.Finding, 0, size)
	}
	for rows.Next() {
		f, err := scanFinding(rows)
		if err != nil {
			return nil, fmt.Errorf("scan finding: %w", err)
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

func getFinding(ctx context.Context, q querier, id string) (findings.Finding, error) {
	f, err := scanFinding(q.QueryRowContext(ctx, "SELECT "+findingColumns+" FROM "+findingsFrom+" WHERE id = ?", id))
	if err == sql.ErrNoRows {
		return f, fmt.Errorf("finding %s: %w", id, findings.ErrNotFound)
	}
	return f, err
}

// upserter writes findings and their events with prepared statements.
type upserter struct {
	upsert, seen, event, trim *sql.Stmt
}

func newUpserter(ctx context.Context, tx *sql.Tx) (*upserter, error) {
	up, err := tx.PrepareContext(ctx, upsertSQL)
	if err != nil {
		return nil, err
	}
	seen, err := tx.PrepareContext(ctx, upsertSeenSQL)
	if err != nil {
		return nil, err
	}
	ev, err := tx.PrepareContext(ctx, "INSERT INTO finding_events (finding_id, at, kind, detail, run_id) VALUES (?,?,?,?,?)")
	if err != nil {
		return nil, err
	}
	trim, err := tx.PrepareContext(ctx, `DELETE FROM finding_events WHERE finding_id = ?1 AND seq NOT IN
		(SELECT seq FROM finding_events WHERE finding_id = ?1 ORDER BY seq DESC LIMIT ?2)`)
	if err != nil {
		return nil, err
	}
	return &upserter{upsert: up, seen: seen, event: ev, trim: trim}, nil
}

func (u *upserter) close() {
	u.upsert.Close()
	u.seen.Close()
	u.event.Close()
	u.trim.Close()
}

func (u *upserter) write(ctx context.Context, f *findings.Finding) error {
	row, seen := findingArgs(f)
	if _, err := u.upsert.ExecContext(ctx, row...); err != nil {
		return fmt.Errorf("write finding %s: %w", f.ID, err)
	}
	if _, err := u.seen.ExecContext(ctx, seen...); err != nil {
		return fmt.Errorf("write finding %s: %w", f.ID, err)
	}
	return nil
}

// addEvent appends a lifecycle event and trims the history to
// MaxEventsPerFinding; fresh is true for a finding created in this
// transaction, whose history cannot need trimming.
func (u *upserter) addEvent(ctx context.Context, e findings.Event, fresh bool) error {
	if _, err := u.event.ExecContext(ctx, e.FindingID, fmtTime(e.At), e.Kind, e.Detail, e.RunID); err != nil {
		return fmt.Errorf("write event for %s: %w", e.FindingID, err)
	}
	if fresh {
		return nil
	}
	if _, err := u.trim.ExecContext(ctx, e.FindingID, findings.MaxEventsPerFinding); err != nil {
		return fmt.Errorf("trim events for %s: %w", e.FindingID, err)
	}
	return nil
}

// Get returns one finding, with the active findings it explains
// (Explains, Inhibits) filled in.
func (s *Store) Get(ctx context.Context, id string) (findings.Finding, error) {
	f, err := getFinding(ctx, s.db, id)
	if err != nil {
		return f, err
	}
	f.Explains, err = explained(ctx, s.db, id)
	f.Inhibits = len(f.Explains)
	return f, err
}

// explained returns the ids of the active findings parentID explains, in
// id order.
func explained(ctx context.Context, q querier, parentID string) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT id FROM findings INDEXED BY findings_inhibited_by
		WHERE status = 'active' AND inhibited_by = ? AND inhibited_by != '' ORDER BY id`, parentID)
	if err != nil {
		return nil, fmt.Errorf("explained findings: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// List returns every finding matching filter, most severe and most
// recently detected first. A filter that does not validate is an *InputError.
func (s *Store) List(ctx context.Context, filter findings.ListFilter) ([]findings.Finding, error) {
	where, args, err := filterWhere(filter)
	if err != nil {
		return nil, err
	}
	return queryFindings(ctx, s.db, where+" ORDER BY "+severityRank+", detected_at DESC, id", args...)
}

// severityRank is the list order: the net's findings before the model's
// (so model findings never hide deterministic ones), each most severe
// first. The list indexes (migration 00013) are built on this expression.
const severityRank = `(CASE WHEN source = 'model' THEN 4 ELSE 0 END + CASE severity WHEN 'critical' THEN 0 WHEN 'warning' THEN 1 WHEN 'watch' THEN 2 ELSE 3 END)`

// ListPage returns one page of the findings matching filter in List's
// order, and the cursor of the next page ("" after the last).
func (s *Store) ListPage(ctx context.Context, filter findings.ListFilter, page findings.Page) ([]findings.Finding, string, error) {
	where, args, err := filterWhere(filter)
	if err != nil {
		return nil, "", err
	}
	limit, key, err := page.Resolve("findings", 3)
	if err != nil {
		return nil, "", err
	}
	if key != nil {
		rank, _ := strconv.Atoi(key[0])
		if where == "" {
			where = "WHERE "
		} else {
			where += " AND "
		}
		where += "(" + severityRank + " > ? OR (" + severityRank + " = ? AND (detected_at < ? OR (detected_at = ? AND id > ?))))"
		args = append(args, rank, rank, key[1], key[1], key[2])
	}
	list, err := queryFindings(ctx, s.db, where+" ORDER BY "+severityRank+", detected_at DESC, id LIMIT ?", append(args, limit+1)...)
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(list) > limit {
		list = list[:limit]
		last := &list[limit-1]
		next = findings.NextCursor("findings", strconv.Itoa(rankOf(last.Source, last.Severity)), fmtTime(last.DetectedAt), last.ID)
	}
	return list, next, nil
}

// rankOf is severityRank of a finding.
func rankOf(src findings.Source, s findings.Severity) int {
	base := 0
	if src == findings.SourceModel {
		base = 4
	}
	return base + severityOnlyRank(s)
}

func severityOnlyRank(s findings.Severity) int {
	switch s {
	case findings.SeverityCritical:
		return 0
	case findings.SeverityWarning:
		return 1
	case findings.SeverityWatch:
		return 2
	}
	return 3
}

func filterWhere(filter findings.ListFilter) (string, []any, error) {
	if err := filter.Validate(); err != nil {
		return "", nil, err
	}
	var conds []string
	var args []any
	switch filter.Status {
	case "", "active":
		conds = append(conds, "status = 'active'")
	case "all":
	default:
		conds = append(conds, "status = ?")
		args = append(args, filter.Status)
	}
	if filter.Severity != "" {
		conds = append(conds, "severity = ?")
		args = append(args, filter.Severity)
	}
	if filter.ResourceID != "" {
		conds = append(conds, "resource_id = ?")
		args = append(args, filter.ResourceID)
	}
	where := ""
	if len(conds) > 0 {
		where = "WHERE " + strings.Join(conds, " AND ")
	}
	return where, args, nil
}

// Active returns every active finding.
func (s *Store) Active(ctx context.Context) ([]findings.Finding, error) {
	return queryFindings(ctx, s.db, "WHERE status = 'active'")
}

// Events returns the lifecycle history of a finding, oldest first.
func (s *Store) Events(ctx context.Context, id string) ([]findings.Event, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT finding_id, at, kind, detail, run_id FROM finding_events WHERE finding_id = ? ORDER BY seq", id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []findings.Event
	for rows.Next() {
		var e findings.Event
		var at string
		if err := rows.Scan(&e.FindingID, &at, &e.Kind, &e.Detail, &e.RunID); err != nil {
			return nil, err
		}
		e.At = parseTime(at)
		out = append(out, e)
	}
	return out, rows.Err()
}

// Count returns the number of stored findings (every status).
func (s *Store) Count(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM findings").Scan(&n)
	return n, err
}

// Transitions are stored as comma-separated Unix nanoseconds: cheap to read
// back for every active finding on every run.
func formatTransitions(ts []time.Time) string {
	b := make([]byte, 0, len(ts)*20)
	for i, t := range ts {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, t.UnixNano(), 10)
	}
	return string(b)
}

func parseTransitions(s string) []time.Time {
	if s == "" || s == "[]" {
		return nil
	}
	out := make([]time.Time, 0, strings.Count(s, ",")+1)
	for _, part := range strings.Split(s, ",") {
		if n, err := strconv.ParseInt(part, 10, 64); err == nil {
			out = append(out, time.Unix(0, n).UTC())
		}
	}
	return out
}

// ActiveKeys returns the identity facts of every active finding: what
// hysteresis needs before detection. The slice is read-only: from the
// active findings the last run commit kept (while the findings version
// confirms them), it is shared by the calls until a finding joins or
// leaves them.
//
// Without kept findings it reads the active findings whole, once, and
// keeps them as a commit would have left them. That is a fresh process
// (`patrold run`, a daemon's first run), or another writer moved the
// version. The run that asked commits next and needs them whole. It then
// reads them back from memory (while the version confirms them) instead
// of a second time.
func (s *Store) ActiveKeys(ctx context.Context) ([]findings.Finding, error) {
	if keys, ok := activeKeys(ctx, &s.active, s.db); ok {
		return keys, nil
	}
	st, err := s.readActive(ctx)
	if err != nil {
		return nil, fmt.Errorf("active keys: %w", err)
	}
	if st.byID == nil {
		return nil, nil
	}
	return st.keyList, nil
}

// readActive reads the active findings whole with the findings version
// they are at, and keeps them (up to MaxCachedActive) when the version is
// the same after the read as before it: no finding was written between.
// The slice is sized by a count first (an index-only scan): a Finding is
// large, and growing the slice row by row copies every one read so far.
// The count is only a capacity; rows added in between are still read.
func (s *Store) readActive(ctx context.Context) (activeState, error) {
	before, err := findingsVersion(ctx, s.db)
	if err != nil {
		return activeState{}, err
	}
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM findings WHERE status = 'active'").Scan(&n); err != nil {
		return activeState{}, err
	}
	read, err := queryFindingsSized(ctx, s.db, n, "WHERE status = 'active'")
	if err != nil {
		return activeState{}, err
	}
	after, err := findingsVersion(ctx, s.db)
	if err != nil {
		return activeState{}, err
	}
	if len(read) == 0 {
		return activeState{}, nil
	}
	st := activeState{byID: make(map[string]findings.Finding, len(read))}
	for i := range read {
		st.byID[read[i].ID] = read[i]
	}
	st.order = slices.Sorted(maps.Keys(st.byID))
	st.keyList = identities(st.byID)
	if before == after && len(st.byID) <= MaxCachedActive {
		s.active.put(st, before)
	}
	return st, nil
}
