package prometheus

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/patrold/patrold/snapshot"
)

// QueryFailureID is the Problem.ID of a failed query; its Field is
// "query.<name>" and its Index -1.
const QueryFailureID = "(source)"

// QueryFailure reports whether p records a failed query, and which.
func QueryFailure(p snapshot.Problem) (query string, ok bool) {
	if p.ID != QueryFailureID {
		return "", false
	}
	return strings.CutPrefix(p.Field, "query.")
}

type queryResult struct {
	spec   querySpec
	vector model.Vector
	err    error
}

// Collect queries Prometheus at the current time.
func (s *Source) Collect(ctx context.Context) (*snapshot.Snapshot, []snapshot.Problem, error) {
	return s.CollectAt(ctx, time.Now().UTC())
}

// CollectAt evaluates every query at now (also the snapshot's taken_at).
// Failed queries come back as problems (see QueryFailure) with the resources
// of their family left out; if every query fails the result is an error.
func (s *Source) CollectAt(ctx context.Context, now time.Time) (*snapshot.Snapshot, []snapshot.Problem, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	results := s.query(ctx, now)

	b := newBuilder(s.opts.Labels, s.opts.Window)
	failed := map[family]bool{}
	var failures []snapshot.Problem
	for _, r := range results {
		if r.err != nil {
			failed[r.spec.family] = true
			failures = append(failures, snapshot.Problem{ID: QueryFailureID, Index: -1, Field: "query." + r.spec.name,
				Problem: fmt.Sprintf("%v; %s resources left out of this snapshot", r.err, r.spec.family)})
			continue
		}
		for _, sample := range r.vector {
			if !r.spec.apply(b, sample) {
				s.metrics.skipped.WithLabelValues(r.spec.name).Inc()
			}
		}
	}
	if len(failures) == len(results) {
		return nil, nil, fmt.Errorf("collect: all %d prometheus queries failed, first: query %s: %w",
			len(results), results[0].spec.name, results[0].err)
	}
	// Round-trip through the codec so these resources pass the same
	// validation as any other snapshot document.
	data, err := snapshot.Encode(b.snapshot(now, failed))
	if err != nil {
		return nil, nil, fmt.Errorf("collect: encode: %w", err)
	}
	snap, problems, err := snapshot.Decode(data, snapshot.DecodeOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("collect: %w", err)
	}
	return snap, append(problems, failures...), nil
}

// query runs the enabled queries with at most Concurrency in flight and
// returns their results in table order.
func (s *Source) query(ctx context.Context, now time.Time) []queryResult {
	var enabled []querySpec
	for _, spec := range specs {
		if strings.TrimSpace(*spec.get(&s.opts.Queries)) != QueryOff {
			enabled = append(enabled, spec)
		}
	}
	results := make([]queryResult, len(enabled))
	sem := make(chan struct{}, s.opts.Concurrency)
	var wg sync.WaitGroup
	for i, spec := range enabled {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				results[i] = queryResult{spec: spec, err: fmt.Errorf("not started: %w", ctx.Err())}
				s.metrics.failures.WithLabelValues(spec.name).Inc()
				return
			}
			results[i] = s.one(ctx, spec, now)
		}()
	}
	wg.Wait()
	return results
}

func (s *Source) one(ctx context.Context, spec querySpec, now time.Time) queryResult {
	q := expand(*spec.get(&s.opts.Queries), model.Duration(s.opts.Window), model.Duration(s.opts.RateWindow))
	start := time.Now()
	value, _, _, err := s.api.Query(ctx, q, now)
	s.metrics.duration.WithLabelValues(spec.name).Observe(time.Since(start).Seconds())
	if err == nil {
		switch v := value.(type) {
		case model.Vector:
			return queryResult{spec: spec, vector: v}
		case nil:
			err = fmt.Errorf("empty result, want an instant vector")
		default:
			err = fmt.Errorf("result is a %s, want an instant vector", v.Type())
		}
	}
	s.metrics.failures.WithLabelValues(spec.name).Inc()
	return queryResult{spec: spec, err: err}
}
