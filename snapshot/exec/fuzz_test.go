package exec

import (
	"testing"
	"time"
)

// FuzzParse: any collector output either is rejected with an error or
// yields a snapshot with a collection time and a source name.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		validDoc,
		`{"version":1,"resources":[]}`,
		`{"version":1,"taken_at":"2026-01-02T03:04:05Z","resources":[{"id":"vm/1","kind":"vm","metrics":{"cpu_percent":101}}]}`,
		`{"version":"1","resources":[]}`,
		`{"version":1,"taken_at":"yesterday","resources":[]}`,
		"", "   \n", "null", `[]`, `{"version":1,"resources":null}`,
	} {
		f.Add([]byte(seed))
	}
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		snap, problems, err := Parse(data, now)
		if err != nil {
			if snap != nil || problems != nil {
				t.Fatalf("error %v returned with a snapshot", err)
			}
			return
		}
		if snap.TakenAt.IsZero() || snap.Source == "" {
			t.Fatalf("snapshot without taken_at or source: %+v", snap)
		}
		seen := map[string]bool{}
		for _, r := range snap.Resources {
			if r.ID == "" || !r.Kind.Valid() || seen[r.ID] {
				t.Fatalf("invalid resource kept: %+v", r)
			}
			seen[r.ID] = true
		}
	})
}
