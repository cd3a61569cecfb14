package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/patrold/patrold/agent"
	"github.com/patrold/patrold/internal/modelfake"
	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/anthropic"
	"github.com/patrold/patrold/model/mask"
	"github.com/patrold/patrold/model/openai"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/patrol/analyst"
)

const weakWindow, weakOutput = 16384, 1024

func weakEndpoint(url string) model.EndpointOptions {
	return model.EndpointOptions{BaseURL: url, Model: "fake-7b", Timeout: 2 * time.Second, ContextWindow: weakWindow, MaxOutputTokens: weakOutput}
}

// weakRun evaluates one corpus scenario against a fake server.
func weakRun(t *testing.T, scenario string, newProvider func() (model.Provider, error)) Figures {
	t.Helper()
	return weakRunWindow(t, scenario, weakWindow, newProvider)
}

// weakRunWindow is weakRun with the stages built for window tokens.
func weakRunWindow(t *testing.T, scenario string, window int, newProvider func() (model.Provider, error)) Figures {
	t.Helper()
	scs, err := Corpus()
	if err != nil {
		t.Fatal(err)
	}
	var sc *Scenario
	for _, s := range scs {
		if s.Name == scenario {
			sc = s
		}
	}
	return weakRunOn(t, sc, window, false, newProvider)
}

// weakRunOn evaluates one scenario, names masked when masked is true.
func weakRunOn(t *testing.T, sc *Scenario, window int, masked bool, newProvider func() (model.Provider, error)) Figures {
	t.Helper()
	fixed := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	res, err := Run(context.Background(), Options{
		Scenarios: []*Scenario{sc}, OpenStore: openStore, TempDir: t.TempDir(), Clock: func() time.Time { return fixed },
		Provider: func(*Scenario) (model.Provider, error) { return newProvider() }, Bars: DefaultBars(), ContextTokens: window,
		Analyst: func(p model.Provider, reg prometheus.Registerer) (patrol.Analyst, error) {
			am, err := agent.NewMetrics(reg)
			if err != nil {
				return nil, err
			}
			return analyst.New(analyst.Options{Provider: p, Registerer: reg, AgentMetrics: am, Model: "fake-7b",
				ContextWindow: window, MaxOutputTokens: weakOutput, MaskNames: masked})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return res.Scenarios[0].Runs[0]
}

func oneRecall(x float64) *float64 { return &x }

// fakeAPI is one fake server kind and the client that speaks its wire.
type fakeAPI struct {
	name   string
	server func(testing.TB, ...modelfake.Turn) *modelfake.Server
	// client builds the provider for srv, its endpoint changed by edit.
	client func(srv *modelfake.Server, edit func(*model.EndpointOptions)) (model.Provider, error)
}

var fakeAPIs = []fakeAPI{
	{"openai", modelfake.OpenAI, func(srv *modelfake.Server, edit func(*model.EndpointOptions)) (model.Provider, error) {
		e := weakEndpoint(srv.URL + "/v1")
		if edit != nil {
			edit(&e)
		}
		return openai.New(openai.Options{Endpoint: e})
	}},
	{"anthropic", modelfake.Anthropic, func(srv *modelfake.Server, edit func(*model.EndpointOptions)) (model.Provider, error) {
		e := weakEndpoint(srv.URL)
		if edit != nil {
			edit(&e)
		}
		return anthropic.New(anthropic.Options{Endpoint: e})
	}},
}

// expectFigures compares whole figures; the largest request follows the
// prompt's wording and is only checked to have been measured.
func expectFigures(t *testing.T, got, want Figures) {
	t.Helper()
	if got.LargestRequestTokens <= 0 || got.LargestRequestTokens > weakWindow {
		t.Errorf("largest request %d tokens", got.LargestRequestTokens)
	}
	want.LargestRequestTokens = got.LargestRequestTokens
	// The fakes here keep no cache: every request after the first
	// reports UsageInput tokens, none read from a cache.
	if want.Requests > 1 && want.LaterInputTokens == 0 {
		want.LaterInputTokens = (want.Requests - 1) * modelfake.UsageInput
		want.CachedShare = ratio(0, want.LaterInputTokens)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("figures\n%+v\nwant\n%+v", got, want)
	}
}

// TestWeakOpenAIModelLeaksCalls: an OpenAI-compatible model that writes
// its calls into the text (in a fence, then bare) still reads and files:
// the calls are made through the pre-checks, and the storage signal is
// the model's.
func TestWeakOpenAIModelLeaksCalls(t *testing.T) {
	srv := modelfake.OpenAI(t,
		modelfake.Turn{Text: "I will read the pool.\n```json\n{\"name\": \"get_resource\", \"arguments\": {\"id\": \"storage/pve1/local-zfs\"}}\n```"},
		modelfake.Turn{Text: `{"name": "report_finding", "arguments": {"resource_id": "storage/pve1/local-zfs", "category": "capacity", "key": "high_disk", "severity": "critical", "title": "ZFS pool almost full", "evidence": "usage_percent 96.3"}}`},
		modelfake.Turn{Text: "Done."},
	)
	f := weakRun(t, "storage-critical", func() (model.Provider, error) {
		return openai.New(openai.Options{Endpoint: weakEndpoint(srv.URL + "/v1")})
	})
	expectFigures(t, f, Figures{Status: patrol.StatusCritical, StatusReasons: []string{}, Missed: []SignalRef{}, Recall: oneRecall(1), Precision: oneRecall(1),
		Counts: Counts{Signals: 1, FiledByModel: 1, ModelFindings: 1, Supported: 1, Turns: 3, Requests: 3,
			InputTokens: 3 * modelfake.UsageInput, OutputTokens: 3 * modelfake.UsageOutput}})
	// The second request carries the leaked call as a proper one, and no
	// request shows it as text.
	reqs := srv.Requests()
	if !bytes.Contains(reqs[1], []byte(`"tool_calls":[{"id":"leak_1_1"`)) || bytes.Contains(reqs[1], []byte("```json")) {
		t.Fatalf("second request:\n%s", reqs[1])
	}
}

// TestWeakOpenAIModelCutsJSON: cut-off arguments get MALFORMED_TOOL_CALL
// back (the next turn offers the read tools only, as after any refused
// turn); the model reads again, sends the call whole and it is filed.
func TestWeakOpenAIModelCutsJSON(t *testing.T) {
	report := `{"resource_id": "storage/pve1/local-zfs", "category": "capacity", "key": "high_disk", "severity": "critical", "title": "ZFS pool almost full", "evidence": "usage_percent 96.3"}`
	srv := modelfake.OpenAI(t,
		modelfake.Turn{Calls: []modelfake.Call{{Name: "get_resource", Args: `{"id": "storage/pve1/local-zfs"}`}}},
		modelfake.Turn{Calls: []modelfake.Call{{Name: "report_finding", Args: report[:60]}}},
		modelfake.Turn{Calls: []modelfake.Call{{Name: "get_resource", Args: `{"id": "storage/pve1/local-zfs"}`}}},
		modelfake.Turn{Calls: []modelfake.Call{{Name: "report_finding", Args: report}}},
		modelfake.Turn{Text: "Done."},
	)
	f := weakRun(t, "storage-critical", func() (model.Provider, error) {
		return openai.New(openai.Options{Endpoint: weakEndpoint(srv.URL + "/v1")})
	})
	expectFigures(t, f, Figures{Status: patrol.StatusCritical, StatusReasons: []string{}, Missed: []SignalRef{}, Recall: oneRecall(1), Precision: oneRecall(1),
		Counts: Counts{Signals: 1, FiledByModel: 1, ModelFindings: 1, Supported: 1, RefusedCalls: 1, Turns: 5, Requests: 5,
			InputTokens: 5 * modelfake.UsageInput, OutputTokens: 5 * modelfake.UsageOutput}})
	if reqs := srv.Requests(); !bytes.Contains(reqs[2], []byte("MALFORMED_TOOL_CALL")) {
		t.Fatalf("third request has no MALFORMED_TOOL_CALL:\n%s", reqs[2])
	}
}

// TestWeakAnthropicModelIgnoresTools: a model that only talks files
// nothing; the daemon files the signal and eval counts it missed. The read
// it leaks in the evaluation pass is made, not shown.
func TestWeakAnthropicModelIgnoresTools(t *testing.T) {
	srv := modelfake.Anthropic(t,
		modelfake.Turn{Text: "The storage looks full, you should look at it."},
		modelfake.Turn{Text: "<tool_call>{\"name\": \"get_resource\", \"arguments\": {\"id\": \"storage/pve1/local-zfs\"}}</tool_call>"},
		modelfake.Turn{Text: "It is full."},
	)
	f := weakRun(t, "storage-critical", func() (model.Provider, error) {
		return anthropic.New(anthropic.Options{Endpoint: weakEndpoint(srv.URL)})
	})
	expectFigures(t, f, Figures{Status: patrol.StatusCritical, StatusReasons: []string{}, Recall: oneRecall(0),
		Missed: []SignalRef{{Type: "high_disk", ResourceID: "storage/pve1/local-zfs", Severity: "critical"}},
		Counts: Counts{Signals: 1, Turns: 3, Requests: 3, InputTokens: 3 * modelfake.UsageInput, OutputTokens: 3 * modelfake.UsageOutput}})
	// The evaluation pass's leaked read went out as a tool_use block.
	if reqs := srv.Requests(); !bytes.Contains(reqs[2], []byte(`"id":"leak_1_1"`)) || bytes.Contains(reqs[2], []byte("<tool_call>")) {
		t.Fatalf("third request:\n%s", reqs[2])
	}
}

// TestWeakModelTooSmallOrSlow: a server whose context is smaller than the
// request, and one that answers after the client's timeout, fail the
// model stages (model_failed); every signal is still filed.
func TestWeakModelTooSmallOrSlow(t *testing.T) {
	small := modelfake.OpenAI(t)
	small.ContextTokens = 100
	slow := modelfake.OpenAI(t, modelfake.Turn{Delay: 2 * time.Second, Text: "late"})
	for name, build := range map[string]func() (model.Provider, error){
		"context": func() (model.Provider, error) {
			return openai.New(openai.Options{Endpoint: weakEndpoint(small.URL + "/v1")})
		},
		"slow": func() (model.Provider, error) {
			e := weakEndpoint(slow.URL + "/v1")
			e.Timeout = 200 * time.Millisecond
			return openai.New(openai.Options{Endpoint: e})
		},
	} {
		f := weakRun(t, "storage-critical", build)
		if f.Status != patrol.StatusDegraded || !reflect.DeepEqual(f.StatusReasons, []string{patrol.ReasonModelFailed}) || f.FiledByModel != 0 || len(f.Missed) != 1 {
			t.Errorf("%s: %+v", name, f)
		}
	}
}

// TestSmallContextCutsOldToolResults: a model with a context of 8192
// tokens pages through a large fleet. Each page is a long tool result;
// the composer cuts the oldest with a notice so every request stays
// within the window, and the fake server (which refuses anything over
// it, as real servers do) answers every one.
func TestSmallContextCutsOldToolResults(t *testing.T) {
	page := func(offset int) modelfake.Turn {
		return modelfake.Turn{Calls: []modelfake.Call{{Name: "list_resources", Args: fmt.Sprintf(`{"limit": 100, "offset": %d}`, offset)}}}
	}
	turns := []modelfake.Turn{page(0), page(100), page(200), page(300), {Text: "Done."}}
	const window = 8192
	for _, api := range fakeAPIs {
		t.Run(api.name, func(t *testing.T) {
			srv := api.server(t, turns...)
			srv.ContextTokens = window
			f := weakRunWindow(t, "large-fleet-faults", window, func() (model.Provider, error) {
				return api.client(srv, func(e *model.EndpointOptions) { e.ContextWindow = window })
			})
			if f.LargestRequestTokens+weakOutput > window {
				t.Errorf("largest request %d tokens plus %d output is over the window %d", f.LargestRequestTokens, weakOutput, window)
			}
			f.LargestRequestTokens = 0
			missed := []SignalRef{{Type: "backup_failed", ResourceID: "vm/1277", Severity: "warning"}, {Type: "backup_stale", ResourceID: "vm/1277", Severity: "warning"},
				{Type: "high_memory", ResourceID: "vm/1407", Severity: "warning"}, {Type: "guest_unreachable", ResourceID: "container/1876", Severity: "warning"}}
			want := Figures{Status: patrol.StatusIssuesFound, StatusReasons: []string{}, Missed: missed, Recall: oneRecall(0),
				CachedShare: ratio(0, 5*modelfake.UsageInput),
				Counts: Counts{Signals: 4, Turns: 6, Requests: 6, InputTokens: 6 * modelfake.UsageInput, OutputTokens: 6 * modelfake.UsageOutput,
					LaterInputTokens: 5 * modelfake.UsageInput}}
			if !reflect.DeepEqual(f, want) {
				t.Fatalf("figures\n%+v\nwant\n%+v", f, want)
			}
			// Every request fitted the server; the pages before the newest
			// were cut, each with its notice, and uncut they would not.
			notice := regexp.MustCompile(`\[patrold: this tool result was cut to its first (\d+) of (\d+) bytes`)
			var notices []int
			reqs := srv.Requests()
			for _, r := range reqs {
				if n := modelfake.PromptTokens(r); n > window {
					t.Errorf("a request of %d tokens reached the server", n)
				}
				notices = append(notices, len(notice.FindAllSubmatch(r, -1)))
			}
			if want := []int{0, 0, 1, 2, 3, 0}; !reflect.DeepEqual(notices, want) {
				t.Fatalf("cut notices per request %v, want %v", notices, want)
			}
			cut := 0
			for _, m := range notice.FindAllSubmatch(reqs[4], -1) {
				kept, _ := strconv.Atoi(string(m[1]))
				had, _ := strconv.Atoi(string(m[2]))
				cut += had - kept
			}
			if uncut := modelfake.PromptTokens(reqs[4]) + cut/4; uncut <= 2*window {
				t.Fatalf("the fifth request uncut would be %d tokens: the test no longer needs cuts", uncut)
			}
		})
	}
}

// streamedTurns write a call into the text in a fence, then bare, then
// make a proper call whose arguments arrive in pieces too.
var streamedTurns = []modelfake.Turn{
	{Text: "I will read the pool.\n```json\n{\"name\": \"get_resource\", \"arguments\": {\"id\": \"storage/pve1/local-zfs\"}}\n```"},
	{Calls: []modelfake.Call{{Name: "get_resource", Args: `{"id": "storage/pve1/local-zfs"}`}}},
	{Text: `{"name": "report_finding", "arguments": {"resource_id": "storage/pve1/local-zfs", "category": "capacity", "key": "high_disk", "severity": "critical", "title": "ZFS pool almost full", "evidence": "usage_percent 96.3"}}`},
	{Text: "Done."},
}

// TestStreamedLeaksAreCalls: with stream on, the fakes send every answer
// in 5-byte server-sent events, so each leaked call is split across
// dozens of chunks. The answer is assembled before the leak check reads
// it: both leaked calls are made, none is sent back as text.
func TestStreamedLeaksAreCalls(t *testing.T) {
	for _, api := range fakeAPIs {
		t.Run(api.name, func(t *testing.T) {
			srv := api.server(t, streamedTurns...)
			f := weakRun(t, "storage-critical", func() (model.Provider, error) {
				return api.client(srv, func(e *model.EndpointOptions) { e.Stream = true })
			})
			expectFigures(t, f, Figures{Status: patrol.StatusCritical, StatusReasons: []string{}, Missed: []SignalRef{}, Recall: oneRecall(1), Precision: oneRecall(1),
				Counts: Counts{Signals: 1, FiledByModel: 1, ModelFindings: 1, Supported: 1, Turns: 4, Requests: 4,
					InputTokens: 4 * modelfake.UsageInput, OutputTokens: 4 * modelfake.UsageOutput}})
			reqs := srv.Requests()
			for i, r := range reqs {
				if !bytes.Contains(r, []byte(`"stream":true`)) {
					t.Fatalf("request %d did not ask for a stream:\n%.300s", i+1, r)
				}
				for _, leak := range []string{"```json", `\"name\": \"get_resource\"`, `\"name\": \"report_finding\"`} {
					if bytes.Contains(r, []byte(leak)) {
						t.Fatalf("request %d shows the leaked call as text (%s):\n%s", i+1, leak, r)
					}
				}
			}
			if !bytes.Contains(reqs[1], []byte(`"leak_1_1"`)) || !bytes.Contains(reqs[3], []byte(`"leak_3_1"`)) {
				t.Fatalf("the leaked calls were not sent back as calls:\n%s\n%s", reqs[1], reqs[3])
			}
		})
	}
}

// TestStreamedAnswerIsTheWholeAnswer: one answer streamed in pieces and
// the same answer unstreamed give the same Response.
func TestStreamedAnswerIsTheWholeAnswer(t *testing.T) {
	turn := modelfake.Turn{Text: "Reading two — ünïcode included.", Calls: []modelfake.Call{
		{ID: "c1", Name: "get_resource", Args: `{"id": "vm/101"}`}, {ID: "c2", Name: "list_resources", Args: `{"kind": "storage", "limit": 20}`}}}
	req := model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "go"}}}
	for _, api := range fakeAPIs {
		t.Run(api.name, func(t *testing.T) {
			var got []*model.Response
			for _, stream := range []bool{false, true} {
				srv := api.server(t, turn)
				srv.ChunkBytes = 3
				p, err := api.client(srv, func(e *model.EndpointOptions) { e.Stream = stream })
				if err != nil {
					t.Fatal(err)
				}
				resp, err := p.Chat(context.Background(), req)
				if err != nil {
					t.Fatalf("stream %v: %v", stream, err)
				}
				got = append(got, resp)
			}
			if !reflect.DeepEqual(got[0], got[1]) {
				t.Fatalf("unstreamed\n%+v\nstreamed\n%+v", got[0], got[1])
			}
			if got[1].Text != turn.Text || len(got[1].ToolCalls) != 2 || string(got[1].ToolCalls[1].Arguments) != `{"kind":"storage","limit":20}` {
				t.Fatalf("streamed answer %+v", got[1])
			}
		})
	}
}

// TestBrokenStreamIsMalformed: a stream whose events do not decode, or
// that opens a content block out of order, is a malformed response (a
// breaker failure), never a partial answer.
func TestBrokenStreamIsMalformed(t *testing.T) {
	for name, tc := range map[string]struct {
		path, body string
		build      func(url string) (model.Provider, error)
	}{
		"openai not json": {"/v1/chat/completions", "data: {\"id\": \"x\", \"choices\": [\n\n", func(url string) (model.Provider, error) {
			e := weakEndpoint(url + "/v1")
			e.Stream = true
			return openai.New(openai.Options{Endpoint: e})
		}},
		"openai another completion": {"/v1/chat/completions", "data: {\"id\":\"a\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hel\"},\"finish_reason\":null}]}\n\n" +
			"data: {\"id\":\"b\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n", func(url string) (model.Provider, error) {
			e := weakEndpoint(url + "/v1")
			e.Stream = true
			return openai.New(openai.Options{Endpoint: e})
		}},
		"anthropic delta out of order": {"/v1/messages", "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"fake\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"hello\"}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":4,\"delta\":{\"type\":\"text_delta\",\"text\":\" world\"}}\n\n" +
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":2}}\n\n" +
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", func(url string) (model.Provider, error) {
			e := weakEndpoint(url)
			e.Stream = true
			return anthropic.New(anthropic.Options{Endpoint: e})
		}},
		"anthropic block order": {"/v1/messages", "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"fake\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n", func(url string) (model.Provider, error) {
			e := weakEndpoint(url)
			e.Stream = true
			return anthropic.New(anthropic.Options{Endpoint: e})
		}},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != tc.path {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			p, err := tc.build(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := p.Chat(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "go"}}})
			if resp != nil || model.KindOf(err) != model.ErrorMalformed {
				t.Fatalf("resp %+v, err %v (kind %q), want a malformed response", resp, err, model.KindOf(err))
			}
		})
	}
}

// maskedScenario has a name, tags, addresses and notes worth hiding.
const maskedScenario = `name: masked-fleet
description: A guest short of memory whose names must not leave the daemon.
snapshot:
  version: 1
  taken_at: "2026-11-29T06:00:00Z"
  resources:
    - {id: node/pve-alpha, kind: node, name: pve-alpha, status: online, addresses: ["192.0.2.10:8006"], metrics: {cpu_percent: 25, memory_percent: 60}}
    - {id: vm/210, kind: vm, name: billing-db, parent: node/pve-alpha, status: running, reachable: true,
       tags: [prod-eu, "pci<zone>"], addresses: ["10.20.30.40:22", "[fd00:20::40]:22"],
       notes: "replica of billing-db-main at 10.20.30.41, failover peer fd00:20::40",
       metrics: {cpu_percent: 22, memory_percent: 91, disk_percent: 64},
       backup: {last_status: ok, last_finished_at: "2026-11-29T02:00:00Z", last_success_at: "2026-11-29T02:00:00Z"}}
expect:
  signals:
    - {type: high_memory, resource_id: vm/210, severity: warning}
  findings:
    - {resource_id: vm/210, category: performance, key: high_memory, severity: warning,
       title: "Guest is short of memory", evidence: "memory_percent 91"}
`

// TestMaskedNamesNeverReachTheModel is the attack test of model.mask_names:
// the model sees only placeholders, reads and files by placeholder, and
// the finding is filed on the real resource. No request body holds a
// real id, name, tag or address, in any form JSON gives it.
func TestMaskedNamesNeverReachTheModel(t *testing.T) {
	scs, err := LoadFS(fstest.MapFS{"masked.yaml": {Data: []byte(maskedScenario)}})
	if err != nil {
		t.Fatal(err)
	}
	sc := scs[0]
	m := mask.New(mask.ForSnapshot(sc.Snapshot()))
	vm := m.Mask("vm/210")
	if vm == "vm/210" || !strings.HasPrefix(vm, "vm/masked-id-") {
		t.Fatalf("vm/210 masks as %q", vm)
	}
	for _, api := range fakeAPIs {
		t.Run(api.name, func(t *testing.T) {
			srv := api.server(t,
				// A placeholder the model made up is refused (UNKNOWN_PLACEHOLDER).
				modelfake.Turn{Calls: []modelfake.Call{{Name: "get_resource", Args: fmt.Sprintf(`{"id": %q}`, vm)}, {Name: "get_resource", Args: `{"id": "vm/masked-id-99"}`}}},
				modelfake.Turn{Calls: []modelfake.Call{{Name: "report_finding", Args: fmt.Sprintf(`{"resource_id": %q, "category": "performance", "key": "high_memory", "severity": "warning", "title": "Guest is short of memory", "evidence": "memory_percent 91 on %s"}`, vm, vm)}}},
				modelfake.Turn{Text: "Filed " + vm + "."},
			)
			f := weakRunOn(t, sc, weakWindow, true, func() (model.Provider, error) { return api.client(srv, nil) })
			expectFigures(t, f, Figures{Status: patrol.StatusIssuesFound, StatusReasons: []string{}, Missed: []SignalRef{}, Recall: oneRecall(1), Precision: oneRecall(1),
				Counts: Counts{Signals: 1, FiledByModel: 1, ModelFindings: 1, Supported: 1, RefusedCalls: 1, Turns: 3, Requests: 3,
					InputTokens: 3 * modelfake.UsageInput, OutputTokens: 3 * modelfake.UsageOutput}})
			terms := []string{"vm/210", "node/pve-alpha", "pve-alpha", "billing-db", "prod-eu", "pci<zone>", "10.20.30.40", "10.20.30.41", "fd00:20::40", "192.0.2.10"}
			reqs := srv.Requests()
			for i, body := range reqs {
				for _, term := range terms {
					for _, form := range jsonForms(term) {
						if bytes.Contains(body, []byte(form)) {
							t.Errorf("request %d carries %q (as %q)", i+1, term, form)
						}
					}
				}
			}
			// The read reached the real resource: its masked view went back.
			if !bytes.Contains(reqs[1], []byte(m.Mask("billing-db"))) || !bytes.Contains(reqs[1], []byte("91")) {
				t.Fatalf("second request has no masked view of the guest:\n%s", reqs[1])
			}
			if !bytes.Contains(reqs[1], []byte("UNKNOWN_PLACEHOLDER")) {
				t.Fatalf("the made-up placeholder was not refused:\n%s", reqs[1])
			}
		})
	}
}

// jsonForms are the ways a term can appear in a request body: as is,
// JSON-escaped once (in a string) and twice (in JSON text in a string).
func jsonForms(term string) []string {
	once, _ := json.Marshal(term)
	twice, _ := json.Marshal(string(once))
	out := []string{term, string(once[1 : len(once)-1]), string(twice[3 : len(twice)-3])}
	return out
}
