package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/patrold/patrold/findings"
)

// BenchmarkCommitRun measures CommitRun over n observations in three
// runs:
//   - a first run: every finding new, inserted with its events and outbox
//     rows;
//   - the steady state: every finding re-detected unchanged, one touch
//     statement;
//   - a regression run: every finding resolved before and observed again,
//     the stored history read in one lookup, each finding reopened and
//     published.
func BenchmarkCommitRun(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		obs := make([]findings.Observation, n)
		for i := range obs {
			obs[i] = fobs(fmt.Sprintf("vm/%d", i), "high_cpu", "warning", fmt.Sprintf("cpu_percent_avg %d.5 over 900 s", 80+i%20))
		}
		at := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
		b.Run(fmt.Sprintf("first/observations=%d", n), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				st := openStore(b)
				b.StartTimer()
				commit(b, st, at, true, obs...)
			}
		})
		b.Run(fmt.Sprintf("steady/observations=%d", n), func(b *testing.B) {
			st := openStore(b)
			commit(b, st, at, true, obs...)
			i := 0
			for b.Loop() {
				i++
				commit(b, st, at.Add(time.Duration(i)*time.Minute), true, obs...)
			}
		})
		b.Run(fmt.Sprintf("regression/observations=%d", n), func(b *testing.B) {
			st := openStore(b)
			i := 0
			for b.Loop() {
				b.StopTimer()
				i += 2
				commit(b, st, at.Add(time.Duration(i)*time.Hour), true) // resolves every finding
				b.StartTimer()
				commit(b, st, at.Add(time.Duration(i+1)*time.Hour), true, obs...)
			}
		})
	}
}

// BenchmarkActiveKeysCold is a fresh process's read of 11k active
// findings (ActiveKeys keeping nothing: every row read whole, as
// `patrold run` does before detecting).
func BenchmarkActiveKeysCold(b *testing.B) {
	obs := make([]findings.Observation, 11_000)
	for i := range obs {
		obs[i] = fobs(fmt.Sprintf("vm/%d", i), "high_cpu", "warning", fmt.Sprintf("cpu_percent_avg %d.5 over 900 s", 80+i%20))
	}
	st := openStore(b)
	commit(b, st, time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC), true, obs...)
	for b.Loop() {
		st.DropActiveCache()
		if keys, err := st.ActiveKeys(context.Background()); err != nil || len(keys) != len(obs) {
			b.Fatalf("%d keys, %v", len(keys), err)
		}
	}
}
