package assistant

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/patrold/patrold/findings"
	"github.com/patrold/patrold/model"
	"github.com/patrold/patrold/model/ground"
)

// groundEvidence are tool results of a session about the storage: what
// resolve_target and check_condition show, and a finding read back.
var groundEvidence = []string{
	`{"ok":true,"result":{"finding_id":"6b5c62f7a6bf8def","key":"high_disk","resource":{"id":"storage/pve1/local-zfs","kind":"storage","parent":"node/pve1",` +
		`"metrics":{"usage_percent":96.3},"notes":"bought 2026, 99 percent full at 12 GB","logs":["error 42 at 03:10"]},"taken_at":"2026-11-29T06:00:00Z"}}`,
	`{"ok":true,"result":{"condition":"present","key":"high_disk","resource_id":"storage/pve1/local-zfs","value":96.3,"threshold":95,"taken_at":"2026-11-29T06:00:00Z"}}`,
}

// groundEnv is a session's env about the storage finding that has seen
// the evidence, as a resumed session seeds it.
func groundEnv(evidence []string) *env {
	e := &env{finding: findings.Finding{ID: "6b5c62f7a6bf8def", Key: "high_disk", ResourceID: "storage/pve1/local-zfs"}, corpus: ground.NewCorpus()}
	var msgs []model.Message
	for _, c := range evidence {
		msgs = append(msgs, model.Message{Role: model.RoleTool, Content: c})
	}
	e.seed(msgs)
	return e
}

// TestFileTextGroundsByMeaning: a note or reason keeps a figure only when
// it is the quantity its text names; free text, timestamps and other
// quantities ground nothing; ids must have been read.
func TestFileTextGroundsByMeaning(t *testing.T) {
	e := groundEnv(groundEvidence)
	cases := []struct {
		in, out  string
		stripped []string
	}{
		{"Usage is 96.3% on storage/pve1/local-zfs (threshold 95).", "Usage is 96.3% on storage/pve1/local-zfs (threshold 95).", nil},
		{"Usage fell to 12% on storage/pve9/x.", "Usage fell to [ungrounded]% on [ungrounded].", []string{"12", "storage/pve9/x"}},
		// The threshold is not the usage.
		{"Usage is 95% now.", "Usage is [ungrounded]% now.", []string{"95"}},
		// Free text (notes, logs) and timestamps support nothing.
		{"Usage 99 percent, 12 GB used, error 42.", "Usage [ungrounded] percent, [ungrounded] GB used, error [ungrounded].", []string{"99", "12", "42"}},
		{"2026 GB over quota, 29 inodes left.", "[ungrounded] GB over quota, [ungrounded] inodes left.", []string{"2026", "29"}},
		{"Checked at 2026-11-29T06:00:00Z; last seen at 07:45.", "Checked at 2026-11-29T06:00:00Z; last seen at [ungrounded].", []string{"07:45"}},
		// Number words are figures; the precision shown counts; units too.
		{"Usage ninety-nine percent.", "Usage [ungrounded] percent.", []string{"ninety-nine"}},
		{"Usage at 96%, not 97%.", "Usage at 96%, not [ungrounded]%.", []string{"97"}},
		{"3 TB lost.", "[ungrounded] TB lost.", []string{"3"}},
		// A node must have been read: the parent id in a result is not a read.
		{"Moved to node pve9 and node/pve1.", "Moved to node [ungrounded] and [ungrounded].", []string{"pve9", "node/pve1"}},
		{"no figures at all", "no figures at all", nil},
	}
	for _, c := range cases {
		got, stripped := e.fileText(c.in, maxNoteRunes)
		if got.String() != c.out || !slices.Equal(stripped, c.stripped) {
			t.Errorf("%q:\n got  %q %q\n want %q %q", c.in, got, stripped, c.out, c.stripped)
		}
	}
}

// TestFileTextGroundsWhatItStores: a figure the fold makes plain
// (fullwidth, another script, behind a zero-width or no-break space) is
// grounded as the figure it is stored as.
func TestFileTextGroundsWhatItStores(t *testing.T) {
	e := groundEnv(groundEvidence)
	for in, want := range map[string]string{
		"Usage fell to \uff11\uff12%.":   "Usage fell to [ungrounded]%.",
		"Usage fell to \u0661\u0662%.":   "Usage fell to [ungrounded]%.",
		"Usage fell to\u200b12%.":        "Usage fell to[ungrounded]%.",
		"Usage at\u00a096.3%, fine.":     "Usage at 96.3%, fine.",
		"Usage is \uff19\uff16.\uff13%.": "Usage is 96.3%.",
	} {
		if got, _ := e.fileText(in, maxNoteRunes); got.String() != want {
			t.Errorf("fileText(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestFileTextRecordsWhatToolsShowed: the env's read tools feed the
// corpus; before any read nothing is grounded.
func TestFileTextRecordsWhatToolsShowed(t *testing.T) {
	e := groundEnv(nil)
	if got, stripped := e.fileText("Usage is 96.3%.", maxNoteRunes); got.String() != "Usage is [ungrounded]%." || !slices.Equal(stripped, []string{"96.3"}) {
		t.Fatalf("before any read: %q %q", got, stripped)
	}
	h := ground.Recorded(e.corpus, func(context.Context, json.RawMessage) (any, error) {
		return map[string]any{"resource_id": "storage/pve1/local-zfs", "key": "high_disk", "value": 96.3}, nil
	})
	if _, err := h(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if got, stripped := e.fileText("Usage is 96.3%.", maxNoteRunes); got.String() != "Usage is 96.3%." || stripped != nil {
		t.Fatalf("after the read: %q %q", got, stripped)
	}
}

// FuzzFileText: grounding never panics, is stable (filing its own output
// strips nothing more), and keeps every marker.
func FuzzFileText(f *testing.F) {
	for _, s := range []string{"usage 96.3% on storage/pve1/local-zfs", "12 of 13 vm/101 a/b/c", "", "-1.5e3 0x10 1,2,3", "ünïcode 7/8", "node pve1 at 06:00"} {
		f.Add(s)
	}
	e := groundEnv(groundEvidence)
	f.Fuzz(func(t *testing.T, text string) {
		out, _ := e.fileText(text, maxNoteRunes)
		again, stripped := e.fileText(out.String(), maxNoteRunes)
		if again != out || len(stripped) != 0 {
			t.Fatalf("not stable: %q -> %q (stripped %q)", out, again, stripped)
		}
		if strings.Count(text, UngroundedMarker) > strings.Count(out.String(), UngroundedMarker) {
			t.Fatalf("markers lost: %q -> %q", text, out)
		}
	})
}
