package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/patrold/patrold/findings"
)

// AddSilence validates and stores a silence, returning it with its id.
func (s *Store) AddSilence(ctx context.Context, sil findings.Silence, now time.Time) (findings.Silence, error) {
	sil, err := findings.PrepareSilence(sil, now)
	if err != nil {
		return sil, err
	}
	m, _ := json.Marshal(sil.Matchers)
	_, err = s.exec(ctx, "INSERT INTO silences (id, matchers, comment, author, starts_at, ends_at, created_at) VALUES (?,?,?,?,?,?,?)",
		sil.ID, string(m), sil.Comment, sil.Author, fmtTime(sil.StartsAt), fmtTime(sil.EndsAt), fmtTime(now))
	if err != nil {
		return sil, fmt.Errorf("add silence: %w", err)
	}
	return sil, nil
}

// ExpireSilence ends a silence now (DELETE /silences).
func (s *Store) ExpireSilence(ctx context.Context, id string, now time.Time) error {
	res, err := s.exec(ctx, "UPDATE silences SET ends_at = ? WHERE id = ? AND ends_at > ?", fmtTime(now), id, fmtTime(now))
	if err != nil {
		return fmt.Errorf("expire silence: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("silence %s: %w", id, findings.ErrNotFound)
	}
	return nil
}

// Silences returns every silence (active and expired) newest first, or
// only those active at now when activeOnly.
func (s *Store) Silences(ctx context.Context, now time.Time, activeOnly bool) ([]findings.Silence, error) {
	return listSilences(ctx, s.db, now, activeOnly)
}

// SilencesPage returns one page of silences, newest first (only those
// active at now when activeOnly), and the cursor of the next page.
func (s *Store) SilencesPage(ctx context.Context, now time.Time, activeOnly bool, page findings.Page) ([]findings.Silence, string, error) {
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
	out := []findings.Silence{}
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
		next = findings.NextCursor("silences", fmtTime(out[limit-1].CreatedAt), out[limit-1].ID)
	}
	return out, next, nil
}

func scanSilence(sc scanner) (findings.Silence, error) {
	var sil findings.Silence
	var m, st, en, cr string
	if err := sc.Scan(&sil.ID, &m, &sil.Comment, &sil.Author, &st, &en, &cr); err != nil {
		return sil, err
	}
	_ = json.Unmarshal([]byte(m), &sil.Matchers)
	sil.StartsAt, sil.EndsAt, sil.CreatedAt = parseTime(st), parseTime(en), parseTime(cr)
	return sil, nil
}

func listSilences(ctx context.Context, q querier, now time.Time, activeOnly bool) ([]findings.Silence, error) {
	rows, err := q.QueryContext(ctx, "SELECT id, matchers, comment, author, starts_at, ends_at, created_at FROM silences ORDER BY created_at DESC")
	if err != nil {
		return nil, fmt.Errorf("list silences: %w", err)
	}
	defer rows.Close()
	var out []findings.Silence
	for rows.Next() {
		var sil findings.Silence
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
