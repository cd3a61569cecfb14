package ground_test

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/patrold/patrold/model/ground"
	"github.com/patrold/patrold/snapshot"
)

// TestExtractClaims: figures are bound to the quantity their clause
// names, with their unit and precision; names, ids and times are not
// figures; number words are.
func TestExtractClaims(t *testing.T) {
	fig := func(text string, v float64, dec int, unit ground.Unit, fam string, th bool) ground.Figure {
		return ground.Figure{Text: text, Value: v, Decimals: dec, Unit: unit, Family: fam, Threshold: th}
	}
	cases := []struct {
		text, implied string
		want          ground.Claims
	}{
		{"usage 96.3% on storage/pve1/local-zfs.", "", ground.Claims{
			Figures: []ground.Figure{fig("96.3", 96.3, 1, ground.UnitPercent, "usage", false)}, IDs: []string{"storage/pve1/local-zfs"}}},
		{"pve1 and sdb3 are names; so is db-1", "", ground.Claims{}},
		{"VM/101 memory at 91%, 2 pending sectors, backup 52h old", "", ground.Claims{
			Figures: []ground.Figure{fig("91", 91, 0, ground.UnitPercent, "memory", false), fig("2", 2, 0, "", "pending", false),
				fig("52", 52, 0, ground.UnitSeconds, "backup", false)}, IDs: []string{"vm/101"}}},
		{"last run 2026-11-29 02:10, at 06:00", "", ground.Claims{Times: []string{"2026-11-29T02:10", "06:00"}}},
		{"memory_percent 91 above the trigger 80", "", ground.Claims{
			Figures: []ground.Figure{fig("91", 91, 0, "", "memory", false), fig("80", 80, 0, "", "memory", true)}}},
		{"memory ninety-nine percent, 3 TB lost", "disk", ground.Claims{
			Figures: []ground.Figure{fig("ninety-nine", 99, 0, ground.UnitPercent, "memory", false), fig("3", 3, 0, ground.UnitBytes, "memory", false)}}},
		{"at 95%; 29 inodes left", "disk", ground.Claims{
			Figures: []ground.Figure{fig("95", 95, 0, ground.UnitPercent, "disk", false), fig("29", 29, 0, ground.UnitCount, "", false)}}},
		{"memory99.7% on node pve9", "", ground.Claims{
			Figures: []ground.Figure{fig("99.7", 99.7, 1, ground.UnitPercent, "memory", false)}, Nodes: []string{"pve9"}}},
		{"", "", ground.Claims{}},
	}
	for _, c := range cases {
		got := ground.ExtractClaims(c.text, c.implied)
		for i := range got.Figures {
			got.Figures[i].Scales = nil
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", c.text, got, c.want)
		}
	}
}

// FuzzExtractClaims: every figure is a finite number bound at most to
// a known family, every id is canonical, and a text seen only as free text (a
// VM's notes) supports none of its own figures.
func FuzzExtractClaims(f *testing.F) {
	for _, seed := range []string{"usage 96.3% on storage/pve1/local-zfs", "VM/101 91% 2026-11-29T02:10:00Z", "pve1 sdb3 v1.2.3", "", "node/", "disk/a/b/c/ 007", "memory ninety-nine percent", "memory -9.97e1% XCIX hundreds"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		c := ground.ExtractClaims(text, "")
		for _, fig := range c.Figures {
			if math.IsNaN(fig.Value) || math.IsInf(fig.Value, 0) {
				t.Fatalf("figure %+v is not a number", fig)
			}
		}
		for _, id := range c.IDs {
			if snapshot.CanonicalID(id) != id {
				t.Fatalf("id %q is not canonical", id)
			}
		}
		doc, err := json.Marshal(map[string]string{"id": "vm/1", "notes": text})
		if err != nil {
			t.Fatal(err)
		}
		c2 := ground.NewCorpus()
		c2.Add(doc)
		bad := c2.Unsupported("vm/1", "", nil, text)
		if len(c.Figures) > 0 && len(bad) == 0 {
			t.Fatalf("free text supports its own figures %+v", c.Figures)
		}
	})
}

// TestGroundingIsPerResource: a figure, a time or an id is supported only
// by what a tool result showed about the resource the text is about:
// another resource's memory, backup time or parent does not ground it.
func TestGroundingIsPerResource(t *testing.T) {
	c := ground.NewCorpus()
	for _, r := range []string{
		`{"resources":[{"id":"vm/101","metrics":{"memory_percent":41},"backup":{"last_finished_at":"2026-11-29T02:10:00Z"}},` +
			`{"id":"vm/102","parent":"node/pve2","metrics":{"memory_percent":95},"backup":{"last_finished_at":"2026-11-28T03:00:00Z"}}]}`,
		`{"id":"node/pve2","metrics":{"cpu_percent":7}}`,
	} {
		c.Add([]byte(r))
	}
	text := "memory 95% since 2026-11-28T03:00 on node/pve2; memory 41% at 02:10"
	if got, want := c.Unsupported("vm/101", "high_memory", nil, text), []string{"2026-11-28T03:00", "95 % (memory)", "node/pve2"}; !slices.Equal(got, want) {
		t.Errorf("about vm/101: unsupported %q, want %q", got, want)
	}
	if got, want := c.Unsupported("vm/102", "high_memory", nil, text), []string{"02:10", "41 % (memory)"}; !slices.Equal(got, want) {
		t.Errorf("about vm/102: unsupported %q, want %q", got, want)
	}
	got, stripped := c.Strip("vm/101", "high_memory", nil, text, "[x]")
	if want := "memory [x]% since [x] on [x]; memory 41% at 02:10"; got != want || !slices.Equal(stripped, []string{"95", "2026-11-28T03:00", "node/pve2"}) {
		t.Errorf("Strip = %q %q, want %q", got, stripped, want)
	}
}

// TestGroundingReadsTheParityQuantities: swap, IO wait, ZFS checksum
// errors, a replication job's fail_count and a cluster's quorum are quantities a claim can name, and a
// cluster id is a resource a tool result shows. A figure of another
// family, or another resource's, is still refused.
func TestGroundingReadsTheParityQuantities(t *testing.T) {
	c := ground.NewCorpus()
	for _, r := range []string{
		`{"id":"node/pve1","metrics":{"cpu_percent":25,"swap_percent":86,"iowait_percent_avg":18,"window_seconds":900}}`,
		`{"id":"storage/pve1/zpool/rpool","zfs":{"state":"DEGRADED","checksum_errors":3}}`,
		`{"id":"cluster/pve-prod","quorum":{"quorate":false,"nodes":3,"nodes_online":1}}`,
		`{"id":"vm/102","replication":{"jobs":[{"id":"102-0","target":"pve2","fail_count":3,"interval_seconds":900}]}}`,
	} {
		c.Add([]byte(r))
	}
	cases := []struct {
		id, key, text string
		want          []string
	}{
		{"node/pve1", "high_swap", "swap_percent 86", nil},
		{"node/pve1", "high_swap", "node pve1 is swapping: 86% of its swap in use", nil},
		{"node/pve1", "high_swap", "swap 25%", []string{"25 % (swap)"}},
		{"node/pve1", "high_iowait", "iowait_percent_avg 18 over window_seconds 900", nil},
		{"node/pve1", "high_iowait", "IO wait 18%", nil},
		{"storage/pve1/zpool/rpool", "zfs_pool_degraded", "state DEGRADED, checksum_errors 3", nil},
		{"storage/pve1/zpool/rpool", "zfs_pool_degraded", "4 checksum errors", []string{"4 (checksum)"}},
		{"cluster/pve-prod", "quorum_lost", "cluster/pve-prod lost quorum: nodes_online 1, nodes 3", nil},
		{"vm/102", "replication_failed", "fail_count 3", nil},
		{"vm/102", "replication_failed", "its job has 3 failures", nil},
		{"vm/102", "replication_failed", "fail_count 4", []string{"4 (failures)"}},
		{"node/pve1", "high_swap", "its cluster cluster/pve-other lost quorum", []string{"cluster/pve-other"}},
	}
	for _, tc := range cases {
		if got := c.Unsupported(tc.id, tc.key, nil, tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("%s %q: unsupported %q, want %q", tc.id, tc.text, got, tc.want)
		}
	}
	if !c.Read("cluster/pve-prod") {
		t.Error("a tool result showed cluster/pve-prod, yet Read says it did not")
	}
}
