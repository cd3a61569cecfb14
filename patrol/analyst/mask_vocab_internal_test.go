package analyst

import (
	"reflect"
	"testing"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model/mask"
	"github.com/patrold/patrold/patrol"
	"github.com/patrold/patrold/snapshot"
)

// TestMaskVocabularyHasActiveFindingNames: a finding whose resource left
// the snapshot still sends its title, node and tags, so its name, node
// and tags are masked although no resource of the run carries them.
func TestMaskVocabularyHasActiveFindingNames(t *testing.T) {
	in := patrol.AnalysisInput{
		Snapshot: &snapshot.Snapshot{Version: 1},
		Active: []findings.Finding{{ResourceID: "vm/9", ResourceName: "gone-db", ResourceNode: "pve9",
			ResourceTags: []string{"tenant-acme"}}},
	}
	want := mask.ForSnapshot(in.Snapshot, "vm/9")
	want.Names = append(want.Names, "gone-db", "pve9")
	want.Tags = append(want.Tags, "tenant-acme")
	if got := maskVocabulary(in); !reflect.DeepEqual(got, want) {
		t.Fatalf("vocabulary\n%+v\nwant\n%+v", got, want)
	}
}
