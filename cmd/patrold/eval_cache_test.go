package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"testing"

	"github.com/patrold/patrold/eval"
	"github.com/patrold/patrold/internal/modelfake"
)

// fileDisk files the scenario's finding, so no evaluation stage follows.
var fileDisk = modelfake.Turn{Calls: []modelfake.Call{{ID: "f1", Name: "report_finding", Args: `{"resource_id":"storage/pve1/local-zfs",` +
	`"category":"capacity","key":"high_disk","severity":"critical","title":"ZFS pool almost full","evidence":"usage_percent 96.3"}`}}}

// TestEvalReportsCachedShare: `patrold eval` against an Anthropic model
// that caches reports, per scenario, the share of input read from the
// cache from the run's second request on, in the JSON and in the table's
// cached column; the run's second request reads back the first.
func TestEvalReportsCachedShare(t *testing.T) {
	srv := modelfake.Anthropic(t,
		modelfake.Turn{Calls: []modelfake.Call{{ID: "r1", Name: "get_resource", Args: `{"id":"storage/pve1/local-zfs"}`}}},
		fileDisk, modelfake.Turn{Text: "Done."})
	srv.Caching = true
	dir := evalDir(t, "06-storage-critical.yaml")
	c := newCLI(t, fmt.Sprintf("model: {provider: anthropic, anthropic: {base_url: %q, model: fake-7b, max_retries: 0}}\n", srv.URL))
	out, errOut, code := c.run3("eval", "--scenarios", dir, "--min-recall", "0", "--output", "json")
	if code != 0 {
		t.Fatalf("eval: exit %d %s\n%s", code, errOut, out)
	}
	var res eval.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	f := res.Scenarios[0].Runs[0]
	if f.Requests != 3 || f.FiledByModel != 1 || f.CacheReadTokens == 0 || f.LaterCacheReadTokens != f.CacheReadTokens || f.CachedShare == nil ||
		*f.CachedShare != float64(int(10000*float64(f.LaterCacheReadTokens)/float64(f.LaterInputTokens)+0.5))/10000 {
		t.Fatalf("figures: %+v share %v", f.Counts, f.CachedShare)
	}
	// Each request reads the whole one before it back: the second and
	// third read more than twice the first request's tokens in all.
	if first := f.InputTokens - f.LaterInputTokens; f.LaterCacheReadTokens < 2*first {
		t.Fatalf("the later requests read %d tokens, the first held %d", f.LaterCacheReadTokens, first)
	}
	c2 := newCLI(t, fmt.Sprintf("model: {provider: anthropic, anthropic: {base_url: %q, model: fake-7b, max_retries: 0}}\n", srv.URL))
	srv.Script(modelfake.Turn{Calls: []modelfake.Call{{ID: "r1", Name: "get_resource", Args: `{"id":"storage/pve1/local-zfs"}`}}},
		fileDisk, modelfake.Turn{Text: "Done."})
	text, _, code := c2.run3("eval", "--scenarios", dir, "--min-recall", "0")
	row := regexp.MustCompile(`(?m)^storage-critical .* (\d\.\d\d)  +\$`).FindStringSubmatch(text)
	if code != 0 || !regexp.MustCompile(`tokens in/out +cached +cost`).MatchString(text) || row == nil || row[1] != fmt.Sprintf("%.2f", *f.CachedShare) {
		t.Fatalf("table: exit %d, want the cached column at %.2f:\n%s", code, *f.CachedShare, text)
	}
}
