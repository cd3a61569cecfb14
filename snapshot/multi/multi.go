// Package multi is the snapshot source of several sources in one run
// (config sources): each member collects at the same time, and their
// documents merge into one snapshot (docs/SOURCES.md#several-sources).
//
// The merge keeps these rules:
//   - every member's resources are kept, in the order of the members;
//   - an id that two members both report is dropped from both, and each
//     copy is an invalid resource naming both members;
//   - every problem a member reports names that member (Problem.Source);
//   - a member that fails is one source-level problem (SourceFailed)
//     naming it, and the others are still patrolled;
//   - only when every member fails is the collection an error.
package multi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/patrold/patrold/snapshot"
)

// Member is one source of several, by the name its problems carry.
type Member struct {
	Name   string
	Source snapshot.Source
}

// Source collects every member and merges their snapshots. It is safe for
// concurrent use when its members are.
type Source struct {
	members []Member

	mu sync.Mutex
	// last holds each member's resource ids of its last collection that
	// succeeded (by member index; nil: none yet).
	last []map[string]bool
}

var (
	_ snapshot.Source          = (*Source)(nil)
	_ snapshot.UsageBackfiller = (*Source)(nil)
)

// New checks that every member has a source and a name of its own.
func New(members []Member) (*Source, error) {
	if len(members) == 0 {
		return nil, errors.New("sources: no source")
	}
	seen := map[string]bool{}
	for i, m := range members {
		switch {
		case m.Name == "":
			return nil, fmt.Errorf("sources[%d].name: required", i)
		case seen[m.Name]:
			return nil, fmt.Errorf("sources[%d].name: duplicate source name %q", i, m.Name)
		case m.Source == nil:
			return nil, fmt.Errorf("sources[%d]: no source", i)
		}
		seen[m.Name] = true
	}
	return &Source{members: members, last: make([]map[string]bool, len(members))}, nil
}

// Names are the members' names, in order.
func (s *Source) Names() []string {
	out := make([]string, len(s.members))
	for i, m := range s.members {
		out[i] = m.Name
	}
	return out
}

type result struct {
	snap     *snapshot.Snapshot
	problems []snapshot.Problem
	err      error
}

// Collect collects every member at once and merges what they return.
func (s *Source) Collect(ctx context.Context) (*snapshot.Snapshot, []snapshot.Problem, error) {
	results := make([]result, len(s.members))
	var wg sync.WaitGroup
	for i, m := range s.members {
		wg.Go(func() {
			snap, problems, err := m.Source.Collect(ctx)
			if err == nil && snap == nil {
				err = errors.New("no snapshot")
			}
			if err == nil {
				// A member that builds its resources itself has its ids
				// checked as a decoded document's are.
				problems = snapshot.DropUnfitIDs(snap, problems)
			}
			results[i] = result{snap, problems, err}
		})
	}
	wg.Wait()
	return s.merge(results)
}

func (s *Source) merge(results []result) (*snapshot.Snapshot, []snapshot.Problem, error) {
	var failed []error
	var problems []snapshot.Problem
	total := 0
	for i, r := range results {
		name := s.members[i].Name
		if r.err != nil {
			failed = append(failed, fmt.Errorf("%s: %w", name, r.err))
			problems = append(problems, snapshot.Problem{ID: "(source)", Index: -1, Field: snapshot.FieldCollect,
				Problem: r.err.Error(), Source: name})
			continue
		}
		total += len(r.snap.Resources)
		for _, p := range r.problems {
			p.Source = name
			problems = append(problems, p)
		}
	}
	if len(failed) == len(results) {
		return nil, nil, fmt.Errorf("every source failed: %w", errors.Join(failed...))
	}
	// The first member to report an id, and whether a later one did too.
	owner := make(map[string]int, total)
	dup := map[string][]int{}
	for i, r := range results {
		if r.err != nil {
			continue
		}
		for j := range r.snap.Resources {
			id := r.snap.Resources[j].ID
			first, ok := owner[id]
			switch {
			case !ok:
				owner[id] = i
			case first != i && !slices.Contains(dup[id], i):
				if len(dup[id]) == 0 {
					dup[id] = []int{first}
				}
				dup[id] = append(dup[id], i)
			}
		}
	}
	out := &snapshot.Snapshot{Version: snapshot.Version, Resources: make([]snapshot.Resource, 0, total)}
	var names []string
	for i, r := range results {
		if r.err != nil {
			continue
		}
		names = append(names, s.members[i].Name)
		if r.snap.TakenAt.After(out.TakenAt) {
			out.TakenAt = r.snap.TakenAt
		}
		for j := range r.snap.Resources {
			res := &r.snap.Resources[j]
			//mutate:duplicate-id-across-sources ./snapshot/multi ^TestDuplicateIDAcrossSources
			if by := dup[res.ID]; len(by) > 0 {
				problems = append(problems, snapshot.Problem{ID: snapshot.ProblemID(res.ID), Index: j, Field: "id",
					Problem: "duplicate id across sources " + s.quoted(by) + ": every copy dropped", Source: s.members[i].Name})
				continue
			}
			out.Resources = append(out.Resources, *res)
		}
	}
	out.Source = strings.Join(names, "+")
	s.remember(results)
	return out, problems, nil
}

// remember keeps the ids each member that succeeded reported.
func (s *Source) remember(results []result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range results {
		if r.err != nil {
			continue
		}
		ids := make(map[string]bool, len(r.snap.Resources))
		for j := range r.snap.Resources {
			ids[r.snap.Resources[j].ID] = true
		}
		s.last[i] = ids
	}
}

// Covers reports whether the resource id is one the named member
// reported in its last collection that succeeded. known is false when
// that member has not collected since this source was built: it may cover
// anything.
func (s *Source) Covers(member, id string) (covered, known bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, m := range s.members {
		if m.Name == member {
			if s.last[i] == nil {
				return false, false
			}
			return s.last[i][id], true
		}
	}
	return false, false
}

func (s *Source) quoted(members []int) string {
	q := make([]string, len(members))
	for i, m := range members {
		q[i] = fmt.Sprintf("%q", s.members[m].Name)
	}
	return strings.Join(q, " and ")
}

// BackfillUsage merges the past usage of the members that can tell it.
func (s *Source) BackfillUsage(now time.Time) map[string][]snapshot.UsagePoint {
	var out map[string][]snapshot.UsagePoint
	for _, m := range s.members {
		bf, ok := m.Source.(snapshot.UsageBackfiller)
		if !ok {
			continue
		}
		for id, pts := range bf.BackfillUsage(now) {
			if out == nil {
				out = map[string][]snapshot.UsagePoint{}
			}
			out[id] = append(out[id], pts...)
		}
	}
	return out
}
