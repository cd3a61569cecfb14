package assistant

import (
	"slices"
	"strings"
	"testing"
)

func TestGroundNote(t *testing.T) {
	evidence := []string{`{"ok":true,"result":{"condition":"present","resource_id":"storage/pve1/local-zfs","value":96.3,"threshold":95}}`,
		`{"ok":true,"result":{"finding_id":"6b5c62f7a6bf8def","exit_code":0}}`}
	cases := []struct {
		in, out  string
		stripped []string
	}{
		{"Usage is 96.3% on storage/pve1/local-zfs (threshold 95).", "Usage is 96.3% on storage/pve1/local-zfs (threshold 95).", nil},
		{"Usage fell to 12% on storage/pve9/x.", "Usage fell to [ungrounded]% on [ungrounded].", []string{"12", "storage/pve9/x"}},
		{"Finding 6b5c62f7a6bf8def fixed; 0 errors.", "Finding 6b5c62f7a6bf8def fixed; 0 errors.", nil},
		{"Finding deadbeefdeadbeef fixed.", "Finding [ungrounded] fixed.", []string{"deadbeefdeadbeef"}},
		{"96,3 percent", "96,3 percent", nil},
		{"no figures at all", "no figures at all", nil},
	}
	for _, c := range cases {
		got, stripped := groundNote(c.in, evidence)
		if got != c.out || !slices.Equal(stripped, c.stripped) {
			t.Errorf("%q:\n got  %q %q\n want %q %q", c.in, got, stripped, c.out, c.stripped)
		}
	}
}

// TestFileNoteGroundsWhatItStores: a figure the fold makes plain
// (fullwidth, another script, behind a zero-width or no-break space) is
// grounded as the figure it is stored as.
func TestFileNoteGroundsWhatItStores(t *testing.T) {
	evidence := []string{`{"ok":true,"result":{"resource_id":"storage/pve1/local-zfs","value":96.3}}`}
	for in, want := range map[string]string{
		"Usage fell to \uff11\uff12%.":   "Usage fell to [ungrounded]%.",
		"Usage fell to \u0661\u0662%.":   "Usage fell to [ungrounded]%.",
		"Usage fell to\u200b12%.":        "Usage fell to[ungrounded]%.",
		"Usage at\u00a096.3%, fine.":     "Usage at 96.3%, fine.",
		"Usage is \uff19\uff16.\uff13%.": "Usage is 96.3%.",
	} {
		if got, _ := fileNote(in, evidence); got.String() != want {
			t.Errorf("fileNote(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzGroundNote: grounding never panics, is stable (grounding its own
// output strips nothing more), and leaves no figure the evidence lacks.
func FuzzGroundNote(f *testing.F) {
	for _, s := range []string{"usage 96.3% on storage/pve1/local-zfs", "12 of 13 vm/101 a/b/c", "", "-1.5e3 0x10 1,2,3", "ünïcode 7/8"} {
		f.Add(s, `{"value":96.3,"id":"vm/101","n":7}`)
	}
	f.Fuzz(func(t *testing.T, text, evidence string) {
		out, _ := groundNote(text, []string{evidence})
		again, stripped := groundNote(out, []string{evidence})
		if again != out || len(stripped) != 0 {
			t.Fatalf("not stable: %q -> %q (stripped %q)", out, again, stripped)
		}
		if strings.Count(text, UngroundedMarker) > strings.Count(out, UngroundedMarker) {
			t.Fatalf("markers lost: %q -> %q", text, out)
		}
	})
}
