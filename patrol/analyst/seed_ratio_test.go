package analyst_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/script"
	"github.com/patrold/patrold/patrol/analyst"
	"github.com/patrold/patrold/snapshot"
	"github.com/patrold/patrold/snapshot/demo"
)

// maxSeedRatio is the goal for the seed context: at most 5 % of the naive
// prompt that sends the whole snapshot (10k resources, 1 % faults).
const maxSeedRatio = 0.05

// firstRequest records the first request the model stages send (the
// detection loop's opening: policy, tools and the seed context).
type firstRequest struct {
	model.Provider
	mu    sync.Mutex
	first *model.Request
}

func (p *firstRequest) Chat(ctx context.Context, req model.Request) (*model.Response, error) {
	p.mu.Lock()
	if p.first == nil {
		r := req
		p.first = &r
	}
	p.mu.Unlock()
	return p.Provider.Chat(ctx, req)
}

// seedRatio runs the model stages once over snap and returns the estimated
// tokens of the opening request and of the naive prompt: the same policy
// and tools with the whole snapshot document as the one user message.
func seedRatio(tb testing.TB, snap *snapshot.Snapshot) (seed, naive int) {
	tb.Helper()
	p, err := script.New(&script.Script{Turns: []script.Turn{text("Done.")}})
	if err != nil {
		tb.Fatal(err)
	}
	rec := &firstRequest{Provider: p}
	a, err := analyst.New(analyst.Options{Provider: rec})
	if err != nil {
		tb.Fatal(err)
	}
	analyze(tb, a, input(tb, snap))
	if rec.first == nil {
		tb.Fatal("the model stages sent no request")
	}
	doc, err := json.Marshal(snap)
	if err != nil {
		tb.Fatal(err)
	}
	whole := model.Request{System: rec.first.System, Tools: rec.first.Tools, Messages: []model.Message{{Role: model.RoleUser, Content: string(doc)}}}
	return model.EstimateTokens(*rec.first), model.EstimateTokens(whole)
}

func seedFleet() *snapshot.Snapshot {
	return demo.Generate(demo.Options{Seed: 1, Resources: 10_000, FaultRate: 0.01}, time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC))
}

// TestSeedContextIsSmall asserts the seed-context goal: the opening request
// over 10k resources with 1 % faults is at most 5 % of the naive prompt.
func TestSeedContextIsSmall(t *testing.T) {
	seed, naive := seedRatio(t, seedFleet())
	ratio := float64(seed) / float64(naive)
	t.Logf("seed %d tokens, naive prompt %d tokens: %.2f %%", seed, naive, 100*ratio)
	if seed <= 0 || ratio > maxSeedRatio {
		t.Fatalf("seed context is %.2f %% of the naive prompt (%d of %d tokens), want at most %.0f %%", 100*ratio, seed, naive, 100*maxSeedRatio)
	}
}

// BenchmarkSeedContext reports the seed-context ratio (seed_%) over 10k
// resources with 1 % faults; the time is one pass of the model stages with
// a one-turn script plus encoding the naive prompt.
func BenchmarkSeedContext(b *testing.B) {
	snap := seedFleet()
	var seed, naive int
	for b.Loop() {
		seed, naive = seedRatio(b, snap)
	}
	b.ReportMetric(100*float64(seed)/float64(naive), "seed_%")
	b.ReportMetric(float64(seed), "seed_tokens")
	b.ReportMetric(float64(naive), "naive_tokens")
}
