package eval

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/patrold/patrold/alerts"
	"github.com/patrold/patrold/signals"
	"github.com/patrold/patrold/store"
)

// TestCorpusMatchesTheNet: every scenario's expected signals are exactly
// what a deterministic run detects, and the corpus covers what docs/MODELS.md
// promises (at least 20 scenarios, every signal type alone).
func TestCorpusMatchesTheNet(t *testing.T) {
	scs, err := Corpus()
	if err != nil {
		t.Fatal(err)
	}
	if len(scs) < 20 {
		t.Fatalf("corpus has %d scenarios, want at least 20", len(scs))
	}
	pol, err := alerts.New(alerts.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, sc := range scs {
		t.Run(sc.Name, func(t *testing.T) {
			st, err := store.Open(ctx, filepath.Join(t.TempDir(), "net.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if err := prepare(ctx, st, pol, sc); err != nil {
				t.Fatal(err)
			}
			rep, err := patrolOnce(ctx, st, pol, nil, sc.Snapshot())
			if err != nil {
				t.Fatal(err)
			}
			var got, want []string
			for _, s := range rep.Signals {
				got = append(got, fmt.Sprintf("{type: %s, resource_id: %s, severity: %s}", s.Type, s.ResourceID, s.Severity))
			}
			for _, s := range sc.Expect.Signals {
				want = append(want, fmt.Sprintf("{type: %s, resource_id: %s, severity: %s}", s.Type, s.ResourceID, s.Severity))
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("the net detects\n  - %s\nthe scenario expects\n  - %s", strings.Join(got, "\n  - "), strings.Join(want, "\n  - "))
			}
		})
	}
}

// TestCorpusFilesAreTheEmbeddedOnes: `--scenarios eval/scenarios` and the
// embedded corpus are the same scenarios.
func TestCorpusFilesAreTheEmbeddedOnes(t *testing.T) {
	emb, err := Corpus()
	if err != nil {
		t.Fatal(err)
	}
	disk, err := LoadFS(os.DirFS("scenarios"))
	if err != nil {
		t.Fatal(err)
	}
	if len(emb) != len(disk) {
		t.Fatalf("embedded %d, on disk %d", len(emb), len(disk))
	}
	for i := range emb {
		if emb[i].Name != disk[i].Name || emb[i].File() != disk[i].File() {
			t.Errorf("%d: embedded %s (%s), on disk %s (%s)", i, emb[i].Name, emb[i].File(), disk[i].Name, disk[i].File())
		}
	}
}

// TestCorpusHasEveryDetectorAlone: for every catalogue type, a scenario
// whose net detects that type and no other, so eval measures a model on
// each detector (docs/MODELS.md).
func TestCorpusHasEveryDetectorAlone(t *testing.T) {
	scs, err := Corpus()
	if err != nil {
		t.Fatal(err)
	}
	alone := map[signals.Type]string{}
	for _, sc := range scs {
		types := map[signals.Type]bool{}
		for _, s := range sc.Expect.Signals {
			types[s.Type] = true
		}
		if len(types) == 1 {
			for typ := range types {
				alone[typ] = sc.Name
			}
		}
	}
	for _, typ := range signals.Types {
		if alone[typ] == "" {
			t.Errorf("no scenario has %s alone", typ)
		}
	}
}
