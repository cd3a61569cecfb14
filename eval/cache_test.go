package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/agent"
	"github.com/patrold/patrold/internal/modelfake"
	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/script"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/patrol/analyst"
)

// MinCachedShare is the measure of docs/PERFORMANCE.md#model-tokens: the
// share of input read from the prompt cache from a run's second request.
const MinCachedShare = 0.70

// cacheMinTokens is the shortest prefix OpenAI and Anthropic (Sonnet)
// cache: the tools and system text alone are shorter.
const cacheMinTokens = 1024

// fakeTurns is a reference script as the fake server's turns.
func fakeTurns(turns []script.Turn) []modelfake.Turn {
	out := make([]modelfake.Turn, 0, len(turns))
	for _, st := range turns {
		ft := modelfake.Turn{Text: st.Text}
		for _, c := range st.ToolCalls {
			ft.Calls = append(ft.Calls, modelfake.Call{ID: c.ID, Name: c.Name, Args: string(c.Arguments)})
		}
		out = append(out, ft)
	}
	return out
}

// cachedEval runs the perfect reference's answers over scs, repeat times,
// through api's real client against a caching fake: one fake a scenario,
// kept across its runs as a provider keeps its cache.
func cachedEval(t *testing.T, api fakeAPI, scs []*Scenario, repeat, minTokens int) (*Result, map[string]*modelfake.Server) {
	t.Helper()
	servers := map[string]*modelfake.Server{}
	fixed := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	res, err := Run(context.Background(), Options{
		Scenarios: scs, Repeat: repeat, OpenStore: openStore, TempDir: t.TempDir(), Clock: func() time.Time { return fixed },
		ProviderName: api.name, ModelName: "fake-7b", ContextTokens: weakWindow, Bars: DefaultBars(),
		Provider: func(sc *Scenario) (model.Provider, error) {
			srv := servers[sc.Name]
			if srv == nil {
				srv = api.server(t)
				srv.Caching = true
				srv.CacheMinTokens = minTokens
				servers[sc.Name] = srv
			}
			srv.Script(fakeTurns(perfectTurns(sc))...)
			return api.client(srv, nil)
		},
		Analyst: func(p model.Provider, reg prometheus.Registerer) (patrol.Analyst, error) {
			am, err := agent.NewMetrics(reg)
			if err != nil {
				return nil, err
			}
			return analyst.New(analyst.Options{Provider: p, Registerer: reg, AgentMetrics: am, Model: "fake-7b",
				ContextWindow: weakWindow, MaxOutputTokens: weakOutput})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return res, servers
}

// TestPromptCacheShare is the model-tokens measure: over the whole corpus,
// through each provider's real client and wire, every scenario reads at
// least MinCachedShare of its input from the cache from a run's second
// request on. The table is `patrold eval`'s (go test -v prints it).
func TestPromptCacheShare(t *testing.T) {
	scs, err := Corpus()
	if err != nil {
		t.Fatal(err)
	}
	for _, api := range fakeAPIs {
		t.Run(api.name, func(t *testing.T) {
			res, _ := cachedEval(t, api, scs, 2, cacheMinTokens)
			var out bytes.Buffer
			if err := WriteText(&out, res); err != nil {
				t.Fatal(err)
			}
			t.Logf("cached share per scenario (%s):\n%s", api.name, out.String())
			if path := os.Getenv("PATROLD_CACHE_TABLE"); path != "" {
				_ = os.WriteFile(path+"."+api.name, out.Bytes(), 0o644)
			}
			for _, sc := range res.Scenarios {
				for i, f := range sc.Runs {
					if f.CachedShare == nil {
						continue // a single request: nothing after the first
					}
					if *f.CachedShare < MinCachedShare {
						t.Errorf("%s run %d: cached share %.4f is below %.2f (%d of %d tokens)", sc.Name, i+1, *f.CachedShare,
							MinCachedShare, f.LaterCacheReadTokens, f.LaterInputTokens)
					}
				}
			}
			if o := res.Overall; o.CachedShare == nil || *o.CachedShare < MinCachedShare || o.CacheReadTokens == 0 {
				t.Errorf("overall cached share %v, %d tokens read", o.CachedShare, o.CacheReadTokens)
			}
		})
	}
}

// wireBody is what the stable prefix of a request body is made of.
type wireBody struct {
	System   json.RawMessage   `json:"system"`
	Tools    json.RawMessage   `json:"tools"`
	Messages []json.RawMessage `json:"messages"`
}

// TestStablePrefixIsByteIdentical: the requests of a run, and of a second
// run of the same scenario, carry the same tools and system text, byte
// for byte; on Anthropic the system block and the last message's last
// block carry cache_control; and the second run's first request reads the
// first run's prefix from the cache.
func TestStablePrefixIsByteIdentical(t *testing.T) {
	sc := scenarioNamed(t, "storage-critical")
	for _, api := range fakeAPIs {
		t.Run(api.name, func(t *testing.T) {
			// No minimum: the tools and system text alone are cached.
			res, servers := cachedEval(t, api, []*Scenario{sc}, 2, 0)
			reqs := servers[sc.Name].Requests()
			runs := res.Scenarios[0].Runs
			n := runs[0].Requests
			if n < 2 || runs[1].Requests != n || len(reqs) != 2*n {
				t.Fatalf("requests: %d and %d a run, %d in all", runs[0].Requests, runs[1].Requests, len(reqs))
			}
			bodies := make([]wireBody, len(reqs))
			for i, b := range reqs {
				if err := json.Unmarshal(b, &bodies[i]); err != nil {
					t.Fatal(err)
				}
			}
			first := bodies[0]
			for i, b := range bodies[1:] {
				// The scenario runs the detection stage only: one profile.
				if !bytes.Equal(b.Tools, first.Tools) {
					t.Errorf("request %d: tools differ from the first request's", i+2)
				}
				if !bytes.Equal(b.System, first.System) {
					t.Errorf("request %d: system differs:\n%s\n%s", i+2, b.System, first.System)
				}
				if api.name == "openai" && !bytes.Equal(b.Messages[0], first.Messages[0]) {
					t.Errorf("request %d: the system message differs:\n%s\n%s", i+2, b.Messages[0], first.Messages[0])
				}
			}
			for i := range n {
				if !bytes.Equal(bodies[i].Tools, bodies[n+i].Tools) {
					t.Errorf("request %d of the two runs: tools differ", i+1)
				}
			}
			if api.name == "anthropic" {
				for i, b := range bodies {
					var sys []map[string]any
					var last struct {
						Content []map[string]any `json:"content"`
					}
					_ = json.Unmarshal(b.System, &sys)
					_ = json.Unmarshal(b.Messages[len(b.Messages)-1], &last)
					want := map[string]any{"type": "ephemeral"}
					if len(sys) != 1 || !jsonEqual(sys[0]["cache_control"], want) || !jsonEqual(last.Content[len(last.Content)-1]["cache_control"], want) {
						t.Errorf("request %d: cache_control missing: system %v, last block %v", i+1, sys, last.Content)
					}
				}
			}
			// The first run's first request wrote what the second run's
			// first request reads: the tools and the system text.
			if runs[1].CacheReadTokens <= runs[0].CacheReadTokens {
				t.Errorf("cache reads %d then %d: the second run read no more", runs[0].CacheReadTokens, runs[1].CacheReadTokens)
			}
		})
	}
}

func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func scenarioNamed(t *testing.T, name string) *Scenario {
	t.Helper()
	scs, err := Corpus()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range scs {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no scenario %q", name)
	return nil
}
