package findings

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/patrold/patrold/snapshot"
)

// Matchers select the findings a silence applies to. Every given matcher
// must hold; at least one must be given.
type Matchers struct {
	Resource   string   `json:"resource,omitempty"` // resource id glob
	Kind       string   `json:"kind,omitempty"`
	Category   string   `json:"category,omitempty"`
	SignalType string   `json:"signal_type,omitempty"` // finding key
	Tags       []string `json:"tags,omitempty"`
}

// Silence mutes matching findings for a time: they are recorded, not
// published and not investigated.
type Silence struct {
	ID        string    `json:"id"`
	Matchers  Matchers  `json:"matchers"`
	Comment   string    `json:"comment"`
	Author    string    `json:"author"`
	StartsAt  time.Time `json:"starts_at"`
	EndsAt    time.Time `json:"ends_at"`
	CreatedAt time.Time `json:"created_at"`
}

// MaxSilence bounds how long one silence may last.
const MaxSilence = 90 * 24 * time.Hour

// A silence's window must be near now: it may start at most
// MaxSilenceBackdate in the past (a late entry for a maintenance that began
// a little earlier) and at most MaxSilenceLead ahead, and it must end after
// now. Anything else is a typo, and a far-off time would be stored as a
// row that cannot be expired.
const (
	MaxSilenceBackdate = 24 * time.Hour
	MaxSilenceLead     = 365 * 24 * time.Hour
)

// ValidateAt is Validate plus the window's place relative to now. Each
// problem is one "field: problem" line.
func (s *Silence) ValidateAt(now time.Time) error {
	var errs []error
	if err := s.Validate(); err != nil {
		errs = append(errs, err)
	}
	switch {
	case s.StartsAt.Before(now.Add(-MaxSilenceBackdate)):
		errs = append(errs, fmt.Errorf("starts_at: %s is more than %s in the past", s.StartsAt.UTC().Format(time.RFC3339), MaxSilenceBackdate))
	case s.StartsAt.After(now.Add(MaxSilenceLead)):
		errs = append(errs, fmt.Errorf("starts_at: %s is more than %s ahead", s.StartsAt.UTC().Format(time.RFC3339), MaxSilenceLead))
	}
	if !s.EndsAt.IsZero() && !s.EndsAt.After(now) && s.EndsAt.After(s.StartsAt) {
		errs = append(errs, fmt.Errorf("ends_at: %s is not in the future", s.EndsAt.UTC().Format(time.RFC3339)))
	}
	return errors.Join(errs...)
}

// silenceInput turns validation lines into an *InputError naming the
// first field.
func silenceInput(err error) error {
	msg := err.Error()
	field, problem, ok := strings.Cut(msg, ": ")
	if !ok || strings.Contains(field, " ") {
		return &InputError{Field: "silence", Problem: msg}
	}
	return &InputError{Field: field, Problem: strings.ReplaceAll(problem, "\n", "; ")}
}

// Validate names the offending field.
func (s *Silence) Validate() error {
	var errs []error
	m := s.Matchers
	if m.Resource == "" && m.Kind == "" && m.Category == "" && m.SignalType == "" && len(m.Tags) == 0 {
		errs = append(errs, errors.New("matchers: at least one of resource, kind, category, signal_type, tags is required"))
	}
	if m.Resource != "" {
		if err := snapshot.ValidGlob(m.Resource); err != nil {
			errs = append(errs, fmt.Errorf("matchers.resource: %w", err))
		}
	}
	if m.Kind != "" && !snapshot.Kind(m.Kind).Valid() {
		errs = append(errs, fmt.Errorf("matchers.kind: unknown kind %q", m.Kind))
	}
	if m.Category != "" && NormalizeCategory(m.Category) != Category(strings.ToLower(m.Category)) {
		errs = append(errs, fmt.Errorf("matchers.category: unknown category %q", m.Category))
	}
	if strings.TrimSpace(s.Comment) == "" {
		errs = append(errs, errors.New("comment: required"))
	}
	if strings.TrimSpace(s.Author) == "" {
		errs = append(errs, errors.New("author: required"))
	}
	switch {
	case s.EndsAt.IsZero():
		errs = append(errs, errors.New("ends_at: required"))
	case !s.EndsAt.After(s.StartsAt):
		errs = append(errs, errors.New("ends_at: must be after starts_at"))
	case s.EndsAt.Sub(s.StartsAt) > MaxSilence:
		errs = append(errs, fmt.Errorf("ends_at: a silence may last at most %s", MaxSilence))
	}
	return errors.Join(errs...)
}

// Active reports whether the silence is in force at now.
func (s *Silence) Active(now time.Time) bool { return !now.Before(s.StartsAt) && now.Before(s.EndsAt) }

// Matches reports whether the silence's matchers select f.
func (m Matchers) Matches(f *Finding) bool {
	if m.Resource != "" && !snapshot.Glob(m.Resource, f.ResourceID) {
		return false
	}
	if m.Kind != "" && !strings.EqualFold(m.Kind, f.ResourceKind) {
		return false
	}
	if m.Category != "" && !strings.EqualFold(m.Category, string(f.Category)) {
		return false
	}
	if m.SignalType != "" && NormalizeKey(m.SignalType) != f.Key {
		return false
	}
	for _, t := range m.Tags {
		found := false
		for _, ft := range f.ResourceTags {
			if strings.EqualFold(t, ft) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// SilenceSet is the silences in force at one moment.
type SilenceSet []Silence

// Silenced reports whether any silence matches f.
func (ss SilenceSet) Silenced(f *Finding) bool {
	for i := range ss {
		if ss[i].Matchers.Matches(f) {
			return true
		}
	}
	return false
}

// AddSilence validates and stores a silence, returning it with its id.
func (s *Store) AddSilence(ctx context.Context, sil Silence, now time.Time) (Silence, error) {
	if sil.StartsAt.IsZero() {
		sil.StartsAt = now
	}
	if err := sil.ValidateAt(now); err != nil {
		return sil, silenceInput(err)
	}
	sil.ID, sil.CreatedAt = NewID(now), now
	m, _ := json.Marshal(sil.Matchers)
	_, err := s.db.ExecContext(ctx, "INSERT INTO silences (id, matchers, comment, author, starts_at, ends_at, created_at) VALUES (?,?,?,?,?,?,?)",
		sil.ID, string(m), sil.Comment, sil.Author, fmtTime(sil.StartsAt), fmtTime(sil.EndsAt), fmtTime(now))
	if err != nil {
		return sil, fmt.Errorf("add silence: %w", err)
	}
	return sil, nil
}

// ExpireSilence ends a silence now (DELETE /silences).
func (s *Store) ExpireSilence(ctx context.Context, id string, now time.Time) error {
	res, err := s.db.ExecContext(ctx, "UPDATE silences SET ends_at = ? WHERE id = ? AND ends_at > ?", fmtTime(now), id, fmtTime(now))
	if err != nil {
		return fmt.Errorf("expire silence: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("silence %s: %w", id, ErrNotFound)
	}
	return nil
}

// Silences returns every silence (active and expired) newest first, or
// only those active at now when activeOnly.
func (s *Store) Silences(ctx context.Context, now time.Time, activeOnly bool) ([]Silence, error) {
	return listSilences(ctx, s.db, now, activeOnly)
}

// SilencesPage returns one page of silences, newest first (only those
// active at now when activeOnly), and the cursor of the next page.
func (s *Store) SilencesPage(ctx context.Context, now time.Time, activeOnly bool, page Page) ([]Silence, string, error) {
	limit, key, err := page.Resolve("silences", 2)
	if err != nil {
		return nil, "", err
	}
	where, args := "", []any{}
	if activeOnly {
		where, args = "WHERE starts_at <= ? AND ends_at > ? ", []any{fmtTime(now), fmtTime(now)}
	}
	if key != nil {
		if where == "" {
			where = "WHERE "
		} else {
			where += "AND "
		}
		where += "(created_at, id) < (?, ?) "
		args = append(args, key[0], key[1])
	}
	rows, err := s.db.QueryContext(ctx, "SELECT id, matchers, comment, author, starts_at, ends_at, created_at FROM silences "+where+
		"ORDER BY created_at DESC, id DESC LIMIT ?", append(args, limit+1)...)
	if err != nil {
		return nil, "", fmt.Errorf("list silences: %w", err)
	}
	defer rows.Close()
	out := []Silence{}
	for rows.Next() {
		sil, err := scanSilence(rows)
		if err != nil {
			return nil, "", err
		}
		if !activeOnly || sil.Active(now) {
			out = append(out, sil)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = encodeCursor("silences", fmtTime(out[limit-1].CreatedAt), out[limit-1].ID)
	}
	return out, next, nil
}

func scanSilence(sc scanner) (Silence, error) {
	var sil Silence
	var m, st, en, cr string
	if err := sc.Scan(&sil.ID, &m, &sil.Comment, &sil.Author, &st, &en, &cr); err != nil {
		return sil, err
	}
	_ = json.Unmarshal([]byte(m), &sil.Matchers)
	sil.StartsAt, sil.EndsAt, sil.CreatedAt = parseTime(st), parseTime(en), parseTime(cr)
	return sil, nil
}

func listSilences(ctx context.Context, q querier, now time.Time, activeOnly bool) ([]Silence, error) {
	rows, err := q.QueryContext(ctx, "SELECT id, matchers, comment, author, starts_at, ends_at, created_at FROM silences ORDER BY created_at DESC")
	if err != nil {
		return nil, fmt.Errorf("list silences: %w", err)
	}
	defer rows.Close()
	var out []Silence
	for rows.Next() {
		var sil Silence
		var m, st, en, cr string
		if err := rows.Scan(&sil.ID, &m, &sil.Comment, &sil.Author, &st, &en, &cr); err != nil {
			return nil, err
		}
		_ = json.Unmarshal([]byte(m), &sil.Matchers)
		sil.StartsAt, sil.EndsAt, sil.CreatedAt = parseTime(st), parseTime(en), parseTime(cr)
		if !activeOnly || sil.Active(now) {
			out = append(out, sil)
		}
	}
	return out, rows.Err()
}

var _ = sql.ErrNoRows
