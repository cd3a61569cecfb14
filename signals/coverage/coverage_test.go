package coverage

import (
	"reflect"
	"slices"
	"testing"

	"github.com/patrold/patrold/signals"
)

// TestJudge: the three verdicts from a list of four checks, for a
// Proxmox source and for a file source (which reads every field).
func TestJudge(t *testing.T) {
	list := []Check{
		{Name: "quorum", Rules: []Rule{{APAPVE, "quorate 0"}}, Key: "quorum_lost", Patrold: fixed("quorate false"), Data: "cluster quorum", Reads: []string{"proxmox"}},
		{Name: "scrub", Key: "zfs_scrub_overdue", Data: "scan state", Reads: []string{"proxmox"}},
		{Name: "api", Key: "source_failing", Own: true, Data: "the source", Reads: []string{"proxmox", "prometheus"}},
		{Name: "inodes", Rules: []Rule{{APANode, "under 10 %"}}, Data: "inodes"},
	}
	detected := func(key string) bool { return key == "quorum_lost" }
	got := judge(list, []string{"prometheus"}, detected)
	want := []Row{
		{Check: "quorum", Rules: []Rule{{APAPVE, "quorate 0"}}, Key: "quorum_lost", Patrold: "quorate false", Verdict: NotEvaluable,
			Why: "no configured source (prometheus) reads cluster quorum; read by proxmox"},
		{Check: "scrub", Key: "zfs_scrub_overdue", Verdict: NotImplemented, Why: "no detector files zfs_scrub_overdue yet"},
		{Check: "api", Key: "source_failing", Verdict: Covered},
		{Check: "inodes", Rules: []Rule{{APANode, "under 10 %"}}, Verdict: NotImplemented, Why: "patrold has no detector for it"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("prometheus source:\n got %+v\nwant %+v", got, want)
	}
	got = judge(list, []string{"file"}, detected)
	want[0].Verdict, want[0].Why = Covered, ""
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("file source:\n got %+v\nwant %+v", got, want)
	}
}

// TestChecksAreWellFormed: every row names known anchors, a detector key
// is a catalogue key or one patrold files about itself, and a row with a
// key says where its data comes from.
func TestChecksAreWellFormed(t *testing.T) {
	names := map[string]bool{}
	for _, c := range Checks() {
		if c.Name == "" || names[c.Name] {
			t.Errorf("check %q: empty or repeated name", c.Name)
		}
		names[c.Name] = true
		for _, r := range c.Rules {
			if !slices.Contains(Anchors, r.Anchor) || r.Rule == "" {
				t.Errorf("check %q: rule %+v names no known anchor or no rule", c.Name, r)
			}
		}
		if c.Key != "" && (c.Patrold == nil || len(c.Reads) == 0 || c.Data == "") {
			t.Errorf("check %q: key %s without patrold's rule, its data or who reads it", c.Name, c.Key)
		}
		if c.Key == "" && (c.Patrold != nil || len(c.Rules) == 0) {
			t.Errorf("check %q: no key, so it needs an anchor's rule and no patrold rule", c.Name)
		}
	}
	for _, typ := range signals.Types {
		if !slices.ContainsFunc(Checks(), func(c Check) bool { return c.Key == string(typ) }) {
			t.Errorf("catalogue key %s has no check", typ)
		}
	}
}
